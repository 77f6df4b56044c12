import type { StreamChunk } from 'lagent-ts';
import { AsyncClaudeAPI } from 'lagent-ts';
import { type FakeAnthropicServer, startFakeAnthropic } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/*
 * Stream shapes found by replaying providers' recorded answers (scripts/replay-ai-sdk-fixtures.ts), written
 * here as events of our own in the same shape.
 */

let server: FakeAnthropicServer;
beforeAll(async () => {
  server = await startFakeAnthropic();
});
afterAll(async () => {
  await server.close();
});

const start = (id: string) => ({
  event: 'message_start',
  data: {
    type: 'message_start',
    message: {
      id,
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'm',
      usage: { input_tokens: 5, output_tokens: 1 },
    },
  },
});
const block = (index: number, content_block: Record<string, unknown>) => ({
  event: 'content_block_start',
  data: { type: 'content_block_start', index, content_block },
});
const delta = (index: number, value: Record<string, unknown>) => ({
  event: 'content_block_delta',
  data: { type: 'content_block_delta', index, delta: value },
});
const stop = (index: number) => ({
  event: 'content_block_stop',
  data: { type: 'content_block_stop', index },
});
const end = (reason: string) => [
  {
    event: 'message_delta',
    data: { type: 'message_delta', delta: { stop_reason: reason }, usage: { output_tokens: 9 } },
  },
  { event: 'message_stop', data: { type: 'message_stop' } },
];

async function stream(events: { event: string; data: unknown }[]): Promise<StreamChunk[]> {
  server.setScript({ events });
  const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: server.url, cache: false, retry: 0 });
  const chunks: StreamChunk[] = [];
  for await (const chunk of llm.streamChat([{ role: 'user', content: 'hi' }])) chunks.push(chunk);
  return chunks;
}

describe('Claude streams as recorded', () => {
  it("does not take a server tool's input (web search) for a call the caller must run", async () => {
    const chunks = await stream([
      start('msg_1'),
      block(0, { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} }),
      delta(0, { type: 'input_json_delta', partial_json: '{"query":"news"}' }),
      stop(0),
      block(1, { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] }),
      stop(1),
      block(2, { type: 'text', text: '' }),
      delta(2, { type: 'text_delta', text: 'Here is the news.' }),
      stop(2),
      ...end('end_turn'),
    ]);
    expect(chunks.at(-1)).toEqual({ state: 0, content: 'Here is the news.', delta: '' });
  });

  it('keeps the second call when a proxy restarts the stream (a new message_start) mid-call', async () => {
    const chunks = await stream([
      start('msg_first'),
      block(0, { type: 'tool_use', id: 'toolu_first', name: 'lookup', input: {} }),
      delta(0, { type: 'input_json_delta', partial_json: '{"q":"par' }),
      start('msg_second'),
      block(0, { type: 'tool_use', id: 'toolu_second', name: 'lookup', input: {} }),
      delta(0, { type: 'input_json_delta', partial_json: '{"q":"paris"}' }),
      stop(0),
      ...end('tool_use'),
    ]);
    expect(chunks.at(-1)?.toolCalls).toEqual([
      { id: 'toolu_second', name: 'lookup', arguments: { q: 'paris' } },
    ]);
  });
});
