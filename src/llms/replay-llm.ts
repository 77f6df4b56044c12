import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Steps } from '../core/steps';
import { ConfigurationError, LLMRequestError } from '../schema/errors';
import { ModelStatusCode } from '../schema/status';
import {
  answerChunks,
  type CanonicalRequest,
  canonicalJSON,
  canonicalRequest,
  copyReply,
  type RequestMode,
  requestKey,
} from './llm-request';
import type { ChunkSteps, CountingMiddleware, ModelRequest } from './model-middleware';
import type { RecordedCall } from './recording-file';
import { ReplayMissError } from './replay-error';
import type { ChatMessage, GenParams, LLMCallParams, ModelReply, StreamChunk } from './types';
import { UsageMeter } from './usage';
import { AsyncWrappedLLM, WrappedLLM } from './wrapped-llm';

/** Options of {@link ReplayLLM} and {@link AsyncReplayLLM}. */
export interface ReplayOptions {
  /** The JSONL recording (written by `RecordingLLM` / `AsyncRecordingLLM`, or `lagent ... --record`). */
  file: string;
  /** Answer only from the calls recorded with this `label` (several models recorded to one file). */
  label?: string | undefined;
  /** Defaults of `genParams` (they do not take part in matching: only what a call passes does). */
  genParams?: GenParams | undefined;
}

/** The recorded calls of one request, answered in recorded order. */
interface Answers {
  calls: RecordedCall[];
  next: number;
}

/** How much of a request to show in a message. */
const SNIPPET = 80;

/** `text` around `at`, quoted, with `...` where it was cut. */
function around(text: string, at: number): string {
  const start = Math.max(0, at - SNIPPET / 2);
  const end = Math.min(text.length, start + SNIPPET);
  return `${start > 0 ? '...' : ''}${JSON.stringify(text.slice(start, end))}${end < text.length ? '...' : ''}`;
}

function firstDifference(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** Leading messages two requests share. */
function sharedMessages(a: CanonicalRequest, b: CanonicalRequest): number {
  const n = Math.min(a.messages.length, b.messages.length);
  let i = 0;
  while (i < n && canonicalJSON(a.messages[i]) === canonicalJSON(b.messages[i])) i++;
  return i;
}

/** How `asked` differs from `recorded`, in one short sentence. */
function difference(recorded: CanonicalRequest, asked: CanonicalRequest): string {
  const shared = sharedMessages(recorded, asked);
  if (shared < recorded.messages.length || shared < asked.messages.length) {
    const was = recorded.messages[shared];
    const is = asked.messages[shared];
    if (was === undefined) return `it has ${asked.messages.length} messages, the recorded one ${shared}`;
    if (is === undefined) return `it has ${shared} messages, the recorded one ${recorded.messages.length}`;
    const wasText = canonicalJSON(was);
    const isText = canonicalJSON(is);
    const at = firstDifference(wasText, isText);
    return `message ${shared} (${is.role}) differs: recorded ${around(wasText, at)}, got ${around(isText, at)}`;
  }
  const wasParams = canonicalJSON(recorded.params);
  const isParams = canonicalJSON(asked.params);
  if (wasParams !== isParams) return `the params differ: recorded ${wasParams}, got ${isParams}`;
  const wasTools = canonicalJSON(recorded.tools ?? []);
  const isTools = canonicalJSON(asked.tools ?? []);
  if (wasTools !== isTools) {
    const at = firstDifference(wasTools, isTools);
    return `the tools differ: recorded ${around(wasTools, at)}, got ${around(isTools, at)}`;
  }
  const name = (mode: RequestMode) => (mode === 'text' ? 'chat()' : 'generate() or streamChat()');
  return `it was recorded by ${name(recorded.mode)}, asked by ${name(asked.mode)}`;
}

/**
 * A recording loaded for replay: recorded calls by request key, each request's answers in recorded order.
 */
class Replayer {
  readonly file: string;
  readonly #answers = new Map<string, Answers>();
  readonly #requests: CanonicalRequest[] = [];
  /** The recorded usage of the calls answered, counted as the model counted it. */
  readonly usage = new UsageMeter();

  constructor(owner: string, options: ReplayOptions) {
    if (options === null || typeof options !== 'object' || typeof options.file !== 'string') {
      throw new ConfigurationError({ message: `${owner} needs { file }: the path of a recording (JSONL)` });
    }
    this.file = resolve(options.file);
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (error) {
      throw new ConfigurationError({
        message: `${owner}: cannot read the recording ${options.file}: ${(error as Error).message}`,
        cause: error,
      });
    }
    let line = 0;
    for (const raw of text.split('\n')) {
      line++;
      if (raw.trim() === '') continue;
      let call: RecordedCall;
      try {
        call = JSON.parse(raw) as RecordedCall;
      } catch (error) {
        throw new ConfigurationError({
          message: `${owner}: line ${line} of ${options.file} is not JSON (${(error as Error).message})`,
        });
      }
      if (
        call === null ||
        typeof call !== 'object' ||
        typeof call.request !== 'object' ||
        call.request === null
      ) {
        throw new ConfigurationError({
          message: `${owner}: line ${line} of ${options.file} is not a recorded call`,
        });
      }
      if (options.label !== undefined && call.label !== options.label) continue;
      const key = requestKey(call.request);
      let answers = this.#answers.get(key);
      if (answers === undefined) {
        answers = { calls: [], next: 0 };
        this.#answers.set(key, answers);
        this.#requests.push(call.request);
      }
      answers.calls.push(call);
    }
  }

  /** The next recorded answer to this request; throws a {@link ReplayMissError} when there is none. */
  take(mode: RequestMode, messages: ChatMessage[], params: LLMCallParams | undefined): RecordedCall {
    const request = canonicalRequest(mode, messages, params);
    const answers = this.#answers.get(requestKey(request));
    if (answers !== undefined && answers.next < answers.calls.length) {
      const call = answers.calls[answers.next++]!;
      if (call.usage !== undefined) this.usage.record(call.usage, params);
      if (call.error !== undefined) throw new LLMRequestError({ ...call.error });
      return call;
    }
    throw this.#miss(request, answers);
  }

  #miss(request: CanonicalRequest, answers: Answers | undefined): ReplayMissError {
    const where = `the recording ${this.file}`;
    if (answers !== undefined) {
      const times = answers.calls.length;
      return new ReplayMissError({
        message: `${where} holds this request ${times} time${times === 1 ? '' : 's'}, and every answer was used`,
        file: this.file,
      });
    }
    const last = request.messages.at(-1);
    const asked =
      last === undefined
        ? 'a request without messages'
        : `a request ending ${around(canonicalJSON(last), 0)}`;
    if (this.#requests.length === 0) {
      return new ReplayMissError({
        message: `${where} holds no calls; ${asked} cannot be answered`,
        file: this.file,
      });
    }
    let closest = this.#requests[0]!;
    let best = -1;
    const same = (a: CanonicalRequest) =>
      (a.mode === request.mode ? 1 : 0) + (canonicalJSON(a.params) === canonicalJSON(request.params) ? 1 : 0);
    for (const candidate of this.#requests) {
      const score = sharedMessages(candidate, request) * 4 + same(candidate);
      if (score > best) {
        best = score;
        closest = candidate;
      }
    }
    const diff = difference(closest, request);
    return new ReplayMissError({
      message: `${where} holds no answer to ${asked} (${this.#requests.length} recorded requests); the closest one: ${diff}`,
      file: this.file,
      closest: diff,
    });
  }
}

function replyOf(call: RecordedCall): ModelReply {
  const reply = copyReply(call.reply ?? { content: '', toolCalls: [] });
  if (call.usage !== undefined) reply.usage = { ...call.usage };
  return reply;
}

function chunksOf(call: RecordedCall): StreamChunk[] {
  return answerChunks({ reply: call.reply ?? { content: '', toolCalls: [] }, chunks: call.chunks });
}

/**
 * The replay as model middleware: it answers every call itself, from the recording (an aborted `signal` fails
 * the call with its reason, before it is answered and between the chunks of a stream).
 */
class ReplayMiddleware implements CountingMiddleware {
  readonly name = 'replay';
  readonly replayer: Replayer;
  readonly usage: UsageMeter;

  constructor(owner: string, options: ReplayOptions) {
    this.replayer = new Replayer(owner, options);
    this.usage = this.replayer.usage;
  }

  // biome-ignore lint/correctness/useYield: steps that never wait (a replay reads memory) are steps all the same
  *call(request: ModelRequest): Steps<ModelReply> {
    checkSignal(request.params);
    return replyOf(this.replayer.take(request.mode, request.messages, request.params));
  }

  *stream(request: ModelRequest): ChunkSteps {
    checkSignal(request.params);
    for (const chunk of chunksOf(this.replayer.take(request.mode, request.messages, request.params))) {
      if (chunk.state !== ModelStatusCode.END) checkSignal(request.params);
      yield chunk;
    }
  }
}

function checkSignal(params: LLMCallParams | undefined): void {
  const signal = params?.signal;
  if (signal?.aborted) throw signal.reason;
}

/**
 * A synchronous model that answers from a recording (`RecordingLLM`'s JSONL): a request is matched exactly
 * (its messages, the answer-shaping params the caller passed, its tools, and whether it was a `chat()`),
 * identical requests get their recorded answers in recorded order, streams come back chunk by chunk, and
 * recorded failures are thrown again. A request not recorded fails with a {@link ReplayMissError} showing how
 * the closest recorded request differs. Usage is the recorded usage.
 */
export class ReplayLLM extends WrappedLLM {
  readonly #replay: ReplayMiddleware;

  constructor(options: ReplayOptions) {
    const replay = new ReplayMiddleware('ReplayLLM', options);
    super(undefined, [replay], options.genParams);
    this.#replay = replay;
  }

  /** The recording's path. */
  get file(): string {
    return this.#replay.replayer.file;
  }
}

/** The async twin of {@link ReplayLLM}. */
export class AsyncReplayLLM extends AsyncWrappedLLM {
  readonly #replay: ReplayMiddleware;

  constructor(options: ReplayOptions) {
    const replay = new ReplayMiddleware('AsyncReplayLLM', options);
    super(undefined, [replay], options.genParams);
    this.#replay = replay;
  }

  /** The recording's path. */
  get file(): string {
    return this.#replay.replayer.file;
  }
}
