import { join } from 'node:path';
import { locateBridge } from '../bridge/location';
import { type ClaudeAPIOptions, DEFAULT_CLAUDE_MAX_TOKENS } from './async-claude-api';
import { BridgedLLM } from './bridged-llm';
import type { TokenCountInput } from './token-count';

/**
 * The sync twin of {@link AsyncClaudeAPI}: the same client run in a worker thread behind the sync bridge, so
 * `chat()` returns a string, `generate()` a `ModelReply` and `streamChat()` is a plain generator; it works in
 * `FunctionCallingAgent`. The calling thread blocks while it waits: use it in scripts, sync agents and tests,
 * and `AsyncClaudeAPI` in servers. Errors arrive with their class (`LLMRequestError` with `status` and
 * `attempts`, `ConfigurationError` when `@anthropic-ai/sdk` is not installed, ...).
 *
 * @example
 * const llm = new ClaudeAPI({ model: 'claude-sonnet-4-6' });
 * const agent = new FunctionCallingAgent({ llm, actions: [weather] });
 * agent.call('Weather in Paris?').content;
 */
export class ClaudeAPI extends BridgedLLM {
  constructor(options: ClaudeAPIOptions = {}) {
    super('AsyncClaudeAPI', resolveEnvironment(options), hostModule());
  }

  /**
   * The prompt's tokens as the API counts them (`POST /v1/messages/count_tokens`), blocking until it answers:
   * exact for Claude models, at the cost of a request (see `AsyncClaudeAPI.countTokensExact`).
   */
  countTokensExact(input: TokenCountInput): number {
    return this.callHosted<number>('countTokensExact', [input]);
  }
}

/**
 * The module the worker takes `AsyncClaudeAPI` from: the package's root entry when built; from the TypeScript
 * sources, the `llms` folder's index, which lists it whatever the root entry picks.
 */
function hostModule(): string {
  const location = locateBridge();
  return location.typescript ? join(location.library, '..', 'llms', 'index.ts') : location.library;
}

/** Reads the environment and the defaults on this thread: a worker's `process.env` is a copy made when it started. */
function resolveEnvironment(options: ClaudeAPIOptions): ClaudeAPIOptions {
  const resolved: ClaudeAPIOptions = {
    ...options,
    maxNewTokens: options.maxNewTokens ?? DEFAULT_CLAUDE_MAX_TOKENS,
  };
  const baseURL = options.baseURL ?? process.env.ANTHROPIC_BASE_URL;
  const apiKey = options.apiKey ?? (process.env.ANTHROPIC_API_KEY || undefined);
  if (baseURL !== undefined) resolved.baseURL = baseURL;
  if (apiKey !== undefined) resolved.apiKey = apiKey;
  return resolved;
}
