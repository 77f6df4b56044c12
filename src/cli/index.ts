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

if (isEntryPoint()) {
  main(process.argv).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`lagent: ${terminalText(errorMessage(error))}\n`);
      process.exit(1);
    },
  );
}
