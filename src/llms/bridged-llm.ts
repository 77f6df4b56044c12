import { SyncBridge } from '../utils/sync-bridge';
import { BaseLLM } from './base-llm';
import type { OpenAICallParams } from './openai-compatible-llm';
import type { ChatMessage, GenParams, StreamChunk } from './types';
import type { TokenUsage } from './usage';

/** The call params that cross the bridge; everything else an agent passes along is dropped. */
function bridgeParams(call: OpenAICallParams | undefined, resolved: GenParams): Record<string, unknown> {
  const params: Record<string, unknown> = { ...resolved };
  if (call?.sessionId !== undefined) params.sessionId = call.sessionId;
  if (call?.jsonMode !== undefined) params.jsonMode = call.jsonMode;
  if (call?.extraBody !== undefined) params.extraBody = call.extraBody;
  return params;
}

/**
 * The sync twin of an OpenAI-compatible async client: the async class (named by `exportName`) runs in the
 * sync bridge's worker thread and this thread blocks until it answers. The hosted class must offer
 * `chat`, `streamChat`, `describe` and the usage methods, as `OpenAICompatibleLLM` does. `genParams` live on this side and are
 * sent with every call, so `llm.genParams.stopWords.push(...)` works as on any model.
 *
 * The calling thread blocks for the whole request: use the `Async*` class inside servers. An `AbortSignal`
 * cannot fire while the thread is blocked, so `signal` is only checked before the call; use `timeout`.
 */
export abstract class BridgedLLM extends BaseLLM {
  /** The model name sent with every request. */
  readonly model: string;
  /** The server's base URL. */
  readonly baseURL: string;
  readonly #bridge: SyncBridge;

  /**
   * @param exportName the async class to host, exported by `module`
   * @param options its constructor options (structured-cloneable)
   * @param module absolute path or `file:` URL of the module exporting it. @default lagent-ts itself
   */
  protected constructor(exportName: string, options: GenParams & object, module?: string | URL) {
    super(options);
    this.#bridge = new SyncBridge(
      module === undefined ? { exportName, args: [options] } : { exportName, args: [options], module },
    );
    const { model, baseURL } = this.#bridge.call<{ model: string; baseURL: string }>('describe');
    this.model = model;
    this.baseURL = baseURL;
  }

  /** Replies to `messages`, blocking this thread until the server answers. */
  chat(messages: ChatMessage[], params?: OpenAICallParams): string {
    params?.signal?.throwIfAborted();
    return this.#bridge.call<string>('chat', [messages, bridgeParams(params, this.resolveParams(params))]);
  }

  /** Streams the reply; each step blocks until the next chunk arrives. Leaving the loop aborts the request. */
  override *streamChat(
    messages: ChatMessage[],
    params?: OpenAICallParams,
  ): Generator<StreamChunk, void, undefined> {
    params?.signal?.throwIfAborted();
    yield* this.#bridge.iterate<StreamChunk>('streamChat', [
      messages,
      bridgeParams(params, this.resolveParams(params)),
    ]);
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
}
