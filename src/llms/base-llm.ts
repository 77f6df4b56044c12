import { ModelStatusCode } from '../schema/status';
import { mergeGenParams, normalizeGenParams } from './gen-params';
import type {
  ChatMessage,
  GenParams,
  LLMCallParams,
  ModelReply,
  ResolvedGenParams,
  StreamChunk,
} from './types';

/**
 * A synchronous model: `chat()` returns the reply text. Subclasses implement `chat` (and may override
 * `streamChat`, which by default yields the whole reply as one chunk).
 *
 * `genParams` holds the defaults; changing it (e.g. `llm.genParams.stopWords.push('\n```\n')`) changes later
 * calls, while per-call params override without being stored.
 */
export abstract class BaseLLM {
  readonly genParams: ResolvedGenParams;

  constructor(genParams: GenParams = {}) {
    this.genParams = normalizeGenParams(genParams);
  }

  /** Replies to `messages`; text from the first stop word on is never returned. */
  abstract chat(messages: ChatMessage[], params?: LLMCallParams): string;

  /**
   * The whole reply: text and the tool calls the model asked for (native function calling, with
   * `params.tools`). By default the text of `chat()` and no tool calls; clients of function-calling APIs
   * override it.
   */
  generate(messages: ChatMessage[], params?: LLMCallParams): ModelReply {
    return { content: this.chat(messages, params), toolCalls: [] };
  }

  /** Streams the reply: `STREAM_ING` chunks with cumulative `content`, then one `END` chunk. */
  *streamChat(messages: ChatMessage[], params?: LLMCallParams): Generator<StreamChunk, void, undefined> {
    const content = this.chat(messages, params);
    yield { state: ModelStatusCode.END, content, delta: content };
  }

  /** The defaults with this call's overrides applied (never mutates `genParams`). */
  protected resolveParams(params?: GenParams): ResolvedGenParams {
    return mergeGenParams(this.genParams, params);
  }
}

/**
 * An asynchronous model: `chat()` returns a promise; params also take `sessionId` and `signal`.
 * Use these in servers; they never block the event loop.
 */
export abstract class AsyncBaseLLM {
  readonly genParams: ResolvedGenParams;

  constructor(genParams: GenParams = {}) {
    this.genParams = normalizeGenParams(genParams);
  }

  /** Replies to `messages`; text from the first stop word on is never returned. */
  abstract chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string>;

  /**
   * The whole reply: text and the tool calls the model asked for (native function calling, with
   * `params.tools`). By default the text of `chat()` and no tool calls; clients of function-calling APIs
   * override it.
   */
  async generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    return { content: await this.chat(messages, params), toolCalls: [] };
  }

  /** Streams the reply: `STREAM_ING` chunks with cumulative `content`, then one `END` chunk. */
  async *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const content = await this.chat(messages, params);
    yield { state: ModelStatusCode.END, content, delta: content };
  }

  /** The defaults with this call's overrides applied (never mutates `genParams`). */
  protected resolveParams(params?: GenParams): ResolvedGenParams {
    return mergeGenParams(this.genParams, params);
  }
}
