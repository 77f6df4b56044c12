import { appendFileSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ToolCall } from '../schema/chat-message';
import { ConfigurationError, LLMRequestError } from '../schema/errors';
import { type CanonicalRequest, canonicalJSON, type StoredChunk } from './llm-request';
import type { TokenUsage } from './usage';

/**
 * One line of a recording (JSONL): the request in canonical form and what the model answered, or how it failed.
 * `label` is the recorder's label, when it has one (several models recorded to one file).
 */
export interface RecordedCall {
  label?: string | undefined;
  request: CanonicalRequest;
  /** The answer (absent for a failure). */
  reply?: { content: string; toolCalls: ToolCall[]; finishReason?: string | undefined } | undefined;
  /** The streamed chunks, for a `streamChat()` call. */
  chunks?: StoredChunk[] | undefined;
  /** The tokens the call spent, when the model reported them. */
  usage?: TokenUsage | undefined;
  /** A failed call: the `LLMRequestError`'s fields. */
  error?: { message: string; status?: number | undefined; retryable: boolean; attempts: number } | undefined;
}

/** The line of a recorded call (canonical JSON, so equal calls give equal lines). */
export function recordedLine(call: RecordedCall): string {
  return `${canonicalJSON(call)}\n`;
}

/** The recorded form of a failure, or undefined for one that is not the model's (an abort, a bad argument). */
export function recordedError(error: unknown): RecordedCall['error'] {
  if (!(error instanceof LLMRequestError)) return undefined;
  return {
    message: error.message,
    status: error.status,
    retryable: error.retryable,
    attempts: error.attempts,
  };
}

/**
 * A recording file as this process writes it: synchronous appends, or appends queued and written in order in
 * the background (`flush()` waits for them). Every recorder of one path in a process shares one, so their lines
 * never interleave.
 */
export class RecordingFile {
  readonly path: string;
  #pending: string[] = [];
  #writing: Promise<void> | undefined;
  #failure: unknown;

  constructor(path: string) {
    this.path = path;
  }

  /** Appends a line now (sync recorders). Earlier queued lines are written first. */
  appendSync(line: string): void {
    const queued = this.#pending.join('');
    this.#pending = [];
    appendFileSync(this.path, queued + line);
  }

  /** Queues a line; it is written in the background, in order. */
  append(line: string): void {
    this.#pending.push(line);
    this.#writing ??= this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending.length > 0) {
        const text = this.#pending.join('');
        this.#pending = [];
        await appendFile(this.path, text);
      }
    } catch (error) {
      this.#failure = error;
    } finally {
      this.#writing = undefined;
    }
  }

  /** Resolves when every queued line is written; rejects when a write failed. */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
    if (this.#failure !== undefined) {
      const failure = this.#failure;
      this.#failure = undefined;
      throw new ConfigurationError({
        message: `could not write the recording ${this.path}: ${(failure as Error).message}`,
        cause: failure,
      });
    }
  }
}

const FILES = new Map<string, RecordingFile>();

/** The process's {@link RecordingFile} of `path`. */
export function recordingFile(path: string): RecordingFile {
  if (typeof path !== 'string' || path === '') {
    throw new ConfigurationError({ message: 'a recording needs { file }: the path of a JSONL file' });
  }
  const key = resolve(path);
  let file = FILES.get(key);
  if (file === undefined) {
    file = new RecordingFile(key);
    FILES.set(key, file);
  }
  return file;
}
