import type { Deadline } from '../core/deadline';
import type { ToolCall } from '../schema/chat-message';
import { ModelStatusCode } from '../schema/status';
import { AsyncBaseLLM } from './base-llm';
import type { ReasoningStream } from './reasoning-stream';
import { COUNT_RETRY, type RetryCounting, toRequestError } from './request-retry';
import { StopWordFilter } from './stop-word-filter';
import { cutAtStopWords } from './stop-words';
import { type RequestTools, ToolCallAssembler } from './tool-calls';
import type { LLMCallParams, ModelReply, StreamChunk } from './types';
import { type TokenUsage, UsageMeter } from './usage';

/** How {@link MeteredLLM.relayStream} reads and reports one opened stream. */
export interface StreamRelay {
  /** The stream, and the attempt that guards it (touched per event, aborted at the end). */
  stream: AsyncIterable<unknown>;
  attempt: Deadline;
  /** The text one event adds; tool-call pieces go to `assembler`, usage wherever the client keeps it. */
  read(event: unknown, assembler: ToolCallAssembler): string;
  /** The usage the events reported, read once the stream ended (or failed, or was left). */
  usage(): TokenUsage | undefined;
  /** The caller's (effective) signal. */
  signal: AbortSignal | undefined;
  stopWords: readonly string[];
  tools: RequestTools | undefined;
  /** The call's params: its session (usage is counted under it) and `onUsage`. */
  call: CallUsageTarget | undefined;
  /** Where the request went, for error messages. */
  where: string;
  /** The client's translation of a failure mid-stream (e.g. an SDK's error to the shared classes). */
  translate?: ((error: unknown) => unknown) | undefined;
  /** Where `read` puts the reasoning it finds: yielded as `reasoningDelta`, whole on the `END` chunk. */
  reasoning?: ReasoningStream | undefined;
}

/** What usage is recorded for: the call's session and its `onUsage`. */
export type CallUsageTarget = Pick<LLMCallParams, 'sessionId' | 'onUsage'>;

/**
 * What the API clients share besides the model interface: token usage per call and per session, as the
 * server reports it, and a short description for logs. Subclasses record each call's usage with
 * {@link recordUsage}.
 */
export abstract class MeteredLLM extends AsyncBaseLLM implements RetryCounting {
  /** The model name sent with every request. */
  abstract readonly model: string;
  /** The server's base URL. */
  abstract readonly baseURL: string;
  readonly #usage = new UsageMeter();
  #retries = 0;

  /** Counts a retry sent (see `withRetries`). */
  [COUNT_RETRY](): void {
    this.#retries++;
  }

  /** How many retries this client has sent, over all its requests (first attempts not counted). */
  getRetryCount(): number {
    return this.#retries;
  }

  /**
   * Counts one call's usage under its session (calls without a `sessionId` count under `0`), and gives it to
   * the call's `onUsage`.
   */
  protected recordUsage(usage: TokenUsage, call: CallUsageTarget | undefined): void {
    this.#usage.record(usage, call);
  }

  /** A finished reply: its usage counted, its text cut at the first stop word. */
  protected reply(
    text: string,
    toolCalls: ToolCall[],
    finishReason: string | undefined,
    usage: TokenUsage | undefined,
    stopWords: readonly string[],
    call: CallUsageTarget | undefined,
  ): ModelReply {
    const reply: ModelReply = { content: cutAtStopWords(text, stopWords), toolCalls };
    if (usage) {
      this.recordUsage(usage, call);
      reply.usage = usage;
    }
    if (finishReason !== undefined) reply.finishReason = finishReason;
    return reply;
  }

  /**
   * Relays an opened stream as `STREAM_ING` chunks with cumulative `content`, then one `END` chunk (with the
   * assembled `toolCalls`). Text from the first stop word on is never yielded; a stream that stalls past the
   * attempt's timeout, fails or is aborted throws; leaving early aborts the request.
   */
  protected async *relayStream(relay: StreamRelay): AsyncGenerator<StreamChunk, void, undefined> {
    const { stream, attempt, signal, where } = relay;
    const filter = new StopWordFilter(relay.stopWords);
    const assembler = new ToolCallAssembler(relay.tools);
    let counted = false;
    const reasoning = relay.reasoning;
    try {
      try {
        for await (const event of stream) {
          attempt.touch();
          const released = filter.push(relay.read(event, assembler));
          if (reasoning !== undefined && reasoning.pending !== '') {
            yield {
              state: ModelStatusCode.STREAM_ING,
              content: filter.text,
              delta: '',
              reasoningDelta: reasoning.take(),
            };
          }
          if (released.length > 0) {
            yield { state: ModelStatusCode.STREAM_ING, content: filter.text, delta: released };
          }
          if (filter.stopped) break;
        }
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const failure = attempt.timedOut ? attempt.signal.reason : (relay.translate?.(error) ?? error);
        throw toRequestError(failure, where, 1);
      }
      // An SDK ends a stream quietly when it is aborted: say why it ended.
      if (signal?.aborted) throw signal.reason;
      if (attempt.timedOut) throw toRequestError(attempt.signal.reason, where, 1);
      const rest = filter.flush();
      if (rest.length > 0) yield { state: ModelStatusCode.STREAM_ING, content: filter.text, delta: rest };
      counted = true;
      const usage = relay.usage();
      if (usage) this.recordUsage(usage, relay.call);
      const end: StreamChunk = { state: ModelStatusCode.END, content: filter.text, delta: '' };
      // Calls cut short by a stop word are incomplete: they are dropped with the rest of the reply.
      if (!assembler.isEmpty && !filter.stopped) end.toolCalls = assembler.finish();
      if (reasoning !== undefined) {
        if (reasoning.text !== '') end.reasoning = reasoning.text;
        if (reasoning.parts !== undefined) end.reasoningParts = reasoning.parts;
      }
      yield end;
    } finally {
      attempt.abort();
      // A stream that failed or was left still used what the server reported so far (Anthropic reports the
      // prompt first): a budget counts it.
      if (!counted) {
        const usage = relay.usage();
        if (usage) this.recordUsage(usage, relay.call);
      }
    }
  }

  /** Summed token usage of one session (calls without a `sessionId` count under `0`). */
  getUsage(sessionId: LLMCallParams['sessionId'] = 0): TokenUsage {
    return this.#usage.getUsage(sessionId);
  }

  /** Summed token usage of every session. */
  getTotalUsage(): TokenUsage {
    return this.#usage.getTotalUsage();
  }

  /** The latest call's token usage, when the server reported it. */
  getLastUsage(): TokenUsage | undefined {
    return this.#usage.getLastUsage();
  }

  /** Forgets one session's usage, or all of it. */
  resetUsage(sessionId?: LLMCallParams['sessionId']): void {
    this.#usage.resetUsage(sessionId);
  }

  /** The model name and server, for logs. */
  describe(): { model: string; baseURL: string } {
    return { model: this.model, baseURL: this.baseURL };
  }
}
