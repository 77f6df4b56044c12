import {
  Agent,
  AgentMessage,
  AsyncAgent,
  type AsyncHook,
  Memory,
  MemoryManager,
  type StepsInterceptor,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { observers } from '#src/agents/observers';

/**
 * `AsyncAgent.call` runs the common case (the built-in forward, no hooks, the session free) without the
 * steps' generator, and everything else through it. Both must behave alike.
 */

/** Replies with what it saw: the number of prompt messages and the last one's text. */
const echo = (latencyMs = 0) =>
  new AsyncMockLLM({
    latencyMs,
    responses: (messages) => `${messages.length}:${messages.at(-1)?.content}`,
  });

/** A hook that changes nothing: it only sends the call down the steps' path. */
const passThrough: AsyncHook = { hookName: 'passThrough', beforeAgent: () => undefined };

describe('the direct run and the steps of AsyncAgent.call agree', () => {
  it('on prompts, memory, replies and events, over several turns and sessions', async () => {
    const run = async (hooked: boolean) => {
      const agent = new AsyncAgent({ llm: echo(), template: 'sys', hooks: hooked ? [passThrough] : [] });
      const events: string[] = [];
      agent.events.on('callStart', ({ sessionId }) => events.push(`start ${sessionId}`));
      agent.events.on('llmStart', ({ messages }) => events.push(`llm ${messages.length}`));
      agent.events.on('callEnd', ({ message }) => events.push(`end ${message.content}`));
      const replies: unknown[] = [];
      for (const [input, sessionId] of [
        ['a', 1],
        ['b', 2],
        ['c', 1],
      ] as const) {
        const reply = await agent.call(input, { sessionId });
        replies.push(reply.toJSON());
      }
      return { replies, events, state: agent.stateDict() };
    };
    const direct = await run(false);
    const stepped = await run(true);
    expect(direct).toEqual(stepped);
    expect(direct.replies.map((reply) => (reply as { content: string }).content)).toEqual([
      '2:a',
      '2:b',
      '4:c',
    ]);
  });

  it('a model failure takes back the question on both paths, and the session goes on', async () => {
    for (const hooks of [[], [passThrough]]) {
      const agent = new AsyncAgent({
        llm: new AsyncMockLLM({
          responses: (_messages, _params, index) => {
            if (index === 1) throw new Error('model down');
            return `r${index}`;
          },
        }),
        hooks,
      });
      await agent.call('q0', { sessionId: 's' });
      await expect(agent.call('q1', { sessionId: 's' })).rejects.toThrow('model down');
      await agent.call('q2', { sessionId: 's' });
      expect(agent.memory!.getMemory('s').map((message) => message.content)).toEqual([
        'q0',
        'r0',
        'q2',
        'r2',
      ]);
    }
  });

  it('a call finding its session busy queues behind it, in call order', async () => {
    const agent = new AsyncAgent({ llm: echo(10) });
    const replies = await Promise.all(['x', 'y', 'z'].map((input) => agent.call(input, { sessionId: 1 })));
    expect(replies.map((reply) => reply.content)).toEqual(['1:x', '3:y', '5:z']);
    expect(agent.memory!.getMemory(1).map((message) => message.content)).toEqual([
      'x',
      '1:x',
      'y',
      '3:y',
      'z',
      '5:z',
    ]);
  });

  it("honours a MemoryManager subclass's getOrCreate and a Memory subclass's getMemory", async () => {
    /** Keeps everything, shows the model only the latest message. */
    class LatestOnly extends Memory {
      override getMemory(): AgentMessage[] {
        return super.getMemory().slice(-1);
      }
    }
    const created: string[] = [];
    class Counting extends MemoryManager {
      override getOrCreate(sessionId: string | number = 0): Memory {
        created.push(String(sessionId));
        return super.getOrCreate(sessionId);
      }
    }
    for (const hooks of [[], [passThrough]]) {
      created.length = 0;
      const agent = new AsyncAgent({ llm: echo(), template: 'sys', hooks, memory: () => new LatestOnly() });
      agent.memory = new Counting(() => new LatestOnly());
      await agent.call('one', { sessionId: 7 });
      const reply = await agent.call('two', { sessionId: 7 });
      // The prompt: the system message and the latest message only.
      expect(reply.content).toBe('2:two');
      expect(created).toEqual(['7', '7']);
      expect(agent.memory.getOrCreate(7)).toBeInstanceOf(LatestOnly);
      expect(agent.memory.get(7)!.length).toBe(4);
    }
  });

  it('a message-like input and a list of inputs are copied, never shared with the caller', async () => {
    const agent = new AsyncAgent({ llm: echo() });
    const input = new AgentMessage({ sender: 'user', content: 'mine' });
    await agent.call([input, 'second'], { sessionId: 1 });
    const stored = agent.memory!.getMemory(1);
    // Consecutive user turns are joined into one prompt message.
    expect(stored.map((message) => message.content)).toEqual(['mine', 'second', '1:minesecond']);
    expect(stored[0]).not.toBe(input);
  });
});

describe('session keys', () => {
  it('ids are one session exactly when their String()s are equal', async () => {
    const { sessionKey } = await import('#src/schema/session');
    const ids: (string | number)[] = [
      0,
      '0',
      -0,
      7,
      '7',
      '07',
      '7.0',
      7.5,
      '7.5',
      1e21,
      '1e+21',
      2 ** 30,
      String(2 ** 30),
      2 ** 30 - 1,
      String(2 ** 30 - 1),
      '',
      'abc',
      '٣',
      -1,
      '-1',
      NaN,
      'NaN',
      1234567890,
      '1234567890',
      '12345678901',
    ];
    for (const a of ids)
      for (const b of ids) expect(sessionKey(a) === sessionKey(b)).toBe(String(a) === String(b));
    const agent = new AsyncAgent({ llm: echo() });
    await agent.call('x', { sessionId: 7 });
    await agent.call('y', { sessionId: '7' });
    await agent.call('z', { sessionId: '07' });
    expect(agent.memory!.getMemory(7).map((message) => message.content)).toEqual(['x', '1:x', 'y', '3:y']);
    expect(agent.memory!.sessions()).toEqual([7, '07']);
  });
});

/**
 * The generators a call's steps nest, counted on the stack where its forward asks the model (each suspended
 * generator shows as a `<name>.next` frame between the call and its forward): every step of the call passes
 * through each of them, and each is an object per call. A call is one generator; each steps hook adds its own,
 * and a chain the call itself at its end.
 */
describe("a call's steps", () => {
  const stacks: string[] = [];
  const probe = () =>
    new MockLLM({
      responses: () => {
        stacks.push(new Error().stack ?? '');
        return 'ok';
      },
    });
  const generatorsOf = (agent: Agent) => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 100;
    try {
      agent.call('hi', { sessionId: 's' });
    } finally {
      Error.stackTraceLimit = limit;
    }
    const lines = (stacks.at(-1) ?? '').split('\n');
    const forward = lines.findIndex((line) => line.includes('Turn.forward'));
    const call = lines.findIndex((line) => line.includes('Agent.call'));
    expect(forward).toBeGreaterThan(0);
    expect(call).toBeGreaterThan(forward);
    return lines.slice(forward, call).filter((line) => /\.next \(<anonymous>\)/.test(line)).length;
  };
  const passing = (name: string): StepsInterceptor => ({
    name,
    steps: true,
    *agentCall(_context, next) {
      return yield* next();
    },
  });

  it('are one generator for a call no hook applies to', () => {
    // Events observed anywhere in the process (another test's listeners) put tracing's hook on every call.
    const traced = observers.count > 0;
    expect(generatorsOf(new Agent({ llm: probe() }))).toBe(traced ? 3 : 1);
  });

  it("add one generator per steps hook: the hook's own", () => {
    const one = new Agent({ llm: probe() });
    one.use(passing('first'));
    const two = new Agent({ llm: probe() });
    two.use(passing('first'));
    two.use(passing('second'));
    const three = new Agent({ llm: probe() });
    three.use(passing('first'));
    three.use(passing('second'));
    three.use(passing('third'));
    const [a, b, c] = [generatorsOf(one), generatorsOf(two), generatorsOf(three)];
    expect([b - a, c - b]).toEqual([1, 1]);
  });
});
