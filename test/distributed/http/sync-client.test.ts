import { Agent, AgentMessage, AgentStatusCode, type ForwardOptions, TimeoutError } from 'lagent-ts';
import { HTTPAgentClient, HTTPAgentError, HTTPAgentServer } from 'lagent-ts/distributed';
import { MockLLM } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Child, serveInChild } from './processes';

/** The sync client blocks its thread, so its servers run in child processes (fixtures/serve-agent.ts). */
describe('HTTPAgentClient (sync, through the bridge)', () => {
  let plain: Child & { url: string };
  let streaming: Child & { url: string };
  let guarded: Child & { url: string };
  let slow: Child & { url: string };

  beforeAll(async () => {
    [plain, streaming, guarded, slow] = await Promise.all([
      serveInChild(['--kind', 'async']),
      serveInChild(['--kind', 'stream']),
      serveInChild(['--kind', 'sync', '--token', 'tok']),
      serveInChild(['--kind', 'async', '--delay', '3000']),
    ]);
  }, 30_000);
  afterAll(async () => {
    await Promise.all([plain?.stop(), streaming?.stop(), guarded?.stop(), slow?.stop()]);
  });

  it('calls, streams and reads memory', () => {
    const remote = new HTTPAgentClient({ url: plain.url });
    try {
      const reply = remote.call('hello', { sessionId: 1 });
      expect(reply).toBeInstanceOf(AgentMessage);
      expect(reply.content).toBe('echo: hello');
      expect(reply.sender).toBe('remote');
      expect(remote.stateDict(1).memory!.map((m) => m.content)).toEqual(['hello', 'echo: hello']);
      expect(remote.stateDict(2)).toEqual({ memory: [] });
      const error = (() => {
        try {
          remote.call('fail please', { sessionId: 1 });
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(HTTPAgentError);
      expect(error).toMatchObject({ status: 500, body: { detail: 'Internal Server Error', error: 'Error' } });
      expect(remote.stateDict(1).memory).toHaveLength(2);
    } finally {
      remote.close();
    }

    const streamer = new HTTPAgentClient({ url: streaming.url });
    try {
      const chunks = [...streamer.stream('abcdefgh', { sessionId: 3 })];
      expect(chunks.at(-1)!.content).toBe('echo: abcdefgh');
      expect(chunks.at(-1)!.streamState).toBe(AgentStatusCode.END);
      expect(chunks.slice(0, -1).every((chunk) => chunk.streamState === AgentStatusCode.STREAM_ING)).toBe(
        true,
      );
      expect(chunks.map((chunk) => chunk.delta).join('')).toBe('echo: abcdefgh');
      expect(streamer.stateDict(3).memory).toHaveLength(2);
    } finally {
      streamer.close();
    }
  });

  it('is a sub-agent of a sync composite, with a token', () => {
    class Composite extends Agent {
      readonly helper = new HTTPAgentClient({ url: guarded.url, token: 'tok' });
      override forward(messages: AgentMessage[], options: ForwardOptions) {
        const answer = this.helper.call(messages, { sessionId: options.sessionId });
        return new AgentMessage({ sender: this.name, content: `helper: ${answer.content}` });
      }
    }
    const composite = new Composite({ llm: new MockLLM({ responses: ['unused'] }) });
    try {
      expect(composite.call('job', { sessionId: 'x' }).content).toBe('helper: echo: job');
      expect(composite.helper.stateDict('x').memory!.map((m) => m.content)).toEqual(['job', 'echo: job']);
      const outsider = new HTTPAgentClient({ url: guarded.url });
      try {
        expect(() => outsider.call('no token')).toThrow(expect.objectContaining({ status: 401 }));
        expect(outsider.isAlive()).toBe(true);
      } finally {
        outsider.close();
      }
    } finally {
      composite.helper.close();
    }
  });

  it('has deadlines; an aborted signal is refused before the call; a dead server is an HTTPAgentError', () => {
    const remote = new HTTPAgentClient({ url: slow.url, timeout: 200 });
    try {
      // The server answers after 3 s: a timeout not honoured would get that answer instead of the error.
      expect(() => remote.call('late', { sessionId: 1 })).toThrow(TimeoutError);
      expect(() => [...remote.stream('late', { sessionId: 1 })]).toThrow(TimeoutError);
      // The server's call was stopped when the client left: the session stays empty.
      const pause = new Int32Array(new SharedArrayBuffer(4));
      let memory = remote.stateDict(1, { timeout: 5_000 });
      for (let i = 0; i < 40 && memory.memory!.length > 0; i++) {
        Atomics.wait(pause, 0, 0, 50);
        memory = remote.stateDict(1, { timeout: 5_000 });
      }
      expect(memory).toEqual({ memory: [] });
      const aborted = AbortSignal.abort(new Error('stop'));
      expect(() => remote.call('x', { signal: aborted })).toThrow('stop');
    } finally {
      remote.close();
    }
    const dead = new HTTPAgentClient({ url: 'http://127.0.0.1:9', retries: 1, retryDelay: 10 });
    try {
      expect(() => dead.call('x')).toThrow(HTTPAgentError);
      expect(dead.isAlive()).toBe(false);
    } finally {
      dead.close();
    }
  });

  it('a server on the blocked thread cannot answer: the timeout says so', async () => {
    const agent = new Agent({ llm: new MockLLM({ responses: ['x'] }) });
    const server = new HTTPAgentServer({ agent, port: 0 });
    const url = await server.listen();
    const remote = new HTTPAgentClient({ url, timeout: 300, retries: 0 });
    try {
      let error: unknown;
      try {
        remote.call('hi');
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as Error).message).toMatch(/runs on this same thread/);
    } finally {
      remote.close();
      await server.close();
    }
  });
});
