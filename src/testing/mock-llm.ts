import { types } from 'node:util';
import { AsyncBaseLLM, BaseLLM } from '../llms/base-llm';
import { cutAtStopWords } from '../llms/stop-words';
import { parseToolArguments, prepareTools, toolCallsError } from '../llms/tool-calls';
import type {
  GenParams,
  LLMCallParams,
  ModelReply,
  ResolvedGenParams,
  StreamChunk,
  ToolChoice,
} from '../llms/types';
import type { ChatMessage, OpenAITool, ToolCall } from '../schema/chat-message';
import { ConfigurationError, LagentError } from '../schema/errors';
import { ModelStatusCode } from '../schema/status';
import { keepShape } from '../utils/keep-shape';
import { Latency } from './latency';

/** One scripted tool call. String arguments are read like a server's (a JSON object is parsed, other text kept). */
export interface MockToolCall {
  /** @default `call_<n>`, numbered across the mock's life from 1 */
  id?: string | undefined;
  /** `Name.api`, or `Name__api` (mapped back to `Name.api` when that toolkit API was offered), or a tool's name. */
  name: string;
  arguments: Record<string, unknown> | string;
}

/** A scripted reply with tool calls (native function calling); a plain string is `{ content: string }`. */
export interface MockReply {
  /** @default '' */
  content?: string | undefined;
  toolCalls?: readonly MockToolCall[] | undefined;
  /**
   * What the model reasoned before answering: the reply's `reasoning`, streamed in `chunkSize` pieces as
   * `reasoningDelta` chunks before the text.
   */
  reasoning?: string | undefined;
}

/** A scripted reply: a fixed list used in order, or a function of the request. */
export type MockResponses =
  | readonly (string | MockReply)[]
  | ((messages: ChatMessage[], params: ResolvedGenParams, callIndex: number) => string | MockReply);

/** Options of {@link MockLLM}. */
export interface MockLLMOptions extends GenParams {
  responses: MockResponses;
  /** Characters per streamed chunk. @default 8 */
  chunkSize?: number | undefined;
  /** Keep every request in `calls`; turn off for long benchmarks so the mock does not grow. @default true */
  record?: boolean | undefined;
  /** A model name, for `countTokens` to count with its encoding (e.g. `'gpt-4o'`). @default undefined (estimated) */
  model?: string | undefined;
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
  /** The tools offered, as OpenAI would receive them (toolkit APIs named `Name__api`); absent when none. */
  tools?: OpenAITool[] | undefined;
  toolChoice?: ToolChoice | undefined;
  parallelToolCalls?: boolean | undefined;
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
  #toolCallCount = 0;

  constructor(owner: string, options: MockLLMOptions) {
    const { responses, chunkSize = 8, record = true } = options;
    if (typeof responses !== 'function' && !Array.isArray(responses)) {
      throw new ConfigurationError({
        message: `${owner} needs responses: a list of replies (strings or { content, toolCalls }) or a function`,
      });
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

  next(
    owner: string,
    messages: ChatMessage[],
    params: ResolvedGenParams,
    call: LLMCallParams | undefined,
  ): ModelReply | string {
    const index = this.#count++;
    const tools = call?.tools === undefined ? undefined : prepareTools(call.tools, owner);
    if (this.#record) {
      const record: MockCall = { messages, params };
      if (tools !== undefined) record.tools = tools.tools;
      if (call?.toolChoice !== undefined) record.toolChoice = call.toolChoice;
      if (call?.parallelToolCalls !== undefined) record.parallelToolCalls = call.parallelToolCalls;
      this.calls.push(record);
    }
    const responses = this.#responses;
    let reply: unknown;
    if (typeof responses === 'function') reply = responses(messages, params, index);
    else {
      if (index >= responses.length) {
        throw new MockScriptError({
          message: `${owner} ran out of scripted responses: call #${index + 1}, but only ${responses.length} were given`,
        });
      }
      reply = responses[index];
    }
    // Plain text stays text (`chat()` needs nothing else; see `replyOf`).
    if (typeof reply === 'string') return cutAtStopWords(reply, params.stopWords);
    const scripted = reply as MockReply | null;
    if (
      scripted === null ||
      typeof scripted !== 'object' ||
      (scripted.content !== undefined && typeof scripted.content !== 'string') ||
      (scripted.toolCalls !== undefined && !Array.isArray(scripted.toolCalls)) ||
      (scripted.reasoning !== undefined && typeof scripted.reasoning !== 'string')
    ) {
      throw new MockScriptError({
        message: `${owner} response #${index + 1} is not a string nor a { content, toolCalls } reply (got ${typeof reply})`,
      });
    }
    const toolCalls = (scripted.toolCalls ?? []).map((scriptedCall): ToolCall => {
      if (typeof scriptedCall?.name !== 'string' || scriptedCall.name.length === 0) {
        throw new MockScriptError({
          message: `${owner} response #${index + 1} has a tool call without a name`,
        });
      }
      const args = scriptedCall.arguments;
      return {
        id: scriptedCall.id ?? `call_${++this.#toolCallCount}`,
        name: tools?.names.get(scriptedCall.name) ?? scriptedCall.name,
        arguments: typeof args === 'string' ? parseToolArguments(args) : cloneArguments(args),
      };
    });
    const answer: ModelReply = {
      content: cutAtStopWords(scripted.content ?? '', params.stopWords),
      toolCalls,
      finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    };
    if (scripted.reasoning !== undefined && scripted.reasoning !== '') answer.reasoning = scripted.reasoning;
    return answer;
  }

  /** What `chat()` returns: the text; a reply that calls tools is refused as a real client refuses it. */
  static text(owner: string, reply: ModelReply | string): string {
    if (typeof reply === 'string') return reply;
    if (reply.toolCalls.length > 0) throw toolCallsError(owner, reply.toolCalls);
    return reply.content;
  }

  /** What `generate()` returns: the reply, text and tool calls. */
  static replyOf(reply: ModelReply | string): ModelReply {
    return typeof reply === 'string' ? { content: reply, toolCalls: [], finishReason: 'stop' } : reply;
  }

  *chunks(reply: ModelReply): Generator<StreamChunk> {
    const reasoning = reply.reasoning;
    if (reasoning !== undefined) {
      for (let start = 0; start < reasoning.length; start += this.chunkSize) {
        const reasoningDelta = reasoning.slice(start, start + this.chunkSize);
        yield { state: ModelStatusCode.STREAM_ING, content: '', delta: '', reasoningDelta };
      }
    }
    const text = reply.content;
    for (let end = this.chunkSize; end - this.chunkSize < text.length; end += this.chunkSize) {
      const delta = text.slice(end - this.chunkSize, end);
      yield { state: ModelStatusCode.STREAM_ING, content: text.slice(0, Math.min(end, text.length)), delta };
    }
    const last: StreamChunk = { state: ModelStatusCode.END, content: text, delta: '' };
    if (reply.toolCalls.length > 0) last.toolCalls = reply.toolCalls;
    if (reasoning !== undefined) last.reasoning = reasoning;
    yield last;
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
 * every request in `calls` (with the tools offered), cuts replies at stop words like a real server, and
 * streams in chunks. A reply may call tools (`{ content?, toolCalls }`): `generate()` returns them, the `END`
 * chunk of `streamChat()` carries them, and `chat()` throws a `ModelOutputError` as a real client does.
 *
 * @example
 * const llm = new MockLLM({ responses: ['Hello!'] });
 * new Agent({ llm }).call('hi').content; // 'Hello!'
 * llm.calls[0].messages; // [{ role: 'user', content: 'hi' }]
 * llm.assertComplete();
 *
 * const caller = new MockLLM({ responses: [{ toolCalls: [{ name: 'Calculator.add', arguments: { a: 1, b: 2 } }] }, 'It is 3.'] });
 * caller.generate(messages, { tools: [calculator] }).toolCalls; // [{ id: 'call_1', name: 'Calculator.add', arguments: { a: 1, b: 2 } }]
 */
export class MockLLM extends BaseLLM {
  /** The model name `countTokens` uses, when one was given. */
  readonly model: string | undefined;
  readonly #script: Script;

  constructor(options: MockLLMOptions) {
    super(options);
    this.model = options.model;
    this.#script = new Script('MockLLM', options);
  }

  /** Every request so far, in order. */
  get calls(): MockCall[] {
    return this.#script.calls;
  }

  /** The scripted reply's text; throws a `ModelOutputError` when it calls tools (use `generate()`). */
  chat(messages: ChatMessage[], params?: LLMCallParams): string {
    return Script.text('MockLLM', this.#script.next('MockLLM', messages, this.resolveParams(params), params));
  }

  /** The scripted reply, text and tool calls. */
  override generate(messages: ChatMessage[], params?: LLMCallParams): ModelReply {
    return Script.replyOf(this.#script.next('MockLLM', messages, this.resolveParams(params), params));
  }

  override *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): Generator<StreamChunk, void, undefined> {
    yield* this.#script.chunks(this.generate(messages, params));
  }

  /** Throws a {@link MockScriptError} when scripted responses were left unused. */
  assertComplete(): void {
    this.#script.assertComplete('MockLLM');
  }
}

/** The asynchronous twin of {@link MockLLM}, with optional latency that honours `signal`. */
export class AsyncMockLLM extends AsyncBaseLLM {
  readonly latencyMs: number;
  /** The model name `countTokens` uses, when one was given. */
  readonly model: string | undefined;
  readonly #script: Script;
  readonly #latency: Latency | undefined;

  constructor(options: AsyncMockLLMOptions) {
    super(options);
    this.model = options.model;
    this.#script = new Script('AsyncMockLLM', options);
    this.latencyMs = options.latencyMs ?? 0;
    this.#latency = this.latencyMs > 0 ? new Latency(this.latencyMs) : undefined;
  }

  get calls(): MockCall[] {
    return this.#script.calls;
  }

  /** The scripted reply's text; rejects with a `ModelOutputError` when it calls tools (use `generate()`). */
  chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    try {
      const text = Script.text(
        'AsyncMockLLM',
        this.#script.next('AsyncMockLLM', messages, this.resolveParams(params), params),
      );
      const signal = params?.signal;
      signal?.throwIfAborted();
      return this.#latency ? this.#latency.wait(text, signal) : Promise.resolve(text);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The scripted reply, text and tool calls, after `latencyMs`. */
  override generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    try {
      const reply = Script.replyOf(
        this.#script.next('AsyncMockLLM', messages, this.resolveParams(params), params),
      );
      const signal = params?.signal;
      signal?.throwIfAborted();
      return this.#latency ? this.#latency.wait(reply, signal) : Promise.resolve(reply);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  override async *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const reply = await this.generate(messages, params);
    for (const chunk of this.#script.chunks(reply)) {
      params?.signal?.throwIfAborted();
      yield chunk;
    }
  }

  assertComplete(): void {
    this.#script.assertComplete('AsyncMockLLM');
  }
}

/**
 * `structuredClone(args)`, with the common case done by hand: a plain object whose values are all
 * primitives that structuredClone copies as they are gets a shallow copy (structuredClone costs about a
 * microsecond per call). Anything else, including a Proxy, goes through structuredClone as before.
 */
function cloneArguments(args: Record<string, unknown>): Record<string, unknown> {
  if (args === null || typeof args !== 'object' || Object.getPrototypeOf(args) !== Object.prototype) {
    return structuredClone(args);
  }
  if (types.isProxy(args)) return structuredClone(args);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(args)) {
    const value = args[key];
    if (
      key === '__proto__' ||
      (value !== null &&
        typeof value !== 'string' &&
        typeof value !== 'number' &&
        typeof value !== 'boolean' &&
        value !== undefined)
    ) {
      return structuredClone(args);
    }
    copy[key] = value;
  }
  return copy;
}

// A test suite makes a mock per test, a benchmark one per round: see keepShape.
keepShape(new MockLLM({ responses: [] }));
keepShape(new AsyncMockLLM({ responses: [], latencyMs: 1 }));
