import { AsyncAgent, ConfigurationError } from 'lagent-ts';
import { HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { expect, it, vi } from 'vitest';

// Fastify is an optional peer: without it, listen() says what to install (the module is not imported before).
vi.mock('fastify', () => {
  throw new Error("Cannot find package 'fastify'");
});

it('listen() without fastify installed throws a ConfigurationError naming the package', async () => {
  const server = new HTTPAgentServer({
    agent: new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['x'] }) }),
    port: 0,
  });
  const error = await server.listen().catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(ConfigurationError);
  expect((error as Error).message).toMatch(/install fastify to use HTTPAgentServer/);
  await server.close();
});
