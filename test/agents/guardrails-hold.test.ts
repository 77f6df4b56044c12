import {
  Agent,
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  AsyncStreamingAgent,
  asyncTool,
  ConfigurationError,
  GuardrailTripped,
  guardrail,
  StreamingAgent,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

/*
 * Guardrails that hold: a streamed chunk reaches the caller only once every output check of it passed (async
 * checks included), a parallel input check holds back every chunk and every tool call until it passed, and
 * every check gets the call's signal and a deadline.
 */

/** A promise and its resolver. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Drains a stream: what reached the caller, and how it ended. */
async function drain(stream: AsyncIterable<AgentMessage>): Promise<{ seen: string[]; error: unknown }> {
  const seen: string[] = [];
  try {
    for await (const chunk of stream) seen.push(String(chunk.content));
  } catch (error) {
    return { seen, error };
  }
  return { seen, error: undefined };
}

const KEY = 'sk-ABCDEFGHIJKLMNOPQRSTUVWX';
const LEAKY = `Here is the configuration you asked for. The key is ${KEY} and it works.`;

afterEach(() => {
  vi.useRealTimers();
});

describe('output guardrails on streams hold delivery until each check passed', () => {
  it('a check that awaits a timer (a moderation API): no chunk holding the key is delivered', async () => {
    const llm = new AsyncMockLLM({ responses: [LEAKY], chunkSize: 4 });
    const agent = new AsyncStreamingAgent({
      llm,
      hooks: [
        guardrail({
          name: 'no-keys',
          on: 'output',
          check: (message) =>
            new Promise((resolve) =>
              setTimeout(
                () => resolve(String(message.content).includes('sk-') ? 'holds a key' : undefined),
                1,
              ),
            ),
        }),
      ],
    });
    const { seen, error } = await drain(agent.call('config?', { sessionId: 1 }));
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((content) => content.includes('sk-'))).toEqual([]);
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
  });

  it('a check that answers in a microtask: the tripping chunk itself is not delivered', async () => {
    const llm = new AsyncMockLLM({ responses: [LEAKY], chunkSize: 4 });
    const agent = new AsyncStreamingAgent({
      llm,
      hooks: [
        guardrail({
          name: 'no-keys',
          on: 'output',
          check: async (message) => (String(message.content).includes('sk-') ? 'holds a key' : undefined),
        }),
      ],
    });
    const { seen, error } = await drain(agent.call('config?'));
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect(seen.filter((content) => content.includes('sk-'))).toEqual([]);
    // Every chunk before the tripping one was delivered.
    const trip = LEAKY.indexOf('sk-');
    expect(seen.at(-1)).toBe(LEAKY.slice(0, Math.floor(trip / 4) * 4));
  });

  it('chunks are delivered in order, each after its checks passed, while later checks run alongside', async () => {
    const llm = new AsyncMockLLM({ responses: ['abcdefghijkl'], chunkSize: 3 });
    const checked: string[] = [];
    const delivered: string[] = [];
    const answers = new Map<string, ReturnType<typeof deferred<undefined>>>();
    const agent = new AsyncStreamingAgent({
      llm,
      hooks: [
        guardrail({
          name: 'slow',
          on: 'output',
          check: (message) => {
            const content = String(message.content);
            checked.push(content);
            // The chunks' checks answer when the test says; the final reply's at once.
            if (checked.length > 4) return undefined;
            const answer = deferred<undefined>();
            answers.set(content, answer);
            return answer.promise;
          },
        }),
      ],
    });
    const stream = agent.call('go');
    const first = stream.next();
    let firstArrived = false;
    void first.then(() => {
      firstArrived = true;
    });
    // The second chunk is checked while the first one's check is pending; its answer comes first.
    while (!answers.has('abcdef')) await new Promise((resolve) => setImmediate(resolve));
    answers.get('abcdef')!.resolve(undefined);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(firstArrived).toBe(false);
    answers.get('abc')!.resolve(undefined);
    delivered.push(String((await first).value!.content));
    delivered.push(String((await stream.next()).value!.content));
    for (const key of ['abcdefghi', 'abcdefghijkl']) {
      while (!answers.has(key)) await new Promise((resolve) => setImmediate(resolve));
      answers.get(key)!.resolve(undefined);
    }
    for (;;) {
      const step = await stream.next();
      if (step.done) break;
      delivered.push(String(step.value.content));
    }
    // The four chunks, then the final reply.
    expect(delivered).toEqual(['abc', 'abcdef', 'abcdefghi', 'abcdefghijkl', 'abcdefghijkl']);
    expect(checked).toEqual(['abc', 'abcdef', 'abcdefghi', 'abcdefghijkl', 'abcdefghijkl']);
  });
});

describe('parallel input guardrails on streams and tools', () => {
  it('a streaming agent delivers no chunk before the parallel input check passed, and none when it trips', async () => {
    const verdict = deferred<string | undefined>();
    const llm = new AsyncMockLLM({ responses: ['one two three four five six'], chunkSize: 4 });
    const agent = new AsyncStreamingAgent({
      llm,
      hooks: [guardrail({ name: 'moderation', on: 'input', parallel: true, check: () => verdict.promise })],
    });
    const seen: string[] = [];
    const done = (async () => {
      try {
        for await (const chunk of agent.call('a forbidden question', { sessionId: 1 }))
          seen.push(String(chunk.content));
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    // The model is asked at once and answers whole while the check is pending.
    while (llm.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([]);
    verdict.resolve('forbidden topic');
    expect(await done).toBeInstanceOf(GuardrailTripped);
    expect(seen).toEqual([]);
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
  });

  it('a streaming agent flushes what it held once the parallel input check passed', async () => {
    const verdict = deferred<string | undefined>();
    const text = 'one two three four five six';
    const llm = new AsyncMockLLM({ responses: [text], chunkSize: 4 });
    const agent = new AsyncStreamingAgent({
      llm,
      hooks: [guardrail({ name: 'moderation', on: 'input', parallel: true, check: () => verdict.promise })],
    });
    const stream = agent.call('fine', { sessionId: 1 });
    const first = stream.next();
    while (llm.calls.length === 0) await new Promise((resolve) => setImmediate(resolve));
    verdict.resolve(undefined);
    const seen = [String((await first).value!.content)];
    for await (const chunk of stream) seen.push(String(chunk.content));
    expect(seen[0]).toBe('one ');
    expect(seen.at(-1)).toBe(text);
  });

  it('a tool call waits for the pending parallel input checks: none runs before a check trips', async () => {
    const wired: unknown[] = [];
    const wire = asyncTool({
      name: 'Wire',
      parameters: z.object({ amount: z.number() }),
      run: async ({ amount }) => {
        wired.push(amount);
        return 'sent';
      },
    });
    const verdict = deferred<string | undefined>();
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: [{ content: '', toolCalls: [{ name: 'Wire', arguments: { amount: 500 } }] }, 'done'],
      }),
      actions: [wire],
      hooks: [guardrail({ name: 'fraud', on: 'input', parallel: true, check: () => verdict.promise })],
    });
    // The loop reaches the round of tool calls: only then does the check answer.
    agent.events.on('toolStart', () => verdict.resolve('looks like fraud'));
    let error: unknown;
    try {
      await agent.call('send 500 to Mallory', { sessionId: 1 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect(wired).toEqual([]);
  });

  it('a tool call runs once the parallel input checks passed', async () => {
    const wired: unknown[] = [];
    const wire = asyncTool({
      name: 'Wire',
      parameters: z.object({ amount: z.number() }),
      run: async ({ amount }) => {
        wired.push(amount);
        return 'sent';
      },
    });
    const verdict = deferred<string | undefined>();
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: [{ content: '', toolCalls: [{ name: 'Wire', arguments: { amount: 5 } }] }, 'done'],
      }),
      actions: [wire],
      hooks: [guardrail({ name: 'fraud', on: 'input', parallel: true, check: () => verdict.promise })],
    });
    agent.events.on('toolStart', () => verdict.resolve(undefined));
    expect((await agent.call('send 5 to Bob')).content).toBe('done');
    expect(wired).toEqual([5]);
  });
});

describe('every check gets the call signal and a deadline', () => {
  for (const on of ['input', 'output', 'parallel input'] as const) {
    it(`a never-answering ${on} check: the call ends at the signal's abort, with its reason`, async () => {
      const started = deferred<AbortSignal | undefined>();
      const agent = new AsyncAgent({
        llm: new AsyncMockLLM({ responses: ['hello'] }),
        hooks: [
          guardrail({
            name: 'hangs',
            on: on === 'output' ? 'output' : 'input',
            parallel: on === 'parallel input',
            check: (_message, context) => {
              started.resolve((context as { signal?: AbortSignal }).signal);
              return new Promise(() => {});
            },
          }),
        ],
      });
      const controller = new AbortController();
      const call = agent.call('hi', { sessionId: 1, signal: controller.signal });
      const signal = await started.promise;
      expect(signal).toBeInstanceOf(AbortSignal);
      expect(signal!.aborted).toBe(false);
      const reason = new Error('the user left');
      controller.abort(reason);
      await expect(call).rejects.toBe(reason);
      expect(signal!.aborted).toBe(true);
      expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
    }, 5_000);
  }

  it('a check that does not answer within timeoutMs trips, saying it timed out', async () => {
    vi.useFakeTimers();
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: ['hello'] }),
      hooks: [
        guardrail({
          name: 'slow-moderation',
          on: 'input',
          timeoutMs: 2_000,
          check: () => new Promise(() => {}),
        }),
      ],
    });
    const call = agent.call('hi', { sessionId: 1 });
    const outcome = call.then(
      () => undefined,
      (error: unknown) => error,
    );
    let settled = false;
    void outcome.then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(1_999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = (await outcome) as GuardrailTripped;
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect(error.reason).toBe('its check did not answer within 2000 ms');
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
  });
});

describe('what a synchronous agent cannot wait for', () => {
  it('a synchronous stream refuses an output check that answers later: no chunk is delivered', () => {
    const agent = new StreamingAgent({
      llm: new MockLLM({ responses: ['one two three'], chunkSize: 4 }),
      hooks: [guardrail({ name: 'remote-moderation', on: 'output', check: async () => undefined })],
    });
    const seen: string[] = [];
    expect(() => {
      for (const chunk of agent.call('go', { sessionId: 1 })) seen.push(String(chunk.content));
    }).toThrow(ConfigurationError);
    expect(seen).toEqual([]);
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
  });

  it('a synchronous agent refuses an input check that answers later, before the model is asked', () => {
    const llm = new MockLLM({ responses: ['hello'] });
    const agent = new Agent({
      llm,
      hooks: [guardrail({ name: 'remote-moderation', on: 'input', check: async () => undefined })],
    });
    expect(() => agent.call('hi')).toThrow(/guardrail remote-moderation's check returned a promise/);
    expect(llm.calls).toHaveLength(0);
  });
});

describe('tool checks get the signal too', () => {
  it('a never-answering tool check: the call ends at the abort and the tool never runs', async () => {
    const ran: unknown[] = [];
    const started = deferred<AbortSignal>();
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: [{ content: '', toolCalls: [{ name: 'Wire', arguments: { amount: 1 } }] }, 'done'],
      }),
      actions: [
        asyncTool({
          name: 'Wire',
          parameters: z.object({ amount: z.number() }),
          run: async ({ amount }) => {
            ran.push(amount);
            return 'sent';
          },
        }),
      ],
      hooks: [
        guardrail({
          name: 'hangs',
          on: 'tool',
          check: (_message, context) => {
            started.resolve(context.signal);
            return new Promise(() => {});
          },
        }),
      ],
    });
    const controller = new AbortController();
    const call = agent.call('send', { signal: controller.signal });
    const signal = await started.promise;
    const reason = new Error('the user left');
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    expect(signal.aborted).toBe(true);
    expect(ran).toEqual([]);
  });
});
