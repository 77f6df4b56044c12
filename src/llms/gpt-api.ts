import type { GPTAPIOptions } from './async-gpt-api';
import { BridgedLLM } from './bridged-llm';

/**
 * The sync twin of {@link AsyncGPTAPI}: the same client run in a worker thread behind the sync bridge, so
 * `chat()` returns a string and `streamChat()` is a plain generator. The calling thread blocks while it waits:
 * use it in scripts, sync agents and tests, and `AsyncGPTAPI` in servers. Errors arrive with their class
 * (`LLMRequestError` with `status` and `attempts`, ...). The worker never keeps a script alive.
 *
 * @example
 * const llm = new GPTAPI({ model: 'gpt-4o-mini', stopWords: ['<|im_end|>'] });
 * const agent = new Agent({ llm, template: 'Answer with one of three characters: 典, 孝, 急.' });
 * agent.call('今天天气情况').content;
 */
export class GPTAPI extends BridgedLLM {
  constructor(options: GPTAPIOptions = {}) {
    super('AsyncGPTAPI', resolveEnvironment(options));
  }
}

/** Reads the environment on this thread: a worker's `process.env` is a copy made when it started. */
function resolveEnvironment(options: GPTAPIOptions): GPTAPIOptions {
  const resolved: GPTAPIOptions = { ...options };
  const baseURL = options.baseURL ?? process.env.OPENAI_BASE_URL;
  const apiKey = options.apiKey ?? (process.env.OPENAI_API_KEY || undefined);
  if (baseURL !== undefined) resolved.baseURL = baseURL;
  if (apiKey !== undefined) resolved.apiKey = apiKey;
  return resolved;
}
