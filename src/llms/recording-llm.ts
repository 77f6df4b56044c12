import type { Steps } from '../core/steps';
import { ConfigurationError } from '../schema/errors';
import { ModelStatusCode } from '../schema/status';
import type { AsyncBaseLLM, BaseLLM } from './base-llm';
import {
  type CanonicalRequest,
  canonicalRequest,
  copyReply,
  replyOfChunks,
  storeChunks,
} from './llm-request';
import {
  type ChunkSteps,
  type ModelMiddleware,
  type ModelRequest,
  type NextReply,
  type NextStream,
  relayChunks,
} from './model-middleware';
import {
  type RecordedCall,
  type RecordingFile,
  recordedError,
  recordedLine,
  recordingFile,
} from './recording-file';
import type { LLMCallParams, ModelReply, StreamChunk } from './types';
import type { TokenUsage } from './usage';
import { AsyncWrappedLLM, WrappedLLM } from './wrapped-llm';
import { usageDelta, usageOf } from './wrapped-usage';

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

function sessionUsage(llm: unknown, params: LLMCallParams | undefined): TokenUsage | undefined {
  return usageOf(llm)?.getUsage(params?.sessionId ?? 0);
}

/**
 * The recorder as model middleware: each call's request and answer (text, tool calls, streamed chunks, the
 * usage the model counted for it) or the model's failure, as one line of the file when the call ends. Sync
 * models write the line at once; async ones queue it (`flush()` waits for the queue).
 */
class RecordingMiddleware implements ModelMiddleware {
  readonly name = 'recording';
  readonly file: RecordingFile;
  readonly #label: string | undefined;
  readonly #llm: unknown;
  readonly #write: (line: string) => void;

  /** @param synchronous write each line at once (a sync model's), else queue it */
  constructor(owner: string, llm: BaseLLM | AsyncBaseLLM, options: RecordingOptions, synchronous: boolean) {
    if (typeof llm?.chat !== 'function')
      throw new ConfigurationError({ message: `${owner} needs a model to wrap` });
    if (options === null || typeof options !== 'object') {
      throw new ConfigurationError({ message: `${owner} needs { file }: the path of a JSONL file` });
    }
    const file = recordingFile(options.file);
    this.file = file;
    this.#label = options.label;
    this.#llm = llm;
    this.#write = synchronous ? (line) => file.appendSync(line) : (line) => file.append(line);
  }

  *call(request: ModelRequest, next: NextReply): Steps<ModelReply> {
    const recorded = this.#request(request);
    const before = sessionUsage(this.#llm, request.params);
    let reply: ModelReply;
    try {
      reply = yield* next();
    } catch (error) {
      this.#failed(recorded, error, request.params, before);
      throw error;
    }
    this.#record(recorded, { reply: recordedReply(reply), usage: this.#spent(request.params, before) });
    return reply;
  }

  *stream(request: ModelRequest, next: NextStream): ChunkSteps {
    const recorded = this.#request(request);
    const before = sessionUsage(this.#llm, request.params);
    const chunks: StreamChunk[] = [];
    const save = () => {
      const usage = this.#spent(request.params, before);
      this.#record(recorded, { reply: replyOfChunks(chunks), chunks: storeChunks(chunks), usage });
    };
    let saved = false;
    try {
      yield* relayChunks(next(), (chunk) => {
        chunks.push(structuredClone(chunk));
        // Saved before the END chunk is given: a reader may stop once it has it.
        if (chunk.state === ModelStatusCode.END && !saved) {
          saved = true;
          save();
        }
        return undefined;
      });
    } catch (error) {
      if (!saved) this.#failed(recorded, error, request.params, before);
      throw error;
    }
    if (!saved) save();
  }

  /** The request in canonical form, copied now: the caller may change its messages once the call returns. */
  #request(request: ModelRequest): CanonicalRequest {
    return structuredClone(canonicalRequest(request.mode, request.messages, request.params));
  }

  /** The usage the model counted for this call's session since `before`. */
  #spent(params: LLMCallParams | undefined, before: TokenUsage | undefined): TokenUsage | undefined {
    return usageDelta(before, sessionUsage(this.#llm, params));
  }

  #record(request: CanonicalRequest, answer: Omit<RecordedCall, 'request' | 'label'>): void {
    const call: RecordedCall = { request, ...answer };
    if (this.#label !== undefined) call.label = this.#label;
    this.#write(recordedLine(call));
  }

  /** Records a failed call, unless it is not worth replaying (an abort, a failure that is not the model's). */
  #failed(
    request: CanonicalRequest,
    error: unknown,
    params: LLMCallParams | undefined,
    before: TokenUsage | undefined,
  ): void {
    if ((params?.signal as AbortSignal | undefined)?.aborted) return;
    const recorded = recordedError(error);
    if (recorded !== undefined)
      this.#record(request, { error: recorded, usage: this.#spent(params, before) });
  }
}

/** A reply as a recording keeps it: its usage is the line's own (`usage`), not repeated in the reply. */
function recordedReply(reply: ModelReply): ModelReply {
  const copy = copyReply(reply);
  delete copy.usage;
  return copy;
}

/**
 * A synchronous model that passes every call to `llm` and appends the request and the answer (text, tool
 * calls, streamed chunks, usage) or the model's failure (`LLMRequestError`) to a JSONL file, written as each
 * call ends. A `ReplayLLM` answers from the file. A stream left before its end is not recorded.
 *
 * `genParams` is the wrapped model's own object; usage is the wrapped model's.
 */
export class RecordingLLM extends WrappedLLM {
  readonly llm: BaseLLM;
  readonly #recording: RecordingMiddleware;

  constructor(llm: BaseLLM, options: RecordingOptions) {
    const recording = new RecordingMiddleware('RecordingLLM', llm, options, true);
    super(llm, [recording]);
    this.llm = llm;
    this.#recording = recording;
  }

  /** The file's path. */
  get file(): string {
    return this.#recording.file.path;
  }

  /** Every call is written when it ends: nothing to wait for. */
  flush(): void {}
}

/**
 * The async twin of {@link RecordingLLM}: lines are written in the background, in the order calls end;
 * `await flush()` before reading the file (or before the process exits).
 */
export class AsyncRecordingLLM extends AsyncWrappedLLM {
  readonly llm: AsyncBaseLLM;
  readonly #recording: RecordingMiddleware;

  constructor(llm: AsyncBaseLLM, options: RecordingOptions) {
    const recording = new RecordingMiddleware('AsyncRecordingLLM', llm, options, false);
    super(llm, [recording]);
    this.llm = llm;
    this.#recording = recording;
  }

  /** The file's path. */
  get file(): string {
    return this.#recording.file.path;
  }

  /** Resolves when every call that ended so far is written to the file. */
  flush(): Promise<void> {
    return this.#recording.file.flush();
  }
}
