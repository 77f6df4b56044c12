#!/usr/bin/env node

// The lagent command (package bin): chat, serve, worker, batch.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { errorMessage } from '../utils/text';
import { main } from './program';
import { terminalText } from './terminal-text';

export type { AgentLike, RunOptions } from './agent-like';
export { asMessageAgent, isAgentLike, runAgent } from './agent-like';
export type { AgentFactoryContext, AgentFlags, CommandName, LoadedAgent } from './agent-source';
export { buildAgent, DEFAULT_MODEL, loadAgent, loadAgentModule, parseToolNames, TOOLS } from './agent-source';
export type { BatchOptions, BatchSummary } from './batch';
export { defaultErrorsPath, runBatch } from './batch';
export type { ChatOptions } from './chat';
export { runChat } from './chat';
export { CliError } from './errors';
export { createProgram, main } from './program';

/** Whether this module is the program being run (directly, or through a symlink such as node_modules/.bin/lagent). */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  const url = (import.meta as { url?: string }).url;
  if (script === undefined || typeof url !== 'string' || !url.startsWith('file:')) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(url));
  } catch {
    return false;
  }
}

/**
 * The line the command stops with on a Node.js release older than the package supports (where it would
 * otherwise fail later, in some unrelated way), or undefined on a supported one.
 */
function unsupportedNodeLine(version: string = process.versions.node): string | undefined {
  if (Number(version.split('.')[0]) >= 22) return undefined;
  return `lagent needs Node.js 22 or 24 (this is Node.js ${version}): switch Node (nvm install 22) and run it again.`;
}

if (isEntryPoint()) {
  const unsupported = unsupportedNodeLine();
  if (unsupported !== undefined) {
    process.stderr.write(`${unsupported}\n`);
    process.exit(1);
  }
  main(process.argv).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`lagent: ${terminalText(errorMessage(error))}\n`);
      process.exit(1);
    },
  );
}
