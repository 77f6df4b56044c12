import type { ServerResponse } from 'node:http';
import type { Writable } from 'node:stream';
import { AgentMessage } from '../../schema/agent-message';
import { SSE_EVENTS } from './protocol';

/**
 * How `/chat_completion/stream` sends chunks: `'delta'` sends each chunk's new text only (a `delta` event;
 * the whole text of a reply crosses the wire once), `'cumulative'` sends every chunk with all its text so far
 * (a `chunk` event, the shape of Lagent's streaming agents: a reply of n characters in k chunks costs about
 * n·k/2 bytes).
 */
export type StreamContent = 'delta' | 'cumulative';

/**
 * Writes the server-sent events of one stream to a response. Chunks go as `delta` events when they extend the
 * previous chunk's text (in `'delta'` mode), else as whole `chunk` events. Every write says whether the
 * response's buffer is below its high-water mark; {@link drained} waits until it is, so a client that reads
 * slowly slows the agent down instead of making the server buffer its reply.
 */
export class SSEWriter {
  readonly #raw: ServerResponse;
  readonly #mode: StreamContent;
  /** The text of the last chunk sent, when it was text. */
  #previous: string | undefined;

  constructor(raw: ServerResponse, mode: StreamContent) {
    this.#raw = raw;
    this.#mode = mode;
  }

  /** Writes one event; false when the response's buffer is full (wait for {@link drained}). */
  event(event: string, data: unknown): boolean {
    return this.#raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Writes a streamed chunk in this writer's mode; false when the buffer is full. */
  chunk(chunk: unknown): boolean {
    if (!(chunk instanceof AgentMessage)) return this.event(SSE_EVENTS.chunk, chunk);
    const json = chunk.toJSON({ format: 'lagent' });
    const content = chunk.content;
    const delta = this.#mode === 'delta' ? this.#deltaOf(chunk) : undefined;
    this.#previous = typeof content === 'string' ? content : undefined;
    if (delta === undefined) return this.event(SSE_EVENTS.chunk, json);
    return this.event(SSE_EVENTS.delta, { ...json, content: delta });
  }

  /**
   * The text a chunk adds to the previous one, or undefined when it does not extend it. The chunk's own
   * `delta` (set by the agent's stream) is taken when the lengths agree, which costs nothing however long the
   * reply grows; otherwise the texts are compared.
   */
  #deltaOf(chunk: AgentMessage): string | undefined {
    const content = chunk.content;
    const previous = this.#previous;
    if (typeof content !== 'string' || previous === undefined) return undefined;
    const given = chunk.delta;
    if (typeof given === 'string' && content.length === previous.length + given.length) return given;
    return content.startsWith(previous) ? content.slice(previous.length) : undefined;
  }

  readonly #turns = new WriteTurns();

  /** Resolves once the response's buffer has room again, or the connection is gone (see {@link WriteTurns}). */
  drained(): Promise<void> {
    return this.#turns.wait(this.#raw);
  }
}

const RESOLVED = Promise.resolve();

/** How long one stream may keep the event loop before it lets other connections' work run, ms. */
const TURN_MS = 1;

/**
 * Waits between the events of one streamed answer: until the response's buffer has room again (a client that
 * reads slowly slows the stream, not the server's memory), or the connection is gone. A stream whose model
 * never waits (a cached or scripted reply) would otherwise relay on microtasks alone and keep every other
 * connection waiting until its buffer fills: every {@link TURN_MS} ms of such work, it lets the event loop run.
 */
export class WriteTurns {
  #pulls = 0;
  #since = performance.now();

  wait(raw: Writable): Promise<void> {
    return this.pause(raw) ?? RESOLVED;
  }

  /**
   * {@link wait}, or undefined when there is nothing to wait for (most events): a relay that writes many events
   * at once goes on without a step of the event loop's microtasks per event.
   */
  pause(raw: Writable): Promise<void> | undefined {
    if (!raw.writableNeedDrain || raw.destroyed) {
      // The clock is read once every 32 events: a relay's cost stays that of a counter.
      if ((++this.#pulls & 31) !== 0 || performance.now() - this.#since < TURN_MS) return undefined;
      return new Promise((resolve) =>
        setImmediate(() => {
          this.#since = performance.now();
          resolve();
        }),
      );
    }
    return new Promise((resolve) => {
      const done = () => {
        raw.off('drain', done);
        raw.off('close', done);
        this.#since = performance.now();
        resolve();
      };
      raw.once('drain', done);
      raw.once('close', done);
    });
  }
}
