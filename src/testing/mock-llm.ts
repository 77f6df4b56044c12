import { AsyncBaseLLM, BaseLLM } from '../llms/base-llm';
import { cutAtStopWords } from '../llms/stop-words';
import type { GenParams, LLMCallParams, ResolvedGenParams, StreamChunk } from '../llms/types';
import type { ChatMessage } from '../schema/chat-message';
import { ConfigurationError, LagentError } from '../schema/errors';
import { ModelStatusCode } from '../schema/status';

/** A scripted reply: a fixed list used in order, or a function of the request. */
export type MockResponses =
  | readonly string[]
  | ((messages: ChatMessage[], params: ResolvedGenParams, callIndex: number) => string);

/** Options of {@link MockLLM}. */
export interface MockLLMOptions extends GenParams {
  responses: MockResponses;
  /** Characters per streamed chunk. @default 8 */
  chunkSize?: number | undefined;
  /** Keep every request in `calls`; turn off for long benchmarks so the mock does not grow. @default true */
  record?: boolean | undefined;
}

/** Options of {@link AsyncMockLLM}. */
export interface AsyncMockLLMOptions extends MockLLMOptions {
  /** Delay before each reply, in ms; honours `signal`. @default 0 */
  latencyMs?: number | undefined;
}

/** One recorded request. */
export interface MockCall {
  messages: ChatMessage[];
  params: ResolvedGenParams;
}

/** Thrown when a scripted mock is called more often than it has replies, or `assertComplete` finds unused ones. */
export class MockScriptError extends LagentError {
  override readonly name: string = 'MockScriptError';
}

/** The scripting shared by both mocks. */
class Script {
  readonly calls: MockCall[] = [];
  readonly #responses: MockResponses;
  readonly chunkSize: number;
  readonly #record: boolean;
  #count = 0;

  constructor(owner: string, options: MockLLMOptions) {
    const { responses, chunkSize = 8, record = true } = options;
    if (typeof responses !== 'function' && !Array.isArray(responses)) {
      throw new ConfigurationError({ message: `${owner} needs responses: a list of strings or a function` });
    }
    if (!(Number.isInteger(chunkSize) && chunkSize > 0)) {
      throw new ConfigurationError({
        message: `${owner} chunkSize must be a positive integer, got ${chunkSize}`,
      });
    }
    this.#responses = responses;
    this.chunkSize = chunkSize;
    this.#record = record;
  }

  next(owner: string, messages: ChatMessage[], params: ResolvedGenParams): string {
    const index = this.#count++;
    if (this.#record) this.calls.push({ messages, params });
    const responses = this.#responses;
    let text: unknown;
    if (typeof responses === 'function') text = responses(messages, params, index);
    else {
      if (index >= responses.length) {
        throw new MockScriptError({
          message: `${owner} ran out of scripted responses: call #${index + 1}, but only ${responses.length} were given`,
        });
      }
      text = responses[index];
    }
    if (typeof text !== 'string') {
      throw new MockScriptError({
        message: `${owner} response #${index + 1} is not a string (got ${typeof text})`,
      });
    }
    return cutAtStopWords(text, params.stopWords);
  }

  *chunks(text: string): Generator<StreamChunk> {
    for (let end = this.chunkSize; end - this.chunkSize < text.length; end += this.chunkSize) {
      const delta = text.slice(end - this.chunkSize, end);
      yield { state: ModelStatusCode.STREAM_ING, content: text.slice(0, Math.min(end, text.length)), delta };
    }
    yield { state: ModelStatusCode.END, content: text, delta: '' };
  }

  assertComplete(owner: string): void {
    const responses = this.#responses;
    if (typeof responses !== 'function' && this.#count < responses.length) {
      throw new MockScriptError({
        message: `${owner} used ${this.#count} of ${responses.length} scripted responses`,
      });
    }
  }
}

/**
 * A scripted synchronous model for unit tests: replies from a list (in order) or a function, records
 * every request in `calls`, cuts replies at stop words like a real server, and streams in chunks.
 *
 * @example
 * const llm = new MockLLM({ responses: ['Hello!'] });
 * new Agent({ llm }).call('hi').content; // 'Hello!'
 * llm.calls[0].messages; // [{ role: 'user', content: 'hi' }]
 * llm.assertComplete();
 */
export class MockLLM extends BaseLLM {
  readonly #script: Script;

  constructor(options: MockLLMOptions) {
    super(options);
    this.#script = new Script('MockLLM', options);
  }

  /** Every request so far, in order. */
  get calls(): MockCall[] {
    return this.#script.calls;
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): string {
    return this.#script.next('MockLLM', messages, this.resolveParams(params));
  }

  override *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): Generator<StreamChunk, void, undefined> {
    yield* this.#script.chunks(this.chat(messages, params));
  }

  /** Throws a {@link MockScriptError} when scripted responses were left unused. */
  assertComplete(): void {
    this.#script.assertComplete('MockLLM');
  }
}

/** The asynchronous twin of {@link MockLLM}, with optional latency that honours `signal`. */
export class AsyncMockLLM extends AsyncBaseLLM {
  readonly latencyMs: number;
  readonly #script: Script;

  constructor(options: AsyncMockLLMOptions) {
    super(options);
    this.#script = new Script('AsyncMockLLM', options);
    this.latencyMs = options.latencyMs ?? 0;
  }

  get calls(): MockCall[] {
    return this.#script.calls;
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    try {
      const text = this.#script.next('AsyncMockLLM', messages, this.resolveParams(params));
      const signal = params?.signal;
      signal?.throwIfAborted();
      return this.latencyMs > 0 ? delay(this.latencyMs, text, signal) : Promise.resolve(text);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  override async *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const text = await this.chat(messages, params);
    for (const chunk of this.#script.chunks(text)) {
      params?.signal?.throwIfAborted();
      yield chunk;
    }
  }

  assertComplete(): void {
    this.#script.assertComplete('AsyncMockLLM');
  }
}

/** Resolves to `value` after `ms`, or rejects with the signal's reason when aborted first. */
function delay<T>(ms: number, value: T, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return new Promise((resolve) => setTimeout(resolve, ms, value));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
