import {
  type ChatMessage,
  type LLMCallParams,
  type ModelReply,
  ModelStatusCode,
  type StreamChunk,
} from 'lagent-ts';
import { AsyncMockLLM, type AsyncMockLLMOptions, MockLLM } from 'lagent-ts/testing';
import { prepareTools } from '#src/llms/tool-calls';

/*
 * Scripted models that behave as a provider does about tokens: the answer stops at the request's
 * `maxNewTokens` (finish reason `length`), and each request reports its usage to `onUsage`: the prompt
 * (messages and the tool definitions sent with them) and the answer, counted as `countTokens` counts.
 * What each request spent is kept in `spent`, so a test can sum what the provider would bill.
 */

/** What one request of a capped model used. */
export interface Spent {
  promptTokens: number;
  completionTokens: number;
}

type Count = (input: string | ChatMessage[]) => number;

/** The tokens of the tool definitions a request sends (their JSON, as the request carries them). */
function toolTokens(countTokens: Count, params: LLMCallParams | undefined): number {
  const prepared = prepareTools(params?.tools, 'capped mock');
  return prepared === undefined ? 0 : countTokens(JSON.stringify(prepared.tools));
}

/** `text` cut to at most `max` tokens (of the estimate: 4 bytes a token, ASCII text). */
function cut(countTokens: Count, text: string, max: number): string {
  return countTokens(text) <= max ? text : text.slice(0, Math.max(0, max) * 4);
}

/** The reply as a provider sends it under `max` completion tokens (tool calls included), its usage reported. */
function settle(
  countTokens: Count,
  spent: Spent[],
  messages: ChatMessage[],
  params: LLMCallParams | undefined,
  max: number,
  reply: ModelReply,
): ModelReply {
  const callTokens = reply.toolCalls.length > 0 ? countTokens(JSON.stringify(reply.toolCalls)) : 0;
  const toolCalls = callTokens <= max ? reply.toolCalls : [];
  const content = cut(countTokens, reply.content, max - (toolCalls.length > 0 ? callTokens : 0));
  const promptTokens = countTokens(messages) + toolTokens(countTokens, params);
  const completionTokens = countTokens(content) + (toolCalls.length > 0 ? callTokens : 0);
  spent.push({ promptTokens, completionTokens });
  params?.onUsage?.({ promptTokens, completionTokens, totalTokens: promptTokens + completionTokens });
  const cutShort = content.length < reply.content.length || toolCalls.length < reply.toolCalls.length;
  return { ...reply, content, toolCalls, finishReason: cutShort ? 'length' : reply.finishReason };
}

/** A synchronous {@link MockLLM} that stops at `maxNewTokens` and reports its usage. */
export class CappedMockLLM extends MockLLM {
  readonly spent: Spent[] = [];
  readonly #count: Count = (input) => this.countTokens(input);

  override chat(messages: ChatMessage[], params?: LLMCallParams): string {
    return this.generate(messages, params).content;
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): ModelReply {
    const max = this.resolveParams(params).maxNewTokens;
    return settle(this.#count, this.spent, messages, params, max, super.generate(messages, params));
  }

  override *streamChat(messages: ChatMessage[], params?: LLMCallParams): Generator<StreamChunk> {
    const reply = this.generate(messages, params);
    yield { state: ModelStatusCode.STREAM_ING, content: reply.content, delta: reply.content };
    yield { state: ModelStatusCode.END, content: reply.content, delta: '' };
  }

  /** Tokens billed over every request. */
  total(): number {
    return this.spent.reduce((sum, one) => sum + one.promptTokens + one.completionTokens, 0);
  }
}

/**
 * An {@link AsyncMockLLM} that stops at `maxNewTokens` and reports its usage; `delay(i)` (when given) is
 * awaited before the answer to request `i`, so a test decides when each request ends.
 */
export class AsyncCappedMockLLM extends AsyncMockLLM {
  readonly spent: Spent[] = [];
  readonly #count: Count = (input) => this.countTokens(input);
  readonly #delay: ((index: number) => Promise<void>) | undefined;
  #requests = 0;

  constructor(options: AsyncMockLLMOptions & { delay?: ((index: number) => Promise<void>) | undefined }) {
    super(options);
    this.#delay = options.delay;
  }

  override async chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    return (await this.generate(messages, params)).content;
  }

  override async generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    const index = this.#requests++;
    const max = this.resolveParams(params).maxNewTokens;
    const reply = await super.generate(messages, params);
    if (this.#delay !== undefined) await this.#delay(index);
    params?.signal?.throwIfAborted();
    return settle(this.#count, this.spent, messages, params, max, reply);
  }

  override async *streamChat(messages: ChatMessage[], params?: LLMCallParams): AsyncGenerator<StreamChunk> {
    const reply = await this.generate(messages, params);
    yield { state: ModelStatusCode.STREAM_ING, content: reply.content, delta: reply.content };
    yield { state: ModelStatusCode.END, content: reply.content, delta: '' };
  }

  /** Tokens billed over every request. */
  total(): number {
    return this.spent.reduce((sum, one) => sum + one.promptTokens + one.completionTokens, 0);
  }

  /** Dollars billed over every request at `price` (per million tokens). */
  cost(price: { input: number; output: number }): number {
    return this.spent.reduce(
      (sum, one) => sum + (one.promptTokens * price.input + one.completionTokens * price.output) / 1_000_000,
      0,
    );
  }
}
