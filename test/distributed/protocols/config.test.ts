import { request } from 'node:http';
import { ConfigurationError } from 'lagent-ts';
import { HTTPAgentServer } from 'lagent-ts/distributed';
import { afterEach, describe, expect, it } from 'vitest';
import { assistant, closeServers, serve } from './fixtures';

/*
 * Which protocols a server speaks (`protocols`), and that every route of theirs is behind the server's Host /
 * Origin guard and token, as Lagent's own routes are.
 */

afterEach(closeServers);

const chat = (url: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

const BODIES: Record<string, unknown> = {
  '/v1/chat/completions': { model: 'assistant', messages: [{ role: 'user', content: 'hi' }], user: 's' },
  '/api/chat': { id: 's', messages: [{ id: 'u', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] },
  '/ag-ui': {
    threadId: 's',
    runId: 'r',
    messages: [{ id: 'u', role: 'user', content: 'hi' }],
    tools: [],
    context: [],
  },
  '/a2a': { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'nothing' } },
};

/** A request with a `Host` header of our choosing (fetch does not let one set it). */
function withHost(url: string, path: string, host: string): Promise<number> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sent = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { host, 'content-type': 'application/json' },
      },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    sent.on('error', reject);
    sent.end(JSON.stringify(BODIES[path]));
  });
}

describe('protocols: which are served', () => {
  it('every protocol by default; a list serves those; settings move a route or turn one off', async () => {
    const { agent } = assistant();
    const all = await serve({ agent });
    for (const [path, body] of Object.entries(BODIES)) {
      const response = await chat(all.url, path, body);
      expect(response.status, path).not.toBe(404);
      await response.text();
    }
    const some = await serve({ agent, protocols: ['openai'] });
    expect((await fetch(`${some.url}/v1/models`)).status).toBe(200);
    expect((await chat(some.url, '/api/chat', BODIES['/api/chat'])).status).toBe(404);
    expect((await fetch(`${some.url}/.well-known/agent-card.json`)).status).toBe(404);
    const moved = await serve({
      agent,
      protocols: { 'ai-sdk': { path: '/chat' }, openai: { prefix: '/openai/v1' }, a2a: false },
    });
    const streamed = await chat(moved.url, '/chat', BODIES['/api/chat']);
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('"type":"finish"');
    expect((await fetch(`${moved.url}/openai/v1/models`)).status).toBe(200);
    expect((await fetch(`${moved.url}/.well-known/agent-card.json`)).status).toBe(404);
    const none = await serve({ agent, protocols: [] });
    expect((await fetch(`${none.url}/v1/models`)).status).toBe(404);
  });

  it('an unknown protocol or a path that is not one is a ConfigurationError', () => {
    const { agent } = assistant();
    expect(() => new HTTPAgentServer({ agent, protocols: ['mcp' as never] })).toThrow(ConfigurationError);
    expect(() => new HTTPAgentServer({ agent, protocols: { 'ai-sdk': { path: 'chat' } } })).toThrow(
      /must be a path/,
    );
    expect(() => new HTTPAgentServer({ agent, protocols: { openai: 'yes' as never } })).toThrow(
      ConfigurationError,
    );
  });
});

describe('protocols: behind the same guard and token', () => {
  it('without the token every protocol route is 401 (the agent card, which names how to authenticate, is public)', async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent, token: 'secret' });
    for (const [path, body] of Object.entries(BODIES)) {
      const refused = await chat(url, path, body);
      expect(refused.status, path).toBe(401);
      const taken = await chat(url, path, body, { authorization: 'Bearer secret' });
      expect(taken.status, path).not.toBe(401);
      await taken.text();
    }
    expect((await fetch(`${url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${url}/.well-known/agent-card.json`)).status).toBe(200);
    expect(agent.memory!.sessions()).toEqual(['s']);
  });

  it("a request whose Host is not the server's, or a web page of another origin, is 403 on every protocol route", async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent });
    for (const path of Object.keys(BODIES)) {
      expect(await withHost(url, path, 'rebound.example:80'), path).toBe(403);
      const page = await chat(url, path, BODIES[path], { origin: 'https://evil.example' });
      expect(page.status, path).toBe(403);
    }
    expect(agent.memory!.sessions()).toEqual([]);
  });

  it("an allowed origin gets CORS answers naming the protocols' headers", async () => {
    const { agent } = assistant();
    const { url } = await serve({ agent, allowedOrigins: ['https://app.example'] });
    const preflight = await fetch(`${url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, x-session-id',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/x-session-id/);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/a2a-version/);
    const answer = await chat(url, '/api/chat', BODIES['/api/chat'], { origin: 'https://app.example' });
    expect(answer.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(await answer.text()).toContain('"type":"finish"');
  });
});
