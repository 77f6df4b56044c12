import type { OpenAIResponsesAPIOptions } from './async-openai-responses-api';
import { BridgedLLM } from './bridged-llm';

/**
 * The sync twin of {@link AsyncOpenAIResponsesAPI}: the same client run in a worker thread behind the sync
 * bridge, so `chat()` returns a string, `generate()` a `ModelReply` (reasoning items included) and
 * `streamChat()` is a plain generator. The calling thread blocks while it waits: use the async class in servers.
 *
 * @example
 * const llm = new OpenAIResponsesAPI({ model: 'gpt-5-mini' });
 * new FunctionCallingAgent({ llm, actions: [calculator] }).call('What is 12 * 7?').content;
 */
export class OpenAIResponsesAPI extends BridgedLLM {
  constructor(options: OpenAIResponsesAPIOptions = {}) {
    super('AsyncOpenAIResponsesAPI', resolveEnvironment(options));
  }
}

/** Reads the environment on this thread: a worker's `process.env` is a copy made when it started. */
function resolveEnvironment(options: OpenAIResponsesAPIOptions): OpenAIResponsesAPIOptions {
  const resolved: OpenAIResponsesAPIOptions = { ...options };
  const baseURL = options.baseURL ?? process.env.OPENAI_BASE_URL;
  const apiKey = options.apiKey ?? (process.env.OPENAI_API_KEY || undefined);
  if (baseURL !== undefined) resolved.baseURL = baseURL;
  if (apiKey !== undefined) resolved.apiKey = apiKey;
  return resolved;
}
