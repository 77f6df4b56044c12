import { AgentMessage, AsyncAgent, type AsyncForwardOptions } from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * Sessions of an agent without a store, served over HTTP: clients that invent session ids cannot grow the
 * process without end. Past `maxSessions`, the least recently used sessions with no call in flight are reset in
 * the whole agent tree; a session being answered never is.
 */

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A root agent that asks a helper sub-agent, both keeping each session's memory. */
class Team extends AsyncAgent {
  helper = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'helped' }), name: 'helper' });
  override async forward(messages: AgentMessage[], options: AsyncForwardOptions) {
    const help = await this.helper.call(messages.at(-1)!, { sessionId: options.sessionId });
    return new AgentMessage({ sender: this.name, content: `done: ${String(help.content)}` });
  }
}

async function serve(agent: AsyncAgent, maxSessions?: number) {
  const server = new HTTPAgentServer({
    agent,
    port: 0,
    ...(maxSessions === undefined ? {} : { maxSessions }),
  });
  await server.listen();
  cleanup.push(() => server.close({ timeout: 1_000 }));
  const client = new AsyncHTTPAgentClient({ url: server.url });
  cleanup.push(() => client.close());
  return client;
}

function warnings(code: string): Error[] {
  const seen: Error[] = [];
  const listener = (warning: Error & { code?: string }) => {
    if (warning.code === code) seen.push(warning);
  };
  process.on('warning', listener);
  cleanup.push(() => process.off('warning', listener));
  return seen;
}

describe('HTTPAgentServer: sessions without a store', () => {
  it('keeps at most maxSessions, forgetting the least recently used in the whole tree, with one warning', async () => {
    const agent = new Team();
    const client = await serve(agent, 3);
    const forgotten = warnings('LAGENT_SESSIONS_FORGOTTEN');
    for (let i = 0; i < 10; i++) await client.call('hi', { sessionId: `s${i}` });
    // Session s7 was used again: s8, s9 and s7 are the three most recent.
    await client.call('again', { sessionId: 's7' });
    await client.call('hi', { sessionId: 's10' });
    expect(agent.memory!.sessions().sort()).toEqual(['s10', 's7', 's9']);
    expect(agent.helper.memory!.sessions().sort()).toEqual(['s10', 's7', 's9']);
    expect(agent.memory!.getMemory('s7')).toHaveLength(4);
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    expect(forgotten).toHaveLength(1);
    expect(forgotten[0]!.message).toMatch(/more than 3 sessions in memory/);
  });

  it('never forgets a session with a call in flight', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    const llm = new AsyncMockLLM({ responses: (messages) => `re: ${String(messages.at(-1)?.content)}` });
    const generate = llm.generate.bind(llm);
    llm.generate = async (messages, params) => {
      asked++;
      if (messages.at(-1)?.content === 'slow') await held;
      return generate(messages, params);
    };
    const agent = new AsyncAgent({ llm });
    const client = await serve(agent, 2);
    warnings('LAGENT_SESSIONS_FORGOTTEN');
    const slow = client.call('slow', { sessionId: 'busy' });
    while (asked === 0) await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 5; i++) await client.call('hi', { sessionId: `s${i}` });
    expect(agent.memory!.sessions()).toContain('busy');
    release();
    expect((await slow).content).toBe('re: slow');
    expect(agent.memory!.getMemory('busy').map((message) => message.content)).toEqual(['slow', 're: slow']);
    // Once idle, it is the least recently used and goes with the next new session.
    await client.call('hi', { sessionId: 'last' });
    expect(agent.memory!.sessions()).not.toContain('busy');
  });

  it('keeps 10,000 by default, and every session with Infinity', async () => {
    expect(() => new HTTPAgentServer({ agent: new AsyncAgent(), maxSessions: 0 })).toThrow(/maxSessions/);
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }) });
    const client = await serve(agent, Number.POSITIVE_INFINITY);
    for (let i = 0; i < 20; i++) await client.call('hi', { sessionId: i });
    expect(agent.memory!.size).toBe(20);
  });
});
