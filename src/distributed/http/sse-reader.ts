import type http from 'node:http';
import { TimeoutError } from '../../schema/errors';
import { HTTPAgentError } from './errors';

/** One server-sent event, its `data` parsed as JSON. */
export interface ServerEvent {
  event: string;
  data: unknown;
}

/** Limits of {@link readEvents}. */
export interface ReadEventsOptions {
  /** The request's URL, for errors. */
  url: string;
  /** Stops the reading (the response is destroyed, the reason thrown). */
  signal: AbortSignal;
  /** Largest event, in bytes of its lines; a larger one fails the stream. */
  maxEventBytes: number;
  /** Milliseconds to wait for the first event. */
  firstEventTimeout: number;
  /** Milliseconds to wait for each later event. */
  idleTimeout: number;
}

/**
 * Splits server-sent event text into events, as the EventSource spec reads it: lines end in CRLF, LF or CR;
 * a blank line ends an event; `data` lines are joined with newlines; `:` lines are comments. An event that
 * grows past `maxEventBytes` before its blank line is an {@link HTTPAgentError}, so a server that never ends
 * an event cannot grow the buffer without bound.
 */
export class SSEParser {
  readonly #maxEventBytes: number;
  readonly #url: string;
  /** The line read so far. */
  #line = '';
  /** The previous text ended in CR: a LF that starts the next one belongs to it. */
  #afterCR = false;
  #event = '';
  #data: string[] = [];
  /** Bytes of the event read so far. */
  #bytes = 0;
  /** Whether a line of the current event was seen (comments included). */
  #seen = false;

  constructor(maxEventBytes: number, url: string) {
    this.#maxEventBytes = maxEventBytes;
    this.#url = url;
  }

  /** Feeds text; returns the events it completed (an event with only comments comes back as `undefined` data). */
  push(text: string): { event: string; data: string | undefined }[] {
    const events: { event: string; data: string | undefined }[] = [];
    let start = 0;
    if (this.#afterCR && text.startsWith('\n')) start = 1;
    this.#afterCR = false;
    const breaks = /\r\n|\r|\n/g;
    breaks.lastIndex = start;
    for (;;) {
      const found = breaks.exec(text);
      if (found === null) {
        this.#grow(text.slice(start));
        break;
      }
      this.#grow(text.slice(start, found.index));
      start = found.index + found[0].length;
      if (found[0] === '\r' && start === text.length) this.#afterCR = true;
      const line = this.#line;
      this.#line = '';
      const done = this.#takeLine(line);
      if (done !== null) events.push(done);
    }
    return events;
  }

  #grow(segment: string): void {
    if (segment.length === 0) return;
    this.#bytes += Buffer.byteLength(segment);
    if (this.#bytes > this.#maxEventBytes) {
      throw new HTTPAgentError({
        message: `${this.#url} sent a stream event larger than maxResponseBytes (${this.#maxEventBytes} bytes)`,
        url: this.#url,
      });
    }
    this.#line += segment;
  }

  /** One whole line: a field of the current event, or the blank line that ends it. */
  #takeLine(line: string): { event: string; data: string | undefined } | null {
    if (line.length === 0) {
      if (!this.#seen) return null;
      const event = {
        event: this.#event || 'message',
        data: this.#data.length > 0 ? this.#data.join('\n') : undefined,
      };
      this.#event = '';
      this.#data = [];
      this.#bytes = 0;
      this.#seen = false;
      return event;
    }
    this.#seen = true;
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    return null;
  }
}

/**
 * The server-sent events of a response, each `data` parsed as JSON. The first event must come within
 * `firstEventTimeout` and each later one within `idleTimeout` of the previous (the time the consumer spends on
 * an event is not counted), else a `TimeoutError`. Events without data, such as comment keep-alives, are skipped
 * and do not count: a stream that sends only those times out as a silent one does. Bad JSON, an oversized event
 * or a connection cut mid-stream is an {@link HTTPAgentError}.
 */
export async function* readEvents(
  response: http.IncomingMessage,
  options: ReadEventsOptions,
): AsyncGenerator<ServerEvent> {
  const { url, signal } = options;
  const parser = new SSEParser(options.maxEventBytes, url);
  let timer: NodeJS.Timeout | undefined;
  let timedOut: TimeoutError | undefined;
  const arm = (ms: number, what: string) => {
    clearTimeout(timer);
    if (!Number.isFinite(ms)) return;
    timer = setTimeout(
      () => {
        timedOut = new TimeoutError({ message: `${url}: no ${what} after ${ms} ms`, timeoutMs: ms });
        response.destroy(timedOut);
      },
      Math.max(0, ms),
    );
  };
  response.setEncoding('utf8');
  arm(options.firstEventTimeout, 'stream event');
  const iterator = response[Symbol.asyncIterator]();
  try {
    for (;;) {
      let step: IteratorResult<unknown>;
      try {
        step = await iterator.next();
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (timedOut !== undefined) throw timedOut;
        throw new HTTPAgentError({
          message: `${url}: the stream broke off: ${(error as Error).message}`,
          url,
          cause: error,
        });
      }
      if (step.done) break;
      for (const block of parser.push(step.value as string)) {
        // Only data counts as progress: a server that sends nothing but comments (keep-alives) still times out.
        if (block.data === undefined) continue;
        clearTimeout(timer);
        let data: unknown;
        try {
          data = JSON.parse(block.data);
        } catch (error) {
          throw new HTTPAgentError({
            message: `${url} sent a stream event whose data is not JSON: ${(error as Error).message}`,
            url,
            body: block.data.slice(0, 200),
            cause: error,
          });
        }
        yield { event: block.event, data };
        arm(options.idleTimeout, 'stream event');
      }
    }
  } finally {
    clearTimeout(timer);
  }
  if (signal.aborted) throw signal.reason;
  if (!response.complete) {
    throw new HTTPAgentError({ message: `${url}: the server closed the stream before it was complete`, url });
  }
}
