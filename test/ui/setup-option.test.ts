import { AsyncAgent } from 'lagent-ts';
import { HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

/** HTTPAgentServer's `setup` option: more routes behind the server's own checks, hooks that run before them. */

describe('HTTPAgentServer setup', () => {
  it('adds routes answered behind the Host, Origin and token checks; its hooks run first', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['hi'] }) });
    const server = new HTTPAgentServer({
      agent,
      port: 0,
      token: 'secret',
      setup: (app) => {
        app.addHook('onRequest', (request, _reply, done) => {
          const cookie = /(?:^|;\s*)t=([^;]+)/.exec(request.headers.cookie ?? '');
          if (cookie) request.headers.authorization = `Bearer ${cookie[1]}`;
          done();
        });
        app.get('/extra', (_request, reply) => {
          reply.send({ extra: true });
        });
      },
    });
    const url = await server.listen();
    try {
      const get = (headers: Record<string, string>) => fetch(`${url}/extra`, { headers });
      expect((await get({})).status).toBe(401);
      const ok = await get({ authorization: 'Bearer secret' });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ extra: true });
      expect((await get({ cookie: 't=secret' })).status).toBe(200);
      expect((await get({ cookie: 't=wrong' })).status).toBe(401);
      expect((await get({ authorization: 'Bearer secret', origin: 'https://evil.example' })).status).toBe(
        403,
      );
    } finally {
      await server.close();
    }
  });

  it('refuses a setup that is not a function', () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['hi'] }) });
    expect(() => new HTTPAgentServer({ agent, setup: 'x' as never })).toThrow(/setup must be a function/);
  });
});
