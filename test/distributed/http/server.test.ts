import {
  Agent,
  AgentMessage,
  AgentStatusCode,
  AsyncAgent,
  type AsyncForwardOptions,
  AsyncStreamingAgent,
  StreamingAgent,
  TimeoutError,
} from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentError, HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { HeldLLM } from '../../helpers/held';
import { acceptsConnections, freePort } from '../../helpers/processes';

const echo = (messages: readonly { content: unknown }[]) => {
  const last = String(messages[messages.length - 1]?.content ?? '');
  if (last.includes('fail please')) throw new Error('the mock model was told to fail');
  return `echo: ${last}`;
};

const started: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close();
});

async function serve(
  agent: ConstructorParameters<typeof HTTPAgentServer>[0]['agent'],
  options: Partial<ConstructorParameters<typeof HTTPAgentServer>[0]> = {},
): Promise<HTTPAgentServer> {
  const server = new HTTPAgentServer({ agent, port: 0, onError: () => undefined, ...options });
  await server.listen();
  started.push(server);
  return server;
}

function client(url: string, options: Partial<ConstructorParameters<typeof AsyncHTTPAgentClient>[0]> = {}) {
  const remote = new AsyncHTTPAgentClient({ url, ...options });
  started.push(remote);
  return remote;
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

/** A server-sent event stream as `[event, data]` pairs. */
function parseEvents(text: string): [string, unknown][] {
  return text
    .split('\n\n')
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? 'null';
      return [event, JSON.parse(data)];
    });
}

/** An async streaming agent whose chunks come slowly, so a client can leave in the middle. */
class SlowStreamer extends AsyncStreamingAgent {
  override async *forward(messages: AgentMessage[], options: AsyncForwardOptions) {
    let content = '';
    for (const part of ['one ', 'two ', 'three ', 'four']) {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, 60);
        options.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(options.signal?.reason);
        });
      });
      content += part;
      yield new AgentMessage({ sender: this.name, content, streamState: AgentStatusCode.STREAM_ING });
    }
    return new AgentMessage({ sender: this.name, content: `${content} (${messages.length} in)` });
  }
}

describe('HTTPAgentServer: Lagent protocol', () => {
  it('answers /chat_completion with the reply in Lagent shape, and /memory with the state dict', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }), name: 'echoer' });
    const server = await serve(agent);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const health = await fetch(`${server.url}/health_check`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'success', timestamp: expect.any(Number) });

    const response = await fetch(`${server.url}/chat_completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: ['hello', lagentMessage('again', 'tester')],
        session_id: 7,
      }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(lagentMessage(expect.stringMatching(/^echo: .*again$/), 'echoer'));

    const memory = await (await fetch(`${server.url}/memory/7`)).json();
    expect(memory).toEqual({
      memory: [
        lagentMessage('hello'),
        lagentMessage('again', 'tester'),
        lagentMessage(expect.any(String), 'echoer'),
      ],
    });
    // The served agent itself holds the turn under the session (numbers and their strings are one session).
    expect(
      agent
        .memory!.get(7)!
        .getMemory()
        .map((m) => m.content),
    ).toHaveLength(3);
    expect(await (await fetch(`${server.url}/memory/unknown`)).json()).toEqual({ memory: [] });
  });

  it('passes the body keys the server allows to the call as options, snake_case to camelCase', async () => {
    const llm = new AsyncMockLLM({ responses: echo });
    const server = await serve(new AsyncAgent({ llm }), {
      callerOptions: { generation: { maxNewTokens: true, temperature: true } },
    });
    const remote = client(server.url);
    await remote.call('hi', { sessionId: 'a', maxNewTokens: 7, temperature: 0.25 });
    expect(llm.calls[0]!.params).toMatchObject({ maxNewTokens: 7, temperature: 0.25 });
    await fetch(`${server.url}/chat_completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['x'], session_id: 'b', max_new_tokens: 3 }),
    });
    expect(llm.calls[1]!.params).toMatchObject({ maxNewTokens: 3 });
  });

  it('serves a sync Agent and a sync StreamingAgent as they are', async () => {
    const agent = new Agent({ llm: new MockLLM({ responses: echo }), name: 'sync' });
    const server = await serve(agent);
    const remote = client(server.url);
    const reply = await remote.call('hey', { sessionId: 1 });
    expect(reply).toBeInstanceOf(AgentMessage);
    expect(reply.content).toBe('echo: hey');
    expect(reply.sender).toBe('sync');

    const streamer = new StreamingAgent({ llm: new MockLLM({ responses: echo, chunkSize: 2 }) });
    const streamServer = await serve(streamer);
    const streamed: AgentMessage[] = [];
    for await (const message of client(streamServer.url).stream('abcdef', { sessionId: 1 }))
      streamed.push(message);
    expect(streamed.at(-1)!.content).toBe('echo: abcdef');
    expect(streamed.at(-1)!.streamState).toBe(AgentStatusCode.END);
    expect(streamed.slice(0, -1).every((m) => m.streamState === AgentStatusCode.STREAM_ING)).toBe(true);
    expect(streamed.length).toBeGreaterThan(2);
    // The final /chat_completion of a streaming agent is its final message.
    expect((await client(streamServer.url).call('xy', { sessionId: 2 })).content).toBe('echo: xy');
  });
});

describe('HTTPAgentServer: bad input is answered and touches no session', () => {
  const TOKEN = 's3cret';

  async function setup() {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) });
    const errors: unknown[] = [];
    const server = await serve(agent, {
      token: TOKEN,
      bodyLimit: 2_000,
      onError: (error) => errors.push(error),
    });
    const remote = client(server.url, { token: TOKEN });
    await remote.call('first', { sessionId: 1 });
    const before = await remote.stateDict(1);
    expect(before.memory).toHaveLength(2);
    const post = (body: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
      fetch(`${server.url}/chat_completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
    const untouched = async () => {
      expect(await remote.stateDict(1)).toEqual(before);
      // No session was made, or changed, other than session 1.
      const sessions = agent.memory!.sessions().map(String);
      expect(sessions).toEqual(['1']);
    };
    return { server, remote, post, untouched, errors, agent };
  }

  it.each([
    ['malformed JSON', '{"message": ["hi"], "session_id": 1', 400],
    ['a missing message', '{"session_id": 1}', 400],
    ['a null message', '{"message": null, "session_id": 1}', 400],
    ['a message item that is not a message', '{"message": [{"sender": "user"}], "session_id": 1}', 400],
    ['a bad session_id', '{"message": ["hi"], "session_id": {"a": 1}}', 400],
    ['a body that is not an object', '["hi"]', 400],
    ['an empty body', '', 400],
    ['a body over the limit', JSON.stringify({ message: ['x'.repeat(3_000)], session_id: 1 }), 413],
  ])('%s is answered with its status and a JSON error', async (_name, body, status) => {
    const { post, untouched } = await setup();
    const response = await post(body);
    expect(response.status).toBe(status);
    const json = (await response.json()) as { detail: string; error: string };
    expect(json).toEqual({ detail: expect.any(String), error: expect.any(String) });
    await untouched();
  });

  it('a missing or bad token gives 401; /health_check needs none', async () => {
    const { server, post, untouched } = await setup();
    for (const headers of [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: TOKEN },
      { authorization: 'Bearer s3cret0' },
    ]) {
      const response = await post(JSON.stringify({ message: ['sneaky'], session_id: 1 }), headers);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(await response.json()).toMatchObject({ error: 'Unauthorized' });
    }
    expect((await fetch(`${server.url}/memory/1`)).status).toBe(401);
    expect(
      (await fetch(`${server.url}/chat_completion/stream`, { method: 'POST', body: '{"message":["x"]}' }))
        .status,
    ).toBe(401);
    expect((await fetch(`${server.url}/health_check`)).status).toBe(200);
    const unauthorized = client(server.url);
    await expect(unauthorized.call('x', { sessionId: 1 })).rejects.toMatchObject({
      name: 'HTTPAgentError',
      status: 401,
    });
    await untouched();
  });

  it('a failing agent gives 500 with a JSON error, and its call takes its turn back', async () => {
    const { post, remote, untouched, errors } = await setup();
    const response = await post(JSON.stringify({ message: ['fail please'], session_id: 1 }));
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ detail: 'Internal Server Error', error: 'Error' });
    expect(errors).toHaveLength(1);
    const failure = await remote.call('fail please', { sessionId: 1 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(HTTPAgentError);
    expect(failure).toMatchObject({ status: 500, body: { detail: 'Internal Server Error' } });
    await untouched();
    // A stream that fails before its first event is a plain 500 too.
    const stream = await fetch(`${remote.url}/chat_completion/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['fail please'], session_id: 1 }),
    });
    expect(stream.status).toBe(500);
    await untouched();
  });

  it('exposeErrors puts the error message in detail; unknown routes give a JSON 404', async () => {
    const server = await serve(new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) }), {
      exposeErrors: true,
    });
    const response = await fetch(`${server.url}/chat_completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['fail please'] }),
    });
    expect(await response.json()).toEqual({ detail: 'the mock model was told to fail', error: 'Error' });
    const missing = await fetch(`${server.url}/nothing`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: 'Not Found', error: 'NotFound' });
  });
});

describe('HTTPAgentServer: streaming', () => {
  it('sends chunk events, then the final message once', async () => {
    const agent = new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: echo, chunkSize: 3 }) });
    const server = await serve(agent);
    const response = await fetch(`${server.url}/chat_completion/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['streaming'], session_id: 4 }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseEvents(await response.text());
    const finals = events.filter(([event]) => event === 'message');
    expect(finals).toEqual([['message', lagentMessage('echo: streaming', 'AsyncStreamingAgent')]]);
    expect(events.at(-1)![0]).toBe('message');
    const chunks = events.slice(0, -1);
    expect(chunks.length).toBe(Math.ceil('echo: streaming'.length / 3));
    // The first chunk whole, then only the text each chunk adds: the reply's text crosses the wire once.
    expect(chunks.map(([event]) => event)).toEqual(['chunk', ...chunks.slice(1).map(() => 'delta')]);
    expect(chunks.map(([, data]) => (data as { content: string }).content)).toEqual(
      'echo: streaming'.match(/.{1,3}/g),
    );
    for (const [, data] of chunks) {
      expect(data).toMatchObject({ stream_state: AgentStatusCode.STREAM_ING, sender: 'AsyncStreamingAgent' });
    }
    const memory = await client(server.url).stateDict(4);
    expect(memory.memory!.map((m) => m.content)).toEqual(['streaming', 'echo: streaming']);
  });

  it("streamContent: 'cumulative' sends every chunk whole; the client reads both forms the same", async () => {
    const llm = () => new AsyncMockLLM({ responses: echo, chunkSize: 3 });
    const cumulative = await serve(new AsyncStreamingAgent({ llm: llm() }), { streamContent: 'cumulative' });
    const response = await fetch(`${cumulative.url}/chat_completion/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['streaming'], session_id: 4 }),
    });
    const events = parseEvents(await response.text()).slice(0, -1);
    expect(events.map(([event]) => event)).toEqual(events.map(() => 'chunk'));
    expect(events.map(([, data]) => (data as { content: string }).content)).toEqual(
      Array.from({ length: 5 }, (_, i) => 'echo: streaming'.slice(0, 3 * (i + 1))),
    );
    const delta = await serve(new AsyncStreamingAgent({ llm: llm() }));
    const read = async (url: string) => {
      const seen: [unknown, string | undefined][] = [];
      for await (const message of client(url).stream('streaming', { sessionId: 9 }))
        seen.push([message.content, message.delta]);
      return seen;
    };
    const fromCumulative = await read(cumulative.url);
    expect(await read(delta.url)).toEqual(fromCumulative);
    expect(fromCumulative.at(-2)).toEqual(['echo: streaming', 'ing']);
    expect(
      () => new HTTPAgentServer({ agent: new AsyncAgent({ llm: llm() }), streamContent: 'x' as never }),
    ).toThrow(/streamContent/);
  });

  it('a non-streaming agent sends just the final message; the client gives deltas', async () => {
    const server = await serve(new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) }));
    const response = await fetch(`${server.url}/chat_completion/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['one'] }),
    });
    expect(parseEvents(await response.text())).toEqual([
      ['message', lagentMessage('echo: one', 'AsyncAgent')],
    ]);

    const streaming = await serve(
      new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: echo, chunkSize: 4 }) }),
    );
    const deltas: string[] = [];
    const stream = client(streaming.url).stream('abc', { sessionId: 2 });
    let step = await stream.next();
    while (!step.done) {
      deltas.push(step.value.delta ?? '');
      step = await stream.next();
    }
    expect(deltas.join('')).toBe('echo: abc');
    expect(step.value.content).toBe('echo: abc');
  });

  it('a client that leaves mid-stream stops the call, which leaves the session as it was', async () => {
    const agent = new SlowStreamer({ name: 'slow' });
    const server = await serve(agent);
    const remote = client(server.url);
    const seen: string[] = [];
    for await (const chunk of remote.stream('go', { sessionId: 5 })) {
      seen.push(chunk.content as string);
      break;
    }
    expect(seen).toEqual(['one ']);
    await expect.poll(() => server.inFlight).toBe(0);
    expect(await remote.stateDict(5)).toEqual({ memory: [] });
    // The same session still works afterwards.
    let final: AgentMessage | undefined;
    for await (const chunk of remote.stream('again', { sessionId: 5 })) final = chunk;
    expect(final!.content).toBe('one two three four (1 in)');
    expect((await remote.stateDict(5)).memory).toHaveLength(2);
  });
});

describe('AsyncHTTPAgentClient', () => {
  it('works as a sub-agent: a composite calls it in forward, and the remote memory stays remote', async () => {
    const remoteAgent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }), name: 'remote' });
    const server = await serve(remoteAgent);

    class Composite extends AsyncAgent {
      readonly helper = client(server.url);
      override async forward(messages: AgentMessage[], options: AsyncForwardOptions) {
        const answer = await this.helper.call(messages, { sessionId: options.sessionId });
        return new AgentMessage({ sender: this.name, content: `helper said: ${answer.content}` });
      }
    }
    const composite = new Composite({ name: 'boss' });
    const reply = await composite.call('task', { sessionId: 3 });
    expect(reply.content).toBe('helper said: echo: task');
    expect(Object.keys(composite.stateDict(3))).toEqual(['memory']);
    expect(composite.stateDict(3).memory!.map((m) => m.content)).toEqual(['task', 'helper said: echo: task']);
    expect((await composite.helper.stateDict(3)).memory!.map((m) => m.content)).toEqual([
      'task',
      'echo: task',
    ]);
    expect(await composite.helper.isAlive()).toBe(true);
  });

  it('inherits the caller’s abort signal through the call frame; the remote call stops and takes its turn back', async () => {
    // The remote model never answers: only the abort ends the call.
    const remoteAgent = new AsyncAgent({ llm: new HeldLLM({ responses: echo }) });
    const server = await serve(remoteAgent);
    class Composite extends AsyncAgent {
      readonly helper = client(server.url);
      override async forward(messages: AgentMessage[]) {
        return this.helper.call(messages, { sessionId: 1 });
      }
    }
    const composite = new Composite();
    const controller = new AbortController();
    const call = composite.call('slow', { signal: controller.signal });
    await expect.poll(() => server.inFlight).toBe(1);
    controller.abort(new Error('user stopped'));
    await expect(call).rejects.toThrow('user stopped');
    await expect.poll(() => server.inFlight).toBe(0);
    expect(await composite.helper.stateDict(1)).toEqual({ memory: [] });
    expect(composite.stateDict(0).memory).toEqual([]);
  });

  it('times out with a TimeoutError', async () => {
    const server = await serve(
      new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo, latencyMs: 1_000 }) }),
    );
    const remote = client(server.url, { timeout: 100 });
    const error = await remote.call('x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeoutMs).toBe(100);
    await expect.poll(() => server.inFlight).toBe(0);
    // A per-call timeout overrides the client's.
    expect((await remote.call('y', { timeout: 5_000 })).content).toBe('echo: y');
  });

  it('retries while the server is not reachable yet, and fails clearly when it never is', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const remote = client(url, { retries: 5, retryDelay: 50 });
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) });
    const pending = remote.call('early', { sessionId: 1 });
    await new Promise((resolve) => setTimeout(resolve, 120));
    await serve(agent, { port });
    expect((await pending).content).toBe('echo: early');
    expect(agent.memory!.get(1)!.getMemory()).toHaveLength(2);

    const nowhere = client(`http://127.0.0.1:${await freePort()}`, { retries: 1, retryDelay: 10 });
    const error = await nowhere.call('x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HTTPAgentError);
    expect((error as HTTPAgentError).status).toBeUndefined();
    expect((error as Error).message).toMatch(/failed after 2 attempt\(s\).*ECONNREFUSED/);
    expect(await nowhere.isAlive()).toBe(false);
  });

  it('runs many concurrent calls over a small keep-alive pool', async () => {
    const server = await serve(new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) }));
    const remote = client(server.url, { maxSockets: 4 });
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => remote.call(`m${i}`, { sessionId: i % 10 })),
    );
    expect(replies.map((r) => r.content)).toEqual(Array.from({ length: 200 }, (_, i) => `echo: m${i}`));
    // Calls on one session ran one at a time in order: each memory alternates input and reply.
    const memory = (await remote.stateDict(3)).memory!.map((m) => m.content);
    expect(memory).toEqual(
      Array.from({ length: 20 }, (_, k) => [`m${3 + 10 * k}`, `echo: m${3 + 10 * k}`]).flat(),
    );
  });
});

describe('HTTPAgentServer: lifecycle', () => {
  it('close() drains the calls in flight, then refuses new ones', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo, latencyMs: 300 }) });
    const server = new HTTPAgentServer({ agent, port: 0 });
    const url = await server.listen();
    const remote = client(url, { retries: 0 });
    const inFlight = [remote.call('a', { sessionId: 1 }), remote.call('b', { sessionId: 2 })];
    await expect.poll(() => server.inFlight).toBe(2);
    const closed = server.close();
    const replies = await Promise.all(inFlight);
    expect(replies.map((r) => r.content)).toEqual(['echo: a', 'echo: b']);
    await closed;
    expect(agent.memory!.get(1)!.getMemory()).toHaveLength(2);
    await expect(remote.call('c')).rejects.toBeInstanceOf(HTTPAgentError);
    expect(await remote.isAlive()).toBe(false);
    await server.close(); // idempotent
  });

  it('checks its options, and url needs listen()', () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) });
    expect(() => new HTTPAgentServer({ agent, port: -1 })).toThrow(/port/);
    expect(() => new HTTPAgentServer({ agent, token: '' })).toThrow(/token/);
    expect(() => new HTTPAgentServer({ agent: {} as any })).toThrow(/agent/);
    expect(() => new HTTPAgentServer({ agent }).url).toThrow(/listen/);
    expect(() => new AsyncHTTPAgentClient({ url: 'ftp://x' })).toThrow(/http/);
  });
});

describe('HTTPAgentServer: timeouts and draining streams', () => {
  it('a client too slow to send its headers or its body is cut off, and no session is touched', async () => {
    const { connect } = await import('node:net');
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) });
    const server = await serve(agent, { headersTimeout: 300, requestTimeout: 400 });
    const { port } = new URL(server.url);
    // Each client sends part of its request and then nothing: only the server's timeouts end the connection.
    const slow = (payload: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(payload));
        let answer = '';
        socket.setEncoding('utf8').on('data', (text: string) => {
          answer += text;
        });
        socket.on('close', () => resolve(answer));
        socket.on('error', () => undefined);
      });
    const [headers, body] = await Promise.all([
      slow('POST /chat_completion HTTP/1.1\r\nHost: 127.0.0.1\r\n'),
      slow(
        'POST /chat_completion HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"message": [',
      ),
    ]);
    for (const answer of [headers, body]) {
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
      expect(answer).toMatch(/\r\n\r\n\{"detail":"[^"]+","error":"ERR_HTTP_REQUEST_TIMEOUT"\}$/);
    }
    expect(agent.memory!.sessions()).toEqual([]);
    expect(() => new HTTPAgentServer({ agent, headersTimeout: 5_000, requestTimeout: 1_000 })).toThrow(
      /headersTimeout/,
    );
  });

  it('close() lets a stream in flight finish', async () => {
    const agent = new SlowStreamer({ name: 'slow' });
    const server = new HTTPAgentServer({ agent, port: 0 });
    const remote = client(await server.listen());
    const chunks: string[] = [];
    const reading = (async () => {
      for await (const chunk of remote.stream('go', { sessionId: 1 })) chunks.push(chunk.content as string);
    })();
    await expect.poll(() => chunks.length).toBe(1);
    await server.close();
    await reading;
    expect(chunks.at(-1)).toBe('one two three four (1 in)');
    expect(agent.memory!.get(1)!.getMemory()).toHaveLength(2);
  });
});

describe('HTTPAgentServer: close() ends every connection', () => {
  /** A raw TCP connection to the server: what it was sent, and whether the server closed it. */
  async function connectRaw(url: string) {
    const { connect } = await import('node:net');
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    let received = '';
    socket.setEncoding('utf8').on('data', (text: string) => {
      received += text;
    });
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    return { socket, closed, received: () => received };
  }

  it('closes a connection that never sent a request (a browser or a client pool opens spare ones)', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) });
    const server = new HTTPAgentServer({ agent, port: 0 });
    const spare = await connectRaw(await server.listen());
    // Node does not count such a connection idle, and a closed server no longer times it out: close() waited
    // for the client to hang up, and the process stayed up (a `lagent ui` outlived its SIGTERM).
    await server.close();
    await spare.closed;
    expect(spare.received()).toBe('');
  });

  it('closes a keep-alive connection whose answer ends after close() began, once that answer is sent', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: echo }) });
    let asked!: () => void;
    const arrived = new Promise<void>((resolve) => (asked = resolve));
    let answer!: (text: string) => void;
    const server = new HTTPAgentServer({
      agent,
      port: 0,
      setup: (app) => {
        app.get('/held', (_request, reply) => {
          asked();
          return new Promise<void>((release) => {
            answer = (text) => {
              reply.send(text);
              release();
            };
          });
        });
      },
    });
    const connection = await connectRaw(await server.listen());
    connection.socket.write('GET /held HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    await arrived;
    const closing = server.close();
    // The answer ends once the server has stopped listening (and closed the connections idle then).
    await expect.poll(() => acceptsConnections(Number(new URL(server.url).port))).toBe(false);
    answer('the answer');
    // The answer arrives whole; then the server hangs up rather than keeping the connection for 72 s.
    await connection.closed;
    await closing;
    expect(connection.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\nthe answer$/);
  });
});

describe('HTTPAgentServer: close({ timeout })', () => {
  it('aborts calls still running after the timeout; they take their turns back', async () => {
    // The model never answers: only the close's timeout ends the call.
    const agent = new AsyncAgent({ llm: new HeldLLM({ responses: echo }) });
    const server = new HTTPAgentServer({ agent, port: 0, onError: () => undefined });
    const remote = client(await server.listen(), { retries: 0 });
    const pending = remote.call('slow', { sessionId: 1 }).catch((error: unknown) => error);
    await expect.poll(() => server.inFlight).toBe(1);
    await server.close({ timeout: 100 });
    expect(await pending).toBeInstanceOf(HTTPAgentError);
    expect(agent.memory!.get(1)?.getMemory() ?? []).toEqual([]);
  });
});

describe('HTTPAgentServer: a stream that fails midway', () => {
  class Breaking extends AsyncStreamingAgent {
    override async *forward() {
      yield new AgentMessage({ sender: this.name, content: 'par', streamState: AgentStatusCode.STREAM_ING });
      throw new Error('the model broke off');
    }
  }

  it('sends an error event after the chunks; the client throws; the session is untouched', async () => {
    const agent = new Breaking();
    const server = await serve(agent);
    const response = await fetch(`${server.url}/chat_completion/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: ['go'], session_id: 1 }),
    });
    expect(parseEvents(await response.text())).toEqual([
      ['chunk', lagentMessage('par', 'Breaking', { stream_state: AgentStatusCode.STREAM_ING })],
      ['error', { detail: 'Internal Server Error', error: 'Error' }],
    ]);
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const chunk of client(server.url).stream('go', { sessionId: 1 }))
        seen.push(chunk.content as string);
    })().catch((error: unknown) => error);
    expect(seen).toEqual(['par']);
    expect(failure).toBeInstanceOf(HTTPAgentError);
    expect(failure).toMatchObject({ status: 500, body: { error: 'Error' } });
    expect(agent.memory!.get(1)?.getMemory() ?? []).toEqual([]);
  });
});
