import { ModelStatusCode } from '../schema/status';
import { mergeGenParams, normalizeGenParams } from './gen-params';
import { countTokens, type TokenCountInput } from './token-count';
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

  /**
   * The tokens of a text, or of chat messages as a prompt to this model (framing, tool calls and tool
   * results included). Exact for OpenAI models (the `model` name's encoding: `o200k_base` for gpt-4o,
   * gpt-4.1, gpt-5 and the o-series, `cl100k_base` for gpt-4 and gpt-3.5) when the optional peer
   * `gpt-tokenizer` is installed; otherwise (Claude, local and unknown models, or no `gpt-tokenizer`) an
   * estimate: `ceil(UTF-8 bytes / 4)` per text plus 3 tokens per message, 1 per `name` and 3 for the reply,
   * as OpenAI's cookbook counts the framing.
   */
  countTokens(input: TokenCountInput): number {
    return countTokens(input, { model: modelNameOf(this) });
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

  /**
   * The tokens of a text, or of chat messages as a prompt to this model (framing, tool calls and tool
   * results included). Exact for OpenAI models (the `model` name's encoding: `o200k_base` for gpt-4o,
   * gpt-4.1, gpt-5 and the o-series, `cl100k_base` for gpt-4 and gpt-3.5) when the optional peer
   * `gpt-tokenizer` is installed; otherwise (Claude, local and unknown models, or no `gpt-tokenizer`) an
   * estimate: `ceil(UTF-8 bytes / 4)` per text plus 3 tokens per message, 1 per `name` and 3 for the reply,
   * as OpenAI's cookbook counts the framing.
   */
  countTokens(input: TokenCountInput): number {
    return countTokens(input, { model: modelNameOf(this) });
  }

  /** The defaults with this call's overrides applied (never mutates `genParams`). */
  protected resolveParams(params?: GenParams): ResolvedGenParams {
    return mergeGenParams(this.genParams, params);
  }
}

/** A model's `model` name, when it has one (API clients do), for choosing its encoding. */
function modelNameOf(llm: object): string | undefined {
  const model = (llm as { model?: unknown }).model;
  return typeof model === 'string' ? model : undefined;
}
