import { AgentStatusCode, AsyncStreamingAgent, ModelStatusCode } from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { comparedCharacters } from '../../helpers/compared-text';

/**
 * `/chat_completion/stream` relays a reply in time linear in its length: no chunk's text is compared whole with
 * the previous chunk's (the work is counted, not timed), and a short call is answered while long streams run.
 */

const started: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close();
});

async function serve(agent: AsyncStreamingAgent): Promise<AsyncHTTPAgentClient> {
  const server = new HTTPAgentServer({ agent, port: 0, onError: () => undefined });
  await server.listen();
  started.push({ close: () => server.close({ timeout: 1_000 }) });
  const client = new AsyncHTTPAgentClient({ url: server.url });
  started.push(client);
  return client;
}

describe('HTTPAgentServer: streaming relay in linear time', () => {
  it('relays 20,000 characters in 4-character chunks without comparing each chunk with the last', async () => {
    const length = 20_000;
    const text = 'abcdefghij'.repeat(length / 10);
    const client = await serve(
      new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: () => text, chunkSize: 4 }) }),
    );
    let joined = '';
    let chunks = 0;
    const compared = await comparedCharacters(async () => {
      for await (const chunk of client.stream('go')) {
        if (chunk.streamState === AgentStatusCode.STREAM_ING) {
          chunks++;
          joined += chunk.delta;
        }
      }
    });
    expect(chunks).toBe(length / 4);
    expect(joined).toBe(text);
    // Comparing each chunk with the previous one would read 50 million characters; the final message is
    // compared with the last chunk a few times (by the agent, the server and the client).
    expect(compared).toBeLessThanOrEqual(4 * length);
  });

  it('answers a short call while five long streams run: it waits behind few of their chunks, each cheap', async () => {
    const LONG_STREAMS = 5;
    const GROWN = 100_000;
    /** Chunks the long streams have produced, in all; they run until `stop`. */
    let emitted = 0;
    let stop = false;
    const llm = new AsyncMockLLM({ responses: () => 'pong' });
    const mockStream = llm.streamChat.bind(llm);
    // The paced source: a long stream starts from 100,000 characters, then adds 4 per chunk, one chunk per turn
    // of the event loop, until the test stops it.
    llm.streamChat = async function* (messages, params) {
      if (messages.at(-1)?.content !== 'long') {
        yield* mockStream(messages, params);
        return;
      }
      let content = 'x'.repeat(GROWN);
      yield { state: ModelStatusCode.STREAM_ING, content, delta: content };
      while (!stop) {
        await new Promise((resolve) => setImmediate(resolve));
        emitted++;
        content += 'abcd';
        yield { state: ModelStatusCode.STREAM_ING, content, delta: 'abcd' };
      }
      yield { state: ModelStatusCode.END, content, delta: '' };
    } as typeof llm.streamChat;
    const client = await serve(new AsyncStreamingAgent({ llm, memory: null }));
    const received = new Array<number>(LONG_STREAMS).fill(0);
    const running = Array.from({ length: LONG_STREAMS }, async (_, index) => {
      for await (const _chunk of client.stream('long', { sessionId: `long-${index}` })) received[index]!++;
    });
    // Every long stream is under way, each chunk's text over 100,000 characters.
    while (received.some((count) => count < 20)) await new Promise((resolve) => setImmediate(resolve));

    const before = emitted;
    let during = 0;
    const compared = await comparedCharacters(async () => {
      const reply = await client.call('ping', { sessionId: 'short' });
      during = emitted - before;
      expect(reply.content).toBe('pong');
    });
    stop = true;
    await Promise.all(running);
    // The call needs a few turns of the event loop; each turn relays one chunk of each long stream.
    expect(during).toBeLessThan(LONG_STREAMS * 100);
    // And relaying those chunks compared no long text: each chunk costs its own few characters.
    expect(compared).toBeLessThan(GROWN);
  });
});
