import { connect } from 'node:net';
import { AgentMessage, AgentStatusCode, AsyncStreamingAgent } from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * What `/chat_completion/stream` costs: a long reply's text crosses the wire about once (deltas), and a client
 * that stops reading stops the agent instead of making the server buffer the reply.
 */

const CHUNKS = 1_000;
const CHUNK_CHARS = 64 * 1024;

/** Streams CHUNKS chunks of 64 KiB (each new text, so each crosses whole), counting how many were pulled. */
class Firehose extends AsyncStreamingAgent {
  pulled = 0;
  override async *forward() {
    for (let i = 0; i < CHUNKS; i++) {
      this.pulled++;
      const content = String.fromCharCode(97 + (i % 26)).repeat(CHUNK_CHARS);
      yield new AgentMessage({ sender: this.name, content, streamState: AgentStatusCode.STREAM_ING });
    }
    return new AgentMessage({ sender: this.name, content: 'done' });
  }
}

const started: HTTPAgentServer[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.close({ timeout: 1_000 });
});

describe('HTTPAgentServer: stream backpressure', () => {
  it('a client that stops reading stops the agent; reading again finishes the stream', async () => {
    const agent = new Firehose();
    const server = new HTTPAgentServer({ agent, port: 0, onError: () => undefined });
    await server.listen();
    started.push(server);
    const { port } = new URL(server.url);
    const body = JSON.stringify({ message: ['go'], session_id: 1 });
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    let received = 0;
    let text = '';
    const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
    socket.on('data', (part: Buffer) => {
      received += part.length;
      // Keep only the tail: enough to see the final event.
      text = (text + part.toString('latin1')).slice(-4_096);
    });
    socket.pause();
    socket.write(
      `POST /chat_completion/stream HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    // Wait until the agent stops being pulled (the socket's buffers are full), or has been pulled to its end.
    let last = -1;
    for (let i = 0; i < 40 && agent.pulled !== last; i++) {
      last = agent.pulled;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    const pulledWhileStalled = agent.pulled;
    const bytesTaken = pulledWhileStalled * CHUNK_CHARS;
    // Whatever the kernel's socket buffers take (tens of MB at most on loopback), the server does not pull the
    // agent to the end of a 64 MiB reply while nobody reads.
    expect(pulledWhileStalled).toBeLessThan(CHUNKS / 4);
    expect(received).toBe(0);
    console.info(
      `stalled client: agent pulled ${pulledWhileStalled}/${CHUNKS} chunks (${(bytesTaken / 2 ** 20).toFixed(1)} MiB of ${(CHUNKS * CHUNK_CHARS) / 2 ** 20} MiB)`,
    );
    socket.resume();
    await ended;
    expect(agent.pulled).toBe(CHUNKS);
    expect(received).toBeGreaterThan(CHUNKS * CHUNK_CHARS);
    expect(text).toMatch(/event: message\ndata: \{"content":"done"/);
  }, 30_000);

  it('a 20,000-character reply in 5,000 chunks is about 1 MB on the wire, not the 50 MB of cumulative chunks', async () => {
    const reply = 'x'.repeat(20_000);
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: () => reply, chunkSize: 4 }),
    });
    const server = new HTTPAgentServer({ agent, port: 0 });
    await server.listen();
    started.push(server);
    const response = await fetch(`${server.url}/chat_completion/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['go'] }),
    });
    const bytes = (await response.arrayBuffer()).byteLength;
    console.info(`20,000-character reply in 5,000 chunks: ${(bytes / 1e6).toFixed(2)} MB on the wire`);
    expect(bytes).toBeLessThan(2_000_000);
    // The client puts the text back together.
    const remote = new AsyncHTTPAgentClient({ url: server.url });
    try {
      let chunks = 0;
      let joined = '';
      let last: AgentMessage | undefined;
      for await (const message of remote.stream('go', { sessionId: 2 })) {
        chunks++;
        joined += message.delta ?? '';
        last = message;
      }
      expect(chunks).toBe(5_001);
      expect(joined).toBe(reply);
      expect(last!.content).toBe(reply);
    } finally {
      remote.close();
    }
  });
});
