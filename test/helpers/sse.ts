/**
 * A server-sent events client for the tests: opens a stream with fetch and reads its events one at a time
 * (`id`, `event`, `data` as sent), so a test can stop reading at any event, close the connection (a client that
 * leaves), and open another from the last id it saw.
 */

export interface SSEEvent {
  id: string | undefined;
  event: string;
  data: string;
}

export interface SSEStream {
  status: number;
  headers: Headers;
  /** The next event, or undefined once the server ended the stream. */
  next(): Promise<SSEEvent | undefined>;
  /** Every event up to the end of the stream. */
  rest(): Promise<SSEEvent[]>;
  /** Closes the connection (as a client that goes away). */
  close(): void;
}

export async function openSSE(url: string, headers: Record<string, string> = {}): Promise<SSEStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let ended = false;
  const parse = (block: string): SSEEvent | undefined => {
    let id: string | undefined;
    let event = 'message';
    const data: string[] = [];
    let seen = false;
    for (const line of block.split('\n')) {
      if (line.startsWith(':') || line === '') continue;
      seen = true;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    return seen ? { id, event, data: data.join('\n') } : undefined;
  };
  const next = async (): Promise<SSEEvent | undefined> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parse(block);
        if (event !== undefined) return event;
        continue;
      }
      if (ended || reader === undefined) return undefined;
      let chunk: Awaited<ReturnType<NonNullable<typeof reader>['read']>>;
      try {
        chunk = await reader.read();
      } catch {
        ended = true;
        return undefined;
      }
      if (chunk.done) {
        ended = true;
        continue;
      }
      buffer += decoder.decode(chunk.value, { stream: true });
    }
  };
  return {
    status: response.status,
    headers: response.headers,
    next,
    async rest() {
      const all: SSEEvent[] = [];
      for (let event = await next(); event !== undefined; event = await next()) all.push(event);
      return all;
    },
    close() {
      ended = true;
      controller.abort();
    },
  };
}
