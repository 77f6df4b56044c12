import { ConfigurationError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { ModelStatusCode } from '../schema/status';
import { AsyncBaseLLM, BaseLLM } from './base-llm';
import {
  type CanonicalRequest,
  canonicalRequest,
  copyReply,
  type RequestMode,
  replyOfChunks,
  storeChunks,
} from './llm-request';
import {
  type RecordedCall,
  type RecordingFile,
  recordedError,
  recordedLine,
  recordingFile,
} from './recording-file';
import type { ChatMessage, LLMCallParams, ModelReply, ResolvedGenParams, StreamChunk } from './types';
import { emptyUsage, type TokenUsage } from './usage';
import { modelName, usageDelta, usageOf } from './wrapped-usage';

/** Options of {@link RecordingLLM} and {@link AsyncRecordingLLM}. */
export interface RecordingOptions {
  /** The JSONL file every call is appended to (created when missing; an existing recording grows). */
  file: string;
  /**
   * A label written with every call, for several models recorded to one file: a `ReplayLLM` with the same
   * `label` answers only from this model's calls.
   */
  label?: string | undefined;
}

/** What the sync and async recorders share: the file, the label, and how one call becomes a line. */
class Recorder {
  readonly file: RecordingFile;
  readonly label: string | undefined;

  constructor(owner: string, llm: unknown, options: RecordingOptions) {
    if (typeof (llm as { chat?: unknown } | null)?.chat !== 'function') {
      throw new ConfigurationError({ message: `${owner} needs a model to wrap` });
    }
    if (options === null || typeof options !== 'object') {
      throw new ConfigurationError({ message: `${owner} needs { file }: the path of a JSONL file` });
    }
    this.file = recordingFile(options.file);
    this.label = options.label;
  }

  request(mode: RequestMode, messages: ChatMessage[], params: LLMCallParams | undefined): CanonicalRequest {
    // Copied now: the caller may change its messages once the call returns.
    return structuredClone(canonicalRequest(mode, messages, params));
  }

  line(request: CanonicalRequest, answer: Omit<RecordedCall, 'request' | 'label'>): string {
    const call: RecordedCall = { request, ...answer };
    if (this.label !== undefined) call.label = this.label;
    return recordedLine(call);
  }

  /** The line of a failed call, or undefined for a failure not worth replaying (an abort). */
  failure(request: CanonicalRequest, error: unknown, signal: AbortSignal | undefined, usage?: TokenUsage) {
    if (signal?.aborted) return undefined;
    const recorded = recordedError(error);
    return recorded === undefined ? undefined : this.line(request, { error: recorded, usage });
  }
}

function sessionUsage(llm: unknown, params: LLMCallParams | undefined): TokenUsage | undefined {
  return usageOf(llm)?.getUsage(params?.sessionId ?? 0);
}

function signalOf(params: LLMCallParams | undefined): AbortSignal | undefined {
  return params?.signal as AbortSignal | undefined;
}

/**
 * A synchronous model that passes every call to `llm` and appends the request and the answer (text, tool
 * calls, streamed chunks, usage) or the model's failure (`LLMRequestError`) to a JSONL file, written as each
 * call ends. A `ReplayLLM` answers from the file. A stream left before its end is not recorded.
 *
 * `genParams` is the wrapped model's own object; usage is the wrapped model's.
 */
export class RecordingLLM extends BaseLLM {
  readonly llm: BaseLLM;
  readonly #recorder: Recorder;

  constructor(llm: BaseLLM, options: RecordingOptions) {
    super();
    this.#recorder = new Recorder('RecordingLLM', llm, options);
    this.llm = llm;
    (this as { genParams: ResolvedGenParams }).genParams = llm.genParams;
  }

  /** The wrapped model's name (`llm.model`), when it has one: what logs and traces show. */
  get model(): string | undefined {
    return modelName(this.llm);
  }

  /** The file's path. */
  get file(): string {
    return this.#recorder.file.path;
  }

  #call<T>(
    mode: RequestMode,
    messages: ChatMessage[],
    params: LLMCallParams | undefined,
    call: () => T,
    reply: (value: T) => ModelReply,
  ): T {
    const request = this.#recorder.request(mode, messages, params);
    const before = sessionUsage(this.llm, params);
    let value: T;
    try {
      value = call();
    } catch (error) {
      const line = this.#recorder.failure(
        request,
        error,
        signalOf(params),
        usageDelta(before, sessionUsage(this.llm, params)),
      );
      if (line !== undefined) this.#recorder.file.appendSync(line);
      throw error;
    }
    const usage = usageDelta(before, sessionUsage(this.llm, params));
    this.#recorder.file.appendSync(
      this.#recorder.line(request, { reply: recordedReply(reply(value)), usage }),
    );
    return value;
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): string {
    return this.#call(
      'text',
      messages,
      params,
      () => this.llm.chat(messages, params),
      (content) => ({ content, toolCalls: [] }),
    );
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): ModelReply {
    return this.#call(
      'reply',
      messages,
      params,
      () => this.llm.generate(messages, params),
      (reply) => reply,
    );
  }

  override *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): Generator<StreamChunk, void, undefined> {
    const request = this.#recorder.request('reply', messages, params);
    const before = sessionUsage(this.llm, params);
    const chunks: StreamChunk[] = [];
    const save = () => {
      const usage = usageDelta(before, sessionUsage(this.llm, params));
      const answer = { reply: replyOfChunks(chunks), chunks: storeChunks(chunks), usage };
      this.#recorder.file.appendSync(this.#recorder.line(request, answer));
    };
    let saved = false;
    try {
      for (const chunk of this.llm.streamChat(messages, params)) {
        chunks.push(structuredClone(chunk));
        // Saved before the END chunk is yielded: a caller may stop reading once it has it.
        if (chunk.state === ModelStatusCode.END && !saved) {
          saved = true;
          save();
        }
        yield chunk;
      }
    } catch (error) {
      const line = this.#recorder.failure(
        request,
        error,
        signalOf(params),
        usageDelta(before, sessionUsage(this.llm, params)),
      );
      if (line !== undefined && !saved) this.#recorder.file.appendSync(line);
      throw error;
    }
    if (!saved) save();
  }

  /** Every call is written when it ends: nothing to wait for. */
  flush(): void {}

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return usageOf(this.llm)?.getUsage(sessionId) ?? emptyUsage();
  }

  getTotalUsage(): TokenUsage {
    return usageOf(this.llm)?.getTotalUsage() ?? emptyUsage();
  }

  getLastUsage(): TokenUsage | undefined {
    return usageOf(this.llm)?.getLastUsage();
  }

  resetUsage(sessionId?: SessionId): void {
    usageOf(this.llm)?.resetUsage(sessionId);
  }
}

/**
 * The async twin of {@link RecordingLLM}: lines are written in the background, in the order calls end;
 * `await flush()` before reading the file (or before the process exits).
 */
export class AsyncRecordingLLM extends AsyncBaseLLM {
  readonly llm: AsyncBaseLLM;
  readonly #recorder: Recorder;

  constructor(llm: AsyncBaseLLM, options: RecordingOptions) {
    super();
    this.#recorder = new Recorder('AsyncRecordingLLM', llm, options);
    this.llm = llm;
    (this as { genParams: ResolvedGenParams }).genParams = llm.genParams;
  }

  /** The wrapped model's name (`llm.model`), when it has one: what logs and traces show. */
  get model(): string | undefined {
    return modelName(this.llm);
  }

  /** The file's path. */
  get file(): string {
    return this.#recorder.file.path;
  }

  async #call<T>(
    mode: RequestMode,
    messages: ChatMessage[],
    params: LLMCallParams | undefined,
    call: () => Promise<T>,
    reply: (value: T) => ModelReply,
  ): Promise<T> {
    const request = this.#recorder.request(mode, messages, params);
    const before = sessionUsage(this.llm, params);
    let value: T;
    try {
      value = await call();
    } catch (error) {
      const line = this.#recorder.failure(
        request,
        error,
        signalOf(params),
        usageDelta(before, sessionUsage(this.llm, params)),
      );
      if (line !== undefined) this.#recorder.file.append(line);
      throw error;
    }
    const usage = usageDelta(before, sessionUsage(this.llm, params));
    this.#recorder.file.append(this.#recorder.line(request, { reply: recordedReply(reply(value)), usage }));
    return value;
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    return this.#call(
      'text',
      messages,
      params,
      () => this.llm.chat(messages, params),
      (content) => ({ content, toolCalls: [] }),
    );
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    return this.#call(
      'reply',
      messages,
      params,
      () => this.llm.generate(messages, params),
      (reply) => reply,
    );
  }

  override async *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const request = this.#recorder.request('reply', messages, params);
    const before = sessionUsage(this.llm, params);
    const chunks: StreamChunk[] = [];
    const save = () => {
      const usage = usageDelta(before, sessionUsage(this.llm, params));
      const answer = { reply: replyOfChunks(chunks), chunks: storeChunks(chunks), usage };
      this.#recorder.file.append(this.#recorder.line(request, answer));
    };
    let saved = false;
    try {
      for await (const chunk of this.llm.streamChat(messages, params)) {
        chunks.push(structuredClone(chunk));
        // Saved before the END chunk is yielded: a caller may stop reading once it has it.
        if (chunk.state === ModelStatusCode.END && !saved) {
          saved = true;
          save();
        }
        yield chunk;
      }
    } catch (error) {
      const line = this.#recorder.failure(
        request,
        error,
        signalOf(params),
        usageDelta(before, sessionUsage(this.llm, params)),
      );
      if (line !== undefined && !saved) this.#recorder.file.append(line);
      throw error;
    }
    if (!saved) save();
  }

  /** Resolves when every call that ended so far is written to the file. */
  flush(): Promise<void> {
    return this.#recorder.file.flush();
  }

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return usageOf(this.llm)?.getUsage(sessionId) ?? emptyUsage();
  }

  getTotalUsage(): TokenUsage {
    return usageOf(this.llm)?.getTotalUsage() ?? emptyUsage();
  }

  getLastUsage(): TokenUsage | undefined {
    return usageOf(this.llm)?.getLastUsage();
  }

  resetUsage(sessionId?: SessionId): void {
    usageOf(this.llm)?.resetUsage(sessionId);
  }
}

/** A reply as a recording keeps it: its usage is the line's own (`usage`), not repeated in the reply. */
function recordedReply(reply: ModelReply): ModelReply {
  const copy = copyReply(reply);
  delete copy.usage;
  return copy;
}
