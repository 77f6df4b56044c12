import { sameThreadServerHint } from '../bridge/same-thread';
import { SyncBridge } from '../bridge/sync-bridge';
import type { ContentPart } from '../schema/content-parts';
import { LLMRequestError, TimeoutError } from '../schema/errors';
import { type ResponseFormat, strictJSONSchema } from '../schema/response-format';
import { BaseLLM } from './base-llm';
import type { OpenAICallParams, OpenAICompatibleOptions } from './openai-compatible-llm';
import { bridgedCallBudget, resolveTiming } from './timing';
import { toolsAsJSON } from './tool-calls';
import type { ChatMessage, GenParams, ModelReply, RetryNotice, StreamChunk } from './types';
import type { TokenUsage } from './usage';

/** What a budgeted call reads before it: the usage and retries counted on the other side. */
interface Counted {
  usage: TokenUsage;
  retries: number;
}

/** What `onRetry` is told of a retry made on the other side. */
const MADE: RetryNotice = Object.freeze({ made: true });

/** The call params that cross the bridge; everything else an agent passes along is dropped. */
function bridgeParams(call: OpenAICallParams | undefined, resolved: GenParams): Record<string, unknown> {
  const params: Record<string, unknown> = { ...resolved };
  if (call?.sessionId !== undefined) params.sessionId = call.sessionId;
  if (call?.jsonMode !== undefined) params.jsonMode = call.jsonMode;
  if (call?.extraBody !== undefined) params.extraBody = call.extraBody;
  // Actions do not survive a structured clone: send their OpenAI JSON (names as `Name.api`, mapped on the other side).
  if (call?.tools !== undefined) params.tools = toolsAsJSON(call.tools);
  if (call?.toolChoice !== undefined) params.toolChoice = call.toolChoice;
  if (call?.parallelToolCalls !== undefined) params.parallelToolCalls = call.parallelToolCalls;
  // A zod schema does not survive a structured clone either: send its strict JSON Schema.
  if (call?.responseFormat !== undefined) params.responseFormat = plainResponseFormat(call.responseFormat);
  if (call?.cache !== undefined) params.cache = call.cache;
  if (call?.providerOptions !== undefined) params.providerOptions = call.providerOptions;
  return params;
}

/** A response format whose schema is plain JSON (what crosses the bridge). */
function plainResponseFormat(format: ResponseFormat): ResponseFormat {
  const strict = strictJSONSchema(format);
  if (strict === undefined) return { type: 'json' };
  const plain: ResponseFormat = { type: 'json', schema: strict.schema, name: strict.name };
  if (strict.description !== undefined) plain.description = strict.description;
  return plain;
}

/** The messages with their parts' `URL` objects as text (a `URL` does not survive a structured clone). */
function bridgeMessages(messages: ChatMessage[]): ChatMessage[] {
  if (!messages.some((message) => message.parts?.some(hasURLObject))) return messages;
  return messages.map((message) =>
    message.parts?.some(hasURLObject) ? { ...message, parts: message.parts.map(withURLText) } : message,
  );
}

function hasURLObject(part: ContentPart): boolean {
  return (
    (part.type === 'image' && part.image instanceof URL) || (part.type === 'file' && part.data instanceof URL)
  );
}

function withURLText(part: ContentPart): ContentPart {
  if (part.type === 'image' && part.image instanceof URL) return { ...part, image: part.image.href };
  if (part.type === 'file' && part.data instanceof URL) return { ...part, data: part.data.href };
  return part;
}

/** Whether `error` says a request or a bridged call ran out of time. */
function isTimeout(error: unknown): error is Error {
  if (error instanceof TimeoutError) return true;
  if (!(error instanceof LLMRequestError)) return false;
  const cause = error.cause as { name?: unknown } | undefined;
  return (
    cause instanceof TimeoutError ||
    cause?.name === 'APIConnectionTimeoutError' ||
    / timed out/.test(error.message)
  );
}

/**
 * The sync twin of an OpenAI-compatible async client: the async class (named by `exportName`) runs in the
 * sync bridge's worker thread and this thread blocks until it answers. The hosted class must offer
 * `chat`, `generate`, `streamChat`, `describe` and the usage methods, as `OpenAICompatibleLLM` does. `genParams` live on this side and are
 * sent with every call, so `llm.genParams.stopWords.push(...)` works as on any model.
 *
 * The calling thread blocks for the whole request: use the `Async*` class inside servers. An `AbortSignal`
 * cannot fire while the thread is blocked, so `signal` is only checked before the call; use `timeout`.
 * Every call has a deadline, {@link BridgedLLM.callTimeout}: the worst case of the client's own `timeout`,
 * retries and retry waits, plus a margin (none when `timeout` is `Infinity`). Errors name this class
 * (`GPTAPI`, not `AsyncGPTAPI`). A server started on the calling thread can never answer a sync client (the
 * thread is blocked); a timeout against one says so. If the worker dies, the call throws a `SyncBridgeError`
 * and the next call rebuilds the client on a new worker (token usage counted so far is lost).
 */
export abstract class BridgedLLM extends BaseLLM {
  /** The model name sent with every request. */
  readonly model: string;
  /** The server's base URL. */
  readonly baseURL: string;
  /** Milliseconds one call (or one step of a stream) may block this thread; `Infinity` for no deadline. */
  readonly callTimeout: number;
  readonly #bridge: SyncBridge;
  readonly #clientName: string;

  /**
   * @param exportName the async class to host, exported by `module`
   * @param options its constructor options (structured-cloneable)
   * @param module absolute path or `file:` URL of the module exporting it. @default lagent-ts itself
   */
  protected constructor(exportName: string, options: OpenAICompatibleOptions, module?: string | URL) {
    super(options);
    const clientName = options.clientName ?? new.target.name;
    this.#clientName = clientName;
    this.callTimeout = bridgedCallBudget(resolveTiming(options, clientName));
    const args = [{ ...options, clientName }];
    this.#bridge = new SyncBridge(
      module === undefined ? { exportName, args } : { exportName, args, module },
      { timeout: this.callTimeout },
    );
    const { model, baseURL } = this.#bridge.call<{ model: string; baseURL: string }>('describe');
    this.model = model;
    this.baseURL = baseURL;
  }

  /** Replies to `messages`, blocking this thread until the server answers. */
  chat(messages: ChatMessage[], params?: OpenAICallParams): string {
    params?.signal?.throwIfAborted();
    const before = this.#usageBefore(params);
    try {
      const text = this.#bridge.call<string>('chat', [
        bridgeMessages(messages),
        bridgeParams(params, this.resolveParams(params)),
      ]);
      this.#reportUsage(params, before);
      return text;
    } catch (error) {
      throw this.#explain(error);
    }
  }

  /**
   * The whole reply (text and the tool calls the model asked for, `params.tools` offered as OpenAI's
   * `tools`), blocking this thread until the server answers.
   */
  override generate(messages: ChatMessage[], params?: OpenAICallParams): ModelReply {
    params?.signal?.throwIfAborted();
    const before = this.#usageBefore(params);
    try {
      const reply = this.#bridge.call<ModelReply>('generate', [
        bridgeMessages(messages),
        bridgeParams(params, this.resolveParams(params)),
      ]);
      this.#reportUsage(params, before);
      return reply;
    } catch (error) {
      throw this.#explain(error);
    }
  }

  /**
   * Streams the reply; each step blocks until the next chunk arrives, and the `END` chunk carries any tool
   * calls. Leaving the loop aborts the request.
   */
  override *streamChat(
    messages: ChatMessage[],
    params?: OpenAICallParams,
  ): Generator<StreamChunk, void, undefined> {
    params?.signal?.throwIfAborted();
    const before = this.#usageBefore(params);
    try {
      yield* this.#bridge.iterate<StreamChunk>('streamChat', [
        bridgeMessages(messages),
        bridgeParams(params, this.resolveParams(params)),
      ]);
      this.#reportUsage(params, before);
    } catch (error) {
      throw this.#explain(error);
    }
  }

  /** Calls a method of the hosted async client, blocking until it answers (for a subclass's own methods). */
  protected callHosted<T>(method: string, args: unknown[]): T {
    try {
      return this.#bridge.call<T>(method, args);
    } catch (error) {
      throw this.#explain(error);
    }
  }

  /** The usage and retries counted so far, when the call wants its own (`onUsage`: a budgeted call). */
  #usageBefore(params: OpenAICallParams | undefined): Counted | undefined {
    if (params?.onUsage === undefined) return undefined;
    return { usage: this.getTotalUsage(), retries: this.getRetryCount() };
  }

  /**
   * Tells `onRetry` of each retry the call made on the other side (they were sent: a budget counts them after
   * the fact), then gives `onUsage` what the call added to the usage counted there, when it added any.
   */
  #reportUsage(params: OpenAICallParams | undefined, before: Counted | undefined): void {
    if (before === undefined) return;
    const retries = this.getRetryCount() - before.retries;
    for (let retry = 0; retry < retries; retry++) params!.onRetry?.(MADE);
    const after = this.getTotalUsage();
    if (after.totalTokens === before.usage.totalTokens) return;
    params!.onUsage!({
      promptTokens: after.promptTokens - before.usage.promptTokens,
      completionTokens: after.completionTokens - before.usage.completionTokens,
      totalTokens: after.totalTokens - before.usage.totalTokens,
    });
  }

  /** How many retries the client has sent, over all its requests (first attempts not counted). */
  getRetryCount(): number {
    return this.#bridge.call<number>('getRetryCount');
  }

  /** Summed token usage of one session (calls without a `sessionId` count under `0`). */
  getUsage(sessionId: OpenAICallParams['sessionId'] = 0): TokenUsage {
    return this.#bridge.call<TokenUsage>('getUsage', [sessionId]);
  }

  /** Summed token usage of every session. */
  getTotalUsage(): TokenUsage {
    return this.#bridge.call<TokenUsage>('getTotalUsage');
  }

  /** The latest call's token usage, when the server reported it. */
  getLastUsage(): TokenUsage | undefined {
    return this.#bridge.call<TokenUsage | undefined>('getLastUsage');
  }

  /** Forgets one session's usage, or all of it. */
  resetUsage(sessionId?: OpenAICallParams['sessionId']): void {
    this.#bridge.call('resetUsage', sessionId === undefined ? [] : [sessionId]);
  }

  /** Releases the client in the worker; later calls throw. Optional: an unused client is released when collected. */
  close(): void {
    this.#bridge.close();
  }

  /** Adds to a timeout why a server on this very thread cannot answer, and what to do instead. */
  #explain(error: unknown): unknown {
    if (!isTimeout(error)) return error;
    const hint = sameThreadServerHint(this.baseURL, this.#clientName);
    if (hint !== undefined) {
      Object.defineProperty(error, 'message', {
        value: `${error.message}. ${hint}`,
        configurable: true,
        writable: true,
      });
    }
    return error;
  }
}
