import { randomUUID } from 'node:crypto';
import { ServerResponse } from 'node:http';
import { type BaseEvent, HttpAgent } from '@ag-ui/client';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { AsyncStreamingAgent } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { closeServers, serve } from './fixtures';

/*
 * A run streams its reply from its log: what it logged in a turn (here a model that never waits logs its whole
 * reply in one) is read as one page, and written to the response in writes of up to 16 KiB rather than one per
 * event. Each client still gets every chunk, in order.
 */

afterEach(closeServers);

const CHUNKS = 1_000;
const TEXT = 'abcdefghij'.repeat(CHUNKS / 10);

function writer() {
  return new AsyncStreamingAgent({
    name: 'writer',
    llm: new AsyncMockLLM({ responses: () => TEXT, chunkSize: 1, record: false }),
  });
}

/** Counts the writes of the responses to requests whose path starts with `prefix`, while `run` runs. */
async function countWrites<T>(prefix: string, run: () => Promise<T>): Promise<{ writes: number; value: T }> {
  const original = ServerResponse.prototype.write;
  let writes = 0;
  ServerResponse.prototype.write = function (this: ServerResponse, ...args: unknown[]) {
    if (this.req?.url?.startsWith(prefix)) writes++;
    return (original as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof original;
  try {
    const value = await run();
    return { writes, value };
  } finally {
    ServerResponse.prototype.write = original;
  }
}

describe("a run's log is written a page at a time", () => {
  it('the AI SDK route: a reply of 1,000 chunks in a few writes, read whole by the AI SDK', async () => {
    const { url } = await serve({ agent: writer() });
    const { writes, value: text } = await countWrites('/api/chat', async () => {
      const transport = new DefaultChatTransport({ api: `${url}/api/chat` });
      const stream = await transport.sendMessages({
        chatId: 'alice',
        messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] }],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      });
      let deltas = 0;
      const counted = stream.pipeThrough(
        new TransformStream<UIMessageChunk, UIMessageChunk>({
          transform(chunk, controller) {
            if (chunk.type === 'text-delta') deltas++;
            controller.enqueue(chunk);
          },
        }),
      );
      let last: UIMessage | undefined;
      for await (const message of readUIMessageStream({ stream: counted })) last = message;
      expect(deltas).toBe(CHUNKS);
      const part = last?.parts.find((part) => part.type === 'text');
      return part?.type === 'text' ? part.text : undefined;
    });
    expect(text).toBe(TEXT);
    expect(writes).toBeLessThan(CHUNKS / 10);
  });

  it("AG-UI: a reply of 1,000 chunks in a few writes, read whole by @ag-ui/client's HttpAgent", async () => {
    const { url } = await serve({ agent: writer() });
    const { writes, value: events } = await countWrites('/ag-ui', async () => {
      const agent = new HttpAgent({ url: `${url}/ag-ui`, threadId: 'bob' });
      agent.addMessage({ id: randomUUID(), role: 'user', content: 'go' });
      const seen: BaseEvent[] = [];
      await agent.runAgent({}, { onEvent: ({ event }) => void seen.push(event) });
      expect(agent.messages.at(-1)?.content).toBe(TEXT);
      return seen;
    });
    expect(events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT')).toHaveLength(CHUNKS);
    expect(writes).toBeLessThan(CHUNKS / 10);
  });

  it("lagent's run stream: a reply of 1,000 chunks in a few writes, every event once, numbered in order", async () => {
    const { url } = await serve({ agent: writer() });
    const started = await fetch(`${url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['go'], session_id: 'carol' }),
    });
    const { runId } = (await started.json()) as { runId: string };
    const { writes, value: body } = await countWrites('/runs', async () =>
      (await fetch(`${url}/runs/${runId}/stream`)).text(),
    );
    const frames = body.split('\n\n').filter((frame) => frame.startsWith('id: '));
    const ids = frames.map((frame) => Number(/^id: (\d+)/.exec(frame)![1]));
    expect(ids).toEqual(ids.map((_, index) => index + 1));
    const deltas = frames.filter(
      (frame) => frame.includes('\nevent: delta\n') || frame.includes('\nevent: chunk\n'),
    );
    expect(deltas).toHaveLength(CHUNKS);
    const text = deltas
      .map((frame) => (JSON.parse(frame.slice(frame.indexOf('data: ') + 6)) as { content: string }).content)
      .join('');
    expect(text).toBe(TEXT);
    expect(writes).toBeLessThan(CHUNKS / 10);
  });
});
