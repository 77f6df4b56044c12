import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AsyncBaseAction } from '../actions/base-action';
import { AgentBase } from '../agents/agent-base';
import { AsyncAgent } from '../agents/async-agent';
import { AsyncStreamingAgent } from '../agents/async-streaming-agent';
import {
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
} from '../agents/prebuilt/function-calling-agent';
import { AsyncGPTAPI } from '../llms/async-gpt-api';
import { type AgentLike, isAgentLike } from './agent-like';
import { CliError, messageOf } from './errors';

/** The commands that drive an agent. */
export type CommandName = 'chat' | 'serve' | 'worker' | 'batch' | 'eval' | 'ui';

/**
 * What a factory exported by an `--agent` module receives: the command, and whether that command shows
 * streamed chunks (`chat` and `serve` do; `batch` and `worker` want only the final reply).
 */
export interface AgentFactoryContext {
  command: CommandName;
  streaming: boolean;
}

/** The agent flags shared by every command. */
export interface AgentFlags {
  agent?: string | undefined;
  /** A JSON file describing the agent for `createAgent` (`{ "type": "AsyncFunctionCallingAgent", ... }`). */
  config?: string | undefined;
  model?: string | undefined;
  baseUrl?: string | undefined;
  apiKey?: string | undefined;
  tools?: string | undefined;
  system?: string | undefined;
  maxTurn?: number | undefined;
  /** Whether `--model`, `--tools`, ... were given on the command line (they conflict with `--agent`). */
  modelFlagsGiven?: boolean | undefined;
}

/** An agent ready to use, and what to do when the command ends. */
export interface LoadedAgent {
  agent: AgentLike;
  /** Ends what the command started for the agent (interpreter processes, browsers). */
  close(): Promise<void>;
  /**
   * The module's `resourceId` export, for `lagent serve` (HTTPAgentServer's `resourceId`): whose memory a
   * request's call reads, from what the module verified of the request.
   */
  resourceId?: ((request: never) => string | undefined | Promise<string | undefined>) | undefined;
}

const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** The model used when none of `--model`, `LAGENT_MODEL` and `OPENAI_MODEL` says otherwise. */
export const DEFAULT_MODEL = 'gpt-4o-mini';

type ToolFactory = () => Promise<AsyncBaseAction>;

/** The tools `--tools` knows, by name. */
export const TOOLS: Readonly<Record<string, { description: string; create: ToolFactory }>> = {
  python: {
    description: 'an IPython interpreter, one live process per session (AsyncIPythonInteractive)',
    create: async () => new (await import('../tools/python/index')).AsyncIPythonInteractive(),
  },
  browser: {
    description: 'web search (DuckDuckGo) and page reading (AsyncWebBrowser)',
    create: async () => new (await import('../tools/web/index')).AsyncWebBrowser(),
  },
  arxiv: {
    description: 'arXiv article search (AsyncArxivSearch)',
    create: async () => new (await import('../tools/web/index')).AsyncArxivSearch(),
  },
};

/** The names in a `--tools` list; unknown names are a {@link CliError} listing the known ones. */
export function parseToolNames(list: string): string[] {
  const names = list
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !Object.hasOwn(TOOLS, name));
  if (unknown.length > 0) {
    throw new CliError(
      `unknown tool${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => JSON.stringify(name)).join(', ')} in --tools (known: ${Object.keys(TOOLS).join(', ')})`,
    );
  }
  return [...new Set(names)];
}

/** The agent of a command: from `--agent`, from `--config`, or built from the model flags. */
export function loadAgent(flags: AgentFlags, context: AgentFactoryContext): Promise<LoadedAgent> {
  if (flags.agent !== undefined && flags.config !== undefined) {
    throw new CliError('--agent and --config cannot be combined: pass one of them');
  }
  if (flags.config !== undefined) {
    if (flags.modelFlagsGiven) {
      throw new CliError(
        '--config cannot be combined with --model, --base-url, --api-key, --tools or --system: the file says which model and tools',
      );
    }
    return loadAgentConfig(flags.config);
  }
  if (flags.agent !== undefined) {
    if (flags.modelFlagsGiven) {
      throw new CliError(
        '--agent cannot be combined with --model, --base-url, --api-key, --tools or --system',
      );
    }
    return loadAgentModule(flags.agent, context);
  }
  return buildAgent(flags, context);
}

function isClass(value: Function): boolean {
  return /^class[\s{]/.test(Function.prototype.toString.call(value));
}

/**
 * Loads an agent module: its default export is an agent, a function (sync or async) returning one, which gets
 * an {@link AgentFactoryContext}, or an agent class constructed without arguments.
 */
export async function loadAgentModule(path: string, context: AgentFactoryContext): Promise<LoadedAgent> {
  const file = resolve(path);
  if (!existsSync(file)) throw new CliError(`agent module not found: ${path}`);
  let module: { default?: unknown; close?: unknown; resourceId?: unknown };
  try {
    module = (await import(pathToFileURL(file).href)) as {
      default?: unknown;
      close?: unknown;
      resourceId?: unknown;
    };
  } catch (error) {
    const hint =
      /\.[cm]?tsx?$/.test(file) && (error as { code?: unknown }).code === 'ERR_UNKNOWN_FILE_EXTENSION'
        ? " (TypeScript modules load under tsx: NODE_OPTIONS='--import tsx' npx lagent-ts ...)"
        : '';
    throw new CliError(`cannot load agent module ${path}: ${messageOf(error)}${hint}`, { cause: error });
  }
  let agent = module.default;
  if (agent === undefined) {
    throw new CliError(
      `agent module ${path} has no default export (export default an agent, or a function that returns one)`,
    );
  }
  if (typeof agent === 'function') {
    try {
      agent = isClass(agent)
        ? new (agent as new () => unknown)()
        : await (agent as (context: AgentFactoryContext) => unknown)(context);
    } catch (error) {
      throw new CliError(`the agent factory of ${path} failed: ${messageOf(error)}`, { cause: error });
    }
  }
  if (!isAgentLike(agent)) {
    throw new CliError(
      `the default export of ${path} is not an agent (an object with call and stateDict methods), nor a function returning one`,
    );
  }
  // A module may export close(): what it started for its agents (servers, browsers) ends with the command.
  const own = module.close;
  const resourceId = module.resourceId;
  if (resourceId !== undefined && typeof resourceId !== 'function') {
    throw new CliError(
      `the resourceId export of ${path} must be a function of the request (whose memory its calls read)`,
    );
  }
  return {
    agent,
    close: typeof own === 'function' ? async () => void (await (own as () => unknown)()) : async () => {},
    resourceId: resourceId as LoadedAgent['resourceId'],
  };
}

/**
 * Builds the agent a JSON config file describes, with `createAgent`'s rules (class names from the root entry
 * and `lagent-ts/tools`). The command's end closes what the build made (interpreters, browsers).
 */
export async function loadAgentConfig(path: string): Promise<LoadedAgent> {
  const file = resolve(path);
  if (!existsSync(file)) throw new CliError(`agent config not found: ${path}`);
  let config: unknown;
  try {
    config = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new CliError(`cannot read agent config ${path}: ${messageOf(error)}`, { cause: error });
  }
  const { buildFromConfig, closeAll } = await import('../agents/config/create-agent');
  const { value, created } = await buildFromConfig(config).catch((error: unknown) => {
    throw new CliError(`agent config ${path}: ${messageOf(error)}`, { cause: error });
  });
  if (!(value instanceof AgentBase) || !isAgentLike(value)) {
    await closeAll(created);
    throw new CliError(
      `agent config ${path} does not describe an agent: its top-level "type" must name an agent class (e.g. "AsyncFunctionCallingAgent")`,
    );
  }
  return { agent: value, close: () => closeAll(created) };
}

/**
 * Builds the agent of the model flags: an `AsyncGPTAPI` client of `model` at `baseUrl`; with tools, a
 * function-calling agent offering them, else a plain agent. Streaming variants when the command shows chunks.
 */
export async function buildAgent(flags: AgentFlags, context: AgentFactoryContext): Promise<LoadedAgent> {
  const names = flags.tools === undefined ? [] : parseToolNames(flags.tools);
  // Empty environment variables count as unset.
  const apiKey = flags.apiKey ?? (process.env.OPENAI_API_KEY || undefined);
  const baseURL = flags.baseUrl ?? (process.env.OPENAI_BASE_URL || undefined);
  if (apiKey === undefined && baseURL === undefined) {
    throw new CliError(
      'no API key: pass --api-key or set OPENAI_API_KEY (for a local OpenAI-compatible server, pass --base-url), or use --agent',
    );
  }
  const llm = new AsyncGPTAPI({
    model: flags.model ?? (process.env.OPENAI_MODEL || undefined) ?? DEFAULT_MODEL,
    apiKey,
    baseURL: baseURL ?? OPENAI_BASE_URL,
  });
  const template = flags.system;
  if (names.length === 0) {
    const options = { llm, template, name: 'assistant' };
    const agent = context.streaming ? new AsyncStreamingAgent(options) : new AsyncAgent(options);
    return { agent, close: async () => {} };
  }
  const actions: AsyncBaseAction[] = [];
  const close = async () => {
    for (const action of actions) {
      try {
        await (action as { close?: () => unknown }).close?.();
      } catch {
        // ending a tool's processes is best effort when the command ends
      }
    }
  };
  try {
    for (const name of names) actions.push(await TOOLS[name]!.create());
  } catch (error) {
    await close();
    throw error;
  }
  const options = { llm, actions, template, maxTurn: flags.maxTurn, name: 'assistant' };
  const agent = context.streaming
    ? new AsyncStreamingFunctionCallingAgent(options)
    : new AsyncFunctionCallingAgent(options);
  return { agent, close };
}
