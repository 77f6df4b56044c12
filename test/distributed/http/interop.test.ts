import { AgentMessage, AsyncAgent } from 'lagent-ts';
import {
  AsyncHTTPAgentClient,
  HTTPAgentClient,
  HTTPAgentError,
  HTTPAgentServer,
} from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/processes';
import {
  type Child,
  LAGENT_SCRIPT,
  PYTHON,
  pythonHasLagentDeps,
  runLagentClient,
  startChild,
} from './processes';

/**
 * Interop with Python Lagent's HTTP serving, both directions, with real Python processes: Lagent's
 * `HTTPAgentClient` (requests) against HTTPAgentServer, and lagent-ts's clients against Lagent's FastAPI app
 * (`app.py`) on uvicorn, both reproduced in lagent_http.py.
 */
const available = pythonHasLagentDeps();
if (!available) {
  console.warn(
    `interop.test.ts: SKIPPED — ${PYTHON} cannot import requests, fastapi and uvicorn (Debian: python3-requests python3-fastapi python3-uvicorn)`,
  );
}

const lagentMessage = (content: unknown, sender = 'user', extra: Record<string, unknown> = {}) => ({
  content,
  sender,
  formatted: null,
  extra_info: null,
  type: null,
  receiver: null,
  stream_state: 0,
  ...extra,
});

const echo = (messages: readonly { content: unknown }[]) => {
  const last = String(messages[messages.length - 1]?.content ?? '');
  if (last.includes('fail please')) throw new Error('the mock model was told to fail');
  return `echo: ${last}`;
};

describe.skipIf(!available)('Python Lagent’s HTTPAgentClient against HTTPAgentServer', () => {
  let server: HTTPAgentServer;
  let agent: AsyncAgent;
  let llm: AsyncMockLLM;

  beforeAll(async () => {
    llm = new AsyncMockLLM({ responses: echo });
    agent = new AsyncAgent({ llm, name: 'served' });
    server = new HTTPAgentServer({
      agent,
      port: 0,
      onError: () => undefined,
      // Python's keyword arguments reach the model for the parameters the operator allows.
      callerOptions: { generation: { maxNewTokens: true } },
    });
    await server.listen();
  });
  afterAll(() => server.close());

  it('calls, reads memory, and passes keyword arguments', async () => {
    const result = await runLagentClient(server.url, 'basic');
    expect(result.alive).toBe(true);
    expect(result.types).toEqual(['AgentMessage', 'AgentMessage', 'AgentMessage']);
    expect(result.replies).toEqual([
      lagentMessage('echo: hello', 'served'),
      lagentMessage(expect.stringMatching(/and again$/), 'served'),
      lagentMessage('echo: other session', 'served'),
    ]);
    // What Python read is exactly the served agent's state dict in Lagent's shape.
    expect(result.memory1).toEqual(agent.stateDict(1, { format: 'lagent' }));
    expect(result.memory1).toEqual({
      memory: [
        lagentMessage('hello'),
        lagentMessage('echo: hello', 'served'),
        lagentMessage('and again', 'user', { extra_info: { k: 1 } }),
        lagentMessage(expect.any(String), 'served'),
      ],
    });
    expect((result.memory2 as { memory: unknown[] }).memory).toHaveLength(2);
    expect(result.memory_unknown).toEqual({ memory: [] });
    // Python's max_new_tokens=7 reached the model as maxNewTokens.
    expect(llm.calls.at(-1)!.params).toMatchObject({ maxNewTokens: 7 });
  });

  it('gets the JSON error of a failing agent, and the session is untouched', async () => {
    const result = await runLagentClient(server.url, 'errors');
    expect(result.failing).toEqual({ detail: 'Internal Server Error', error: 'Error' });
    expect(result.memory3).toEqual({ memory: [] });
  });
});

describe.skipIf(!available)('lagent-ts clients against Lagent’s FastAPI server (app.py)', () => {
  let python: Child;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    python = await startChild(PYTHON, [LAGENT_SCRIPT, 'serve', String(port)], /^ready \d+/);
    url = `http://127.0.0.1:${port}`;
  });
  afterAll(() => python?.stop());

  it('AsyncHTTPAgentClient calls, streams (whole replies: Lagent has no stream route) and reads memory', async () => {
    const remote = new AsyncHTTPAgentClient({ url });
    try {
      expect(await remote.isAlive()).toBe(true);
      const first = await remote.call('hi there', { sessionId: 11, maxNewTokens: 5 });
      expect(first).toBeInstanceOf(AgentMessage);
      expect(first.toJSON({ format: 'lagent' })).toEqual(lagentMessage('echo: hi there', 'MockAgent'));
      const second = await remote.call(new AgentMessage({ content: 'more', extraInfo: { k: [1, 2] } }), {
        sessionId: 11,
      });
      expect(second.content).toBe('echo: more');
      const streamed: AgentMessage[] = [];
      for await (const message of remote.stream('streamed', { sessionId: 12 })) streamed.push(message);
      expect(streamed.map((m) => m.content)).toEqual(['echo: streamed']);

      expect(await remote.stateDict(11)).toEqual({
        memory: [
          lagentMessage('hi there'),
          lagentMessage('echo: hi there', 'MockAgent'),
          lagentMessage('more', 'user', { extra_info: { k: [1, 2] } }),
          lagentMessage('echo: more', 'MockAgent'),
        ],
      });
      // The kwargs went in Lagent's snake_case.
      const kwargs = (await (await fetch(`${url}/test/kwargs`)).json()) as unknown[];
      expect(kwargs[0]).toEqual({ max_new_tokens: 5 });

      const failure = await remote.call('fail please', { sessionId: 13 }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(HTTPAgentError);
      expect(failure).toMatchObject({ status: 500, body: { detail: 'Internal Server Error' } });
    } finally {
      remote.close();
    }
  });

  it('the sync HTTPAgentClient works against it from a blocked thread', () => {
    const remote = new HTTPAgentClient({ url, timeout: 10_000 });
    try {
      expect(remote.isAlive()).toBe(true);
      const reply = remote.call(['one', 'two'], { sessionId: 21 });
      expect(reply).toBeInstanceOf(AgentMessage);
      expect(reply.content).toBe('echo: two');
      expect(remote.stateDict(21).memory!.map((m) => m.content)).toEqual(['one', 'two', 'echo: two']);
      expect(() => remote.call('fail please', { sessionId: 22 })).toThrow(HTTPAgentError);
      expect(remote.stateDict(22)).toEqual({ memory: [] });
    } finally {
      remote.close();
    }
  });
});
