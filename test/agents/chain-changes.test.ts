import {
  Agent,
  type AgentMessage,
  AsyncAgent,
  type ForwardOptions,
  GuardrailTripped,
  guardrail,
  MemoryStore,
  TokenWindowAggregator,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { BUILTIN_ORDER } from '#src/agents/interceptors/chain';
import type { BuiltinConcern } from '#src/agents/interceptors/concern';
import { DURABLE } from '#src/agents/interceptors/durable/option';
import { attachStore } from '#src/agents/interceptors/session-store/persist';

/*
 * What the built-in concerns answer for an agent is kept from its first call (interceptors/chain.ts): each
 * test changes the agent after a call and checks the next call sees the change.
 */

const noPasswords = guardrail({
  name: 'no-passwords',
  on: 'input',
  check: (message: AgentMessage) =>
    String(message.content).includes('password') ? 'mentions a password' : undefined,
});

describe("an agent changed after its first call: the next call's chain follows", () => {
  it('a guardrail registered after the first call checks the next one; removed, it checks no more', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }) });
    expect((await agent.call('my password', { sessionId: 1 })).content).toBe('ok');
    const handle = agent.registerHook(noPasswords);
    await expect(agent.call('my password', { sessionId: 2 })).rejects.toBeInstanceOf(GuardrailTripped);
    handle.remove();
    expect((await agent.call('my password', { sessionId: 3 })).content).toBe('ok');
  });

  it('a forward set on the agent after the first call runs instead of the built-in one', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'from the model' }) });
    expect((await agent.call('hi', { sessionId: 1 })).content).toBe('from the model');
    const own = (_messages: AgentMessage[], options: ForwardOptions) =>
      `own forward, session ${String(options.sessionId)}`;
    (agent as unknown as { forward: typeof own }).forward = own;
    expect((await agent.call('hi', { sessionId: 2 })).content).toBe('own forward, session 2');
  });

  it("a subclass's own forward is not the built-in one, even when it calls it", async () => {
    const seen: string[] = [];
    class Logged extends AsyncAgent {
      override forward(messages: AgentMessage[], options: ForwardOptions) {
        seen.push(String(messages[0]?.content));
        return super.forward(messages, options);
      }
    }
    const agent = new Logged({ llm: new AsyncMockLLM({ responses: () => 'ok' }) });
    expect((await agent.call('first')).content).toBe('ok');
    expect((await agent.call('second', { sessionId: 2 })).content).toBe('ok');
    expect(seen).toEqual(['first', 'second']);
  });

  it('a summarising aggregator set after the first call summarises the next calls', () => {
    const summarizer = new MockLLM({ responses: () => 'the summary' });
    const agent = new Agent({
      llm: new MockLLM({ responses: (_messages, _params, i) => `reply ${i} ${'word '.repeat(20)}` }),
    });
    const question = (i: number) => `question ${i}: ${'detail '.repeat(15)}`;
    agent.call(question(0));
    agent.aggregator = new TokenWindowAggregator({
      maxTokens: 1_000,
      summarize: { llm: summarizer, triggerTokens: 300, keepTokens: 120 },
    });
    for (let i = 1; i < 12; i++) agent.call(question(i));
    expect(summarizer.calls.length).toBeGreaterThan(0);
  });

  it('a store attached after the first call keeps the next calls', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }), name: 'kept' });
    await agent.call('before', { sessionId: 'other' });
    attachStore(agent, { store });
    await agent.call('after', { sessionId: 's' });
    const loaded = store.readSession('kept', 's');
    expect(JSON.stringify(loaded)).toContain('after');
  });

  it('a durable option set after the first call journals the next calls', async () => {
    const store = new MemoryStore();
    const llm = new AsyncMockLLM({ responses: () => 'once' });
    const agent = new AsyncAgent({ llm, name: 'journaled' });
    await agent.call('before', { sessionId: 'other' });
    (agent as unknown as Record<symbol, unknown>)[DURABLE] = { store };
    await agent.call('hi', { sessionId: 's', callId: 'c1' });
    // The same callId again: answered from the journal, the model is not asked.
    const again = await agent.call('hi', { sessionId: 's', callId: 'c1' });
    expect(again.content).toBe('once');
    expect(llm.calls).toHaveLength(2);
  });
});

describe('what a call asks the built-in concerns', () => {
  /** Counts the calls of every concern's `static` and `perCall`, by concern name. */
  function counting() {
    const asked: string[] = [];
    const restore: (() => void)[] = [];
    for (const concern of BUILTIN_ORDER as BuiltinConcern[]) {
      const name = concern.interceptor.name;
      for (const part of ['static', 'perCall'] as const) {
        const original = concern[part] as ((value: never) => number) | undefined;
        if (original === undefined) continue;
        const mutable = concern as { -readonly [K in keyof BuiltinConcern]: BuiltinConcern[K] };
        mutable[part] = ((value: never) => {
          asked.push(`${name}.${part}`);
          return original.call(concern, value);
        }) as never;
        restore.push(() => {
          mutable[part] = original as never;
        });
      }
    }
    return {
      asked,
      restore: () => {
        for (const undo of restore) undo();
      },
    };
  }

  it("a plain call asks each concern's static once per agent, then only what depends on the process", async () => {
    const { asked, restore } = counting();
    try {
      const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }) });
      await agent.call('hi', { sessionId: 1 });
      expect(asked.filter((name) => name.endsWith('.static'))).toHaveLength(BUILTIN_ORDER.length);
      asked.length = 0;
      await agent.call('hi', { sessionId: 2 });
      await agent.call('hi');
      expect(asked).toEqual(['tracing.perCall', 'tracing.perCall']);
      // A call option asks the concerns that read it.
      asked.length = 0;
      await agent.call('hi', { sessionId: 3, timeoutMs: 60_000 });
      expect(asked).toEqual(['timeout.perCall', 'tracing.perCall']);
    } finally {
      restore();
    }
  });
});
