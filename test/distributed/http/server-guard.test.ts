import http from 'node:http';
import { AsyncAgent } from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * What a web page can make a browser send to a server without a token: "simple" cross-site requests
 * (text/plain, form or typeless bodies; no preflight) carrying the page's Origin, and, after rebinding its
 * DNS name to 127.0.0.1, same-origin requests carrying its own name in Host. Requests are sent with
 * node:http so Host and Origin can be set as a browser would.
 */

const started: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close();
});

async function serve(options: Partial<ConstructorParameters<typeof HTTPAgentServer>[0]> = {}) {
  const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }) });
  const server = new HTTPAgentServer({ agent, port: 0, onError: () => undefined, ...options });
  await server.listen();
  started.push(server);
  return { server, agent, port: Number(new URL(server.url).port) };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: unknown;
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: { host: `127.0.0.1:${port}`, ...headers },
        agent: false,
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (part: string) => {
          text += part;
        });
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            json: text ? JSON.parse(text) : undefined,
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const CHAT = JSON.stringify({ message: ['do something'], session_id: 'victim' });

describe('HTTPAgentServer: web pages cannot drive a server without a token', () => {
  it('a body that is not application/json is refused with 415, whatever the origin; no turn runs', async () => {
    const { port, agent } = await serve();
    for (const type of [
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const answer = await send(port, 'POST', '/chat_completion', { 'content-type': type }, CHAT);
      expect(answer.status).toBe(415);
      expect(answer.json).toEqual({
        detail: expect.stringMatching(/application\/json/),
        error: expect.any(String),
      });
    }
    // A Blob body from fetch() carries no Content-Type at all.
    const typeless = await send(port, 'POST', '/chat_completion/stream', {}, CHAT);
    expect(typeless.status).toBe(415);
    expect(agent.memory!.sessions()).toEqual([]);
  });

  it('a cross-site Origin is refused with 403, for every route', async () => {
    const { port, agent } = await serve();
    const evil = { origin: 'http://evil.example' };
    const json = { 'content-type': 'application/json' };
    const chat = await send(port, 'POST', '/chat_completion', { ...json, ...evil }, CHAT);
    expect(chat.status).toBe(403);
    expect(chat.json).toEqual({
      detail: expect.stringMatching(/evil\.example.*allowedOrigins/),
      error: 'OriginNotAllowed',
    });
    expect((await send(port, 'POST', '/chat_completion/stream', { ...json, ...evil }, CHAT)).status).toBe(
      403,
    );
    expect((await send(port, 'GET', '/memory/victim', evil)).status).toBe(403);
    expect((await send(port, 'GET', '/memory/victim', { origin: 'null' })).status).toBe(403);
    expect(agent.memory!.sessions()).toEqual([]);
    // Without an Origin (any client outside a browser), the same request runs.
    expect((await send(port, 'POST', '/chat_completion', json, CHAT)).status).toBe(200);
  });

  it('a Host that is not this server (DNS rebinding) is refused with 403; loopback names pass', async () => {
    const { port, agent } = await serve();
    await send(port, 'POST', '/chat_completion', { 'content-type': 'application/json' }, CHAT);
    const rebound = await send(port, 'GET', '/memory/victim', { host: `rebind.evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(rebound.json).toEqual({
      detail: expect.stringMatching(/rebind\.evil\.example.*allowedHosts/),
      error: 'HostNotAllowed',
    });
    const post = await send(
      port,
      'POST',
      '/chat_completion',
      { host: 'rebind.evil.example', 'content-type': 'application/json' },
      CHAT,
    );
    expect(post.status).toBe(403);
    expect(agent.memory!.get('victim')!.getMemory()).toHaveLength(2);
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      'LOCALHOST',
      '127.0.0.1',
    ]) {
      expect((await send(port, 'GET', '/memory/victim', { host })).status).toBe(200);
    }
    // The lagent-ts client sends the URL's host.
    const remote = new AsyncHTTPAgentClient({ url: `http://localhost:${port}` });
    started.push(remote);
    expect((await remote.stateDict('victim')).memory).toHaveLength(2);
  });

  it('allowedHosts and allowedOrigins let listed names and pages in, with CORS answers', async () => {
    const { port } = await serve({
      allowedHosts: ['agents.internal'],
      allowedOrigins: ['https://app.example'],
    });
    expect((await send(port, 'GET', '/health_check', { host: 'agents.internal:9000' })).status).toBe(200);
    expect((await send(port, 'GET', '/health_check', { host: 'other.internal' })).status).toBe(403);
    const preflight = await send(port, 'OPTIONS', '/chat_completion', {
      origin: 'https://app.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/content-type/);
    // A page may send an idempotency key, and read it and the ignored options back.
    expect(preflight.headers['access-control-allow-headers']).toMatch(/idempotency-key/);
    const call = await send(
      port,
      'POST',
      '/chat_completion',
      { origin: 'https://app.example', 'content-type': 'application/json' },
      CHAT,
    );
    expect(call.status).toBe(200);
    expect(call.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(call.headers['access-control-expose-headers']).toBe('idempotency-key, lagent-ignored-options');
    expect((await send(port, 'GET', '/memory/x', { origin: 'https://app.example.evil' })).status).toBe(403);
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }) });
    expect(() => new HTTPAgentServer({ agent, allowedOrigins: ['not an origin'] })).toThrow(/allowedOrigins/);
    expect(() => new HTTPAgentServer({ agent, allowedHosts: [''] })).toThrow(/allowedHosts/);
  });

  it("allowedHosts: ['*'] accepts any Host", async () => {
    const { port } = await serve({ allowedHosts: ['*'] });
    expect((await send(port, 'GET', '/health_check', { host: 'anything.example' })).status).toBe(200);
  });
});

describe('HTTPAgentServer: session ids and bad input are answered consistently, with detail', () => {
  it('GET /memory reads any session id POST accepts (over 100 characters), and both refuse the same longer ones', async () => {
    const { port } = await serve();
    const json = { 'content-type': 'application/json' };
    const long = `s-${'é'.repeat(300)}-${'x'.repeat(700)}`;
    expect(long.length).toBeLessThanOrEqual(1_024);
    const posted = await send(
      port,
      'POST',
      '/chat_completion',
      json,
      JSON.stringify({ message: ['hi'], session_id: long }),
    );
    expect(posted.status).toBe(200);
    const read = await send(port, 'GET', `/memory/${encodeURIComponent(long)}`);
    expect(read.status).toBe(200);
    expect((read.json as { memory: unknown[] }).memory).toHaveLength(2);

    const tooLong = 'y'.repeat(1_025);
    const refusedPost = await send(
      port,
      'POST',
      '/chat_completion',
      json,
      JSON.stringify({ message: ['hi'], session_id: tooLong }),
    );
    const refusedGet = await send(port, 'GET', `/memory/${tooLong}`);
    for (const answer of [refusedPost, refusedGet]) {
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({
        detail: expect.stringMatching(/1025 characters.*1024/),
        error: 'ValidationError',
      });
    }
  });

  it('framework errors (a bad URL, an over-long path) carry detail too', async () => {
    const { port } = await serve();
    const badURL = await send(port, 'GET', '/memory/%zz');
    expect(badURL.status).toBe(400);
    expect(badURL.json).toEqual({ detail: expect.any(String), error: expect.any(String) });
    const overlong = await send(port, 'GET', `/memory/${'z'.repeat(13_000)}`);
    expect(overlong.status).toBe(414);
    expect(overlong.json).toEqual({ detail: expect.any(String), error: expect.any(String) });
    const headers = await send(port, 'GET', '/health_check', { 'x-filler': 'f'.repeat(20_000) });
    expect(headers.status).toBe(431);
    expect(headers.json).toEqual({ detail: expect.any(String), error: 'HPE_HEADER_OVERFLOW' });
  });

  it.each([
    ['stop_words: {}', { stop_words: {} }],
    ['stop_words: [1]', { stop_words: [1] }],
    ['max_new_tokens: "many"', { max_new_tokens: 'many' }],
    ['temperature: {}', { temperature: {} }],
  ])('%s is a 400 naming the field, not a 500; the session is untouched', async (_name, kwargs) => {
    const { port, agent } = await serve();
    const answer = await send(
      port,
      'POST',
      '/chat_completion',
      { 'content-type': 'application/json' },
      JSON.stringify({ message: ['hi'], session_id: 1, ...kwargs }),
    );
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({
      detail: expect.stringContaining(Object.keys(kwargs)[0]!),
      error: 'ValidationError',
    });
    expect(agent.memory!.sessions()).toEqual([]);
  });

  it('valid generation parameters still reach the model', async () => {
    const llm = new AsyncMockLLM({ responses: () => 'ok' });
    const server = new HTTPAgentServer({
      agent: new AsyncAgent({ llm }),
      port: 0,
      callerOptions: { generation: { maxNewTokens: true, topP: true, stopWords: true } },
    });
    await server.listen();
    started.push(server);
    const answer = await send(
      Number(new URL(server.url).port),
      'POST',
      '/chat_completion',
      { 'content-type': 'application/json' },
      JSON.stringify({ message: ['hi'], stop_words: ['\n'], max_new_tokens: 5, top_p: null }),
    );
    expect(answer.status).toBe(200);
    expect(llm.calls[0]!.params).toMatchObject({ stopWords: ['\n'], maxNewTokens: 5 });
  });
});
