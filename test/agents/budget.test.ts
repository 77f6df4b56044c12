import {
  type AgentMessage,
  AsyncAgent,
  AsyncFallbackLLM,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncStreamingAgent,
  asyncTool,
  BudgetExceededError,
  type CallUsage,
  ConfigurationError,
  FunctionCallingAgent,
  setModelPrice,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AsyncCappedMockLLM, CappedMockLLM } from '../helpers/capped-models';

/** A model that calls `Count` on every turn, for ever. */
function looping(model?: string) {
  return new MockLLM({
    model,
    responses: (_messages, _params, i) => ({
      content: '',
      toolCalls: [{ name: 'Count', arguments: { n: i } }],
    }),
  });
}

function counter(runs: number[]) {
  return tool({
    name: 'Count',
    parameters: z.object({ n: z.number() }),
    run: ({ n }) => {
      runs.push(n);
      return `counted ${n}`;
    },
  });
}

function usageOf(reply: AgentMessage): CallUsage {
  return (reply.extraInfo as { usage: CallUsage }).usage;
}

function caught(fn: () => unknown): BudgetExceededError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(BudgetExceededError);
    return error as BudgetExceededError;
  }
  throw new Error('expected a BudgetExceededError');
}

async function rejected(promise: Promise<unknown>): Promise<BudgetExceededError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(BudgetExceededError);
    return error as BudgetExceededError;
  }
  throw new Error('expected a BudgetExceededError');
}

// $1 a prompt token, $2 a completion token: costs are easy to read.
beforeAll(() => setModelPrice('priced-mock', { input: 1_000_000, output: 2_000_000 }));
afterAll(() => setModelPrice('priced-mock', null));

describe('budgets', () => {
  it('modelCalls: the request past the limit is never made; the call fails and takes its turns back', () => {
    const runs: number[] = [];
    const llm = looping();
    const agent = new FunctionCallingAgent({ llm, actions: [counter(runs)], maxTurn: 50 });
    agent.call('first', { sessionId: 's' }); // ends at maxTurn... or not: only the memory before matters
    const before = agent.stateDict('s');
    const calls = llm.calls.length;
    const error = caught(() => agent.call('loop', { sessionId: 's', budget: { modelCalls: 3 } }));
    expect(error.budget).toBe('modelCalls');
    expect(error.limit).toBe(3);
    expect(error.spent).toBe(3); // what was spent: the refused request is not
    expect(llm.calls.length - calls).toBe(3); // zero requests past the budget
    expect(agent.stateDict('s')).toEqual(before);
  });

  it('toolCalls: the tool call past the limit does not run', () => {
    const runs: number[] = [];
    const llm = looping();
    const agent = new FunctionCallingAgent({ llm, actions: [counter(runs)], maxTurn: 50 });
    const error = caught(() => agent.call('loop', { sessionId: 's', budget: { toolCalls: 2 } }));
    expect(error.budget).toBe('toolCalls');
    expect(runs).toHaveLength(2);
    expect(llm.calls).toHaveLength(3); // the third answer asked for the third call
    expect(agent.stateDict('s')).toEqual(
      new FunctionCallingAgent({ llm: looping(), actions: [] }).stateDict('s'),
    );
  });

  it('tokens: a request whose prompt would pass the limit is not made; what was spent is counted', () => {
    const runs: number[] = [];
    const llm = looping();
    const agent = new FunctionCallingAgent({ llm, actions: [counter(runs)], maxTurn: 50 });
    const error = caught(() => agent.call('loop '.repeat(40), { sessionId: 's', budget: { tokens: 600 } }));
    expect(error.budget).toBe('tokens');
    expect(error.spent).toBeLessThanOrEqual(600);
    // Every request made fitted: what was spent before the refused one is within the limit.
    const made = llm.calls.length;
    expect(made).toBeGreaterThan(1);
    const counted = llm.calls.reduce((sum, call) => sum + llm.countTokens(call.messages), 0);
    expect(counted).toBeLessThanOrEqual(600);
    // The cap on the completion is what is left after the prompt.
    const last = llm.calls.at(-1)!.params as { maxNewTokens?: number };
    expect(last.maxNewTokens).toBeLessThan(600);
  });

  it('usd: priced by the model table; a model without a price is a configuration error', async () => {
    const llm = new AsyncMockLLM({ model: 'priced-mock', responses: ['ok', 'ok', 'ok'] });
    const agent = new AsyncAgent({ llm });
    const reply = await agent.call('hi', { sessionId: 1, budget: { usd: 1_000 } });
    const usage = usageOf(reply);
    expect(usage.modelCalls).toBe(1);
    expect(usage.usd).toBe(usage.promptTokens + 2 * usage.completionTokens);
    const error = await rejected(agent.call('hi again', { sessionId: 1, budget: { usd: 2 } }));
    expect(error.budget).toBe('usd');
    expect(llm.calls).toHaveLength(1);
    const unpriced = new AsyncAgent({ llm: new AsyncMockLLM({ model: 'no-price', responses: ['x'] }) });
    await expect(unpriced.call('hi', { budget: { usd: 1 } })).rejects.toThrow(ConfigurationError);
    await expect(unpriced.call('hi', { budget: { usd: 1 } })).rejects.toThrow(/setModelPrice/);
  });

  it("a budgeted call's reply says what it spent; memory keeps no usage; unbudgeted replies carry none", async () => {
    const runs: number[] = [];
    const llm = new AsyncMockLLM({
      model: 'priced-mock',
      responses: [{ content: '', toolCalls: [{ name: 'Count', arguments: { n: 1 } }] }, 'Counted.'],
    });
    const agent = new AsyncFunctionCallingAgent({
      llm,
      actions: [
        asyncTool({ name: 'Count', parameters: z.object({ n: z.number() }), run: async ({ n }) => `${n}` }),
      ],
    });
    const reply = await agent.call('count', { sessionId: 's', budget: {} });
    const usage = usageOf(reply);
    expect(usage).toMatchObject({ modelCalls: 2, toolCalls: 1 });
    expect(usage.totalTokens).toBe(usage.promptTokens + usage.completionTokens);
    expect(usage.promptTokens).toBeGreaterThan(0);
    expect(usage.usd).toBeGreaterThan(0);
    const stored = agent.memory!.get('s')!.getMemory();
    for (const message of stored) expect(JSON.stringify(message.extraInfo ?? null)).not.toContain('usage');
    const plain = await new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['x'] }) }).call('hi');
    expect(plain.extraInfo).toBeFalsy();
    expect(runs).toEqual([]);
  });

  it("inherited down the tree: sub-agents of a composite count in the caller's budget, and a nested budget holds too", async () => {
    const llm = new AsyncMockLLM({ responses: (_m, _p, i) => `answer ${i}` });
    class Pair extends AsyncAgent {
      a = new AsyncAgent({ llm, name: 'a' });
      b = new AsyncAgent({ llm, name: 'b' });
      override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
        const first = await this.a.call(messages, { sessionId: options.sessionId });
        const second = await this.b.call(first, { sessionId: options.sessionId, budget: { modelCalls: 5 } });
        return second;
      }
    }
    const pair = new Pair();
    const reply = await pair.call('go', { sessionId: 1, budget: { modelCalls: 2 } });
    expect(usageOf(reply).modelCalls).toBe(2);
    // Three requests would be needed by two pairs of calls: the second call's second request is refused.
    const error = await rejected(pair.call('go', { sessionId: 2, budget: { modelCalls: 1 } }));
    expect(error.message).toMatch(/modelCalls budget \(1\)/);
    expect(llm.calls).toHaveLength(3);
    expect(pair.a.memory!.get(2)?.length ?? 0).toBe(0); // the first sub-call's turn was taken back
  });

  it('counts what the API reports (onUsage) rather than an estimate', async () => {
    const server = await startFakeOpenAI({
      script: [{ content: 'hello', usage: { prompt_tokens: 123, completion_tokens: 7 } }],
    });
    try {
      const llm = new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: server.baseURL });
      const reply = await new AsyncAgent({ llm }).call('hi', { budget: { usd: 1 } });
      expect(usageOf(reply)).toMatchObject({
        promptTokens: 123,
        completionTokens: 7,
        totalTokens: 130,
        modelCalls: 1,
      });
      expect(usageOf(reply).usd).toBeCloseTo((123 * 2.5 + 7 * 10) / 1_000_000, 12);
    } finally {
      await server.close();
    }
  });

  it('streaming agents are counted and refused too', async () => {
    const llm = new AsyncMockLLM({ responses: ['one two three four', 'five'] });
    const agent = new AsyncStreamingAgent({ llm });
    let last: AgentMessage | undefined;
    for await (const chunk of agent.call('hi', { sessionId: 1, budget: { modelCalls: 1 } })) last = chunk;
    expect(usageOf(last!)).toMatchObject({ modelCalls: 1 });
    expect(usageOf(last!).completionTokens).toBeGreaterThan(0);
    const stream = agent.call('again', { sessionId: 1, budget: { modelCalls: 0 } });
    await expect(
      (async () => {
        for await (const _ of stream);
      })(),
    ).rejects.toThrow(BudgetExceededError);
    expect(llm.calls).toHaveLength(1);
    expect(agent.memory!.get(1)!.length).toBe(2);
  });

  it('a malformed budget is a configuration error', () => {
    const agent = new FunctionCallingAgent({ llm: looping(), actions: [] });
    expect(() => agent.call('x', { budget: { tokenz: 3 } as never })).toThrow(/unknown limit "tokenz"/);
    expect(() => agent.call('x', { budget: { tokens: -1 } })).toThrow(/budget.tokens must be a number >= 0/);
    expect(() => agent.call('x', { budget: 5 as never })).toThrow(ConfigurationError);
  });
});

describe('budgets that hold', () => {
  const price = { input: 1_000_000, output: 2_000_000 }; // 'priced-mock': $1 a prompt token, $2 a completion token

  it('usd counts the completion: the request is capped to what is left, and the cost stays within the limit', async () => {
    const long = 'word '.repeat(400); // ~500 tokens
    const llm = new AsyncCappedMockLLM({ model: 'priced-mock', responses: [long, long] });
    const agent = new AsyncAgent({ llm });
    const prompt = llm.countTokens([{ role: 'user', content: 'hi' }]);
    const limit = prompt + 2 * 40 + 0.5; // the prompt and 40 completion tokens (and half a dollar)
    const reply = await agent.call('hi', { sessionId: 1, budget: { usd: limit } });
    expect(llm.calls[0]!.params.maxNewTokens).toBe(40);
    expect(llm.cost(price)).toBeLessThanOrEqual(limit);
    expect(usageOf(reply).usd).toBe(llm.cost(price));
    // No room for one completion token after the prompt: not made.
    const error = await rejected(agent.call('hi', { sessionId: 2, budget: { usd: prompt + 1.5 } }));
    expect(error.budget).toBe('usd');
    expect(llm.calls).toHaveLength(1);
  });

  it('usd: a completion the model may make past the limit is not asked for ($0.512 on $0.001)', async () => {
    const llm = new AsyncCappedMockLLM({ model: 'gpt-4o', responses: ['word '.repeat(50_000)] });
    const agent = new AsyncAgent({ llm, name: 'writer' });
    await agent.call('Write a long essay', { budget: { usd: 0.001 } }).catch(() => undefined);
    expect(llm.cost({ input: 2.5, output: 10 })).toBeLessThanOrEqual(0.001);
  });

  it('BudgetExceededError.spent is what its message says was spent', () => {
    const agent = new FunctionCallingAgent({ llm: looping(), actions: [counter([])], maxTurn: 50 });
    const calls = caught(() => agent.call('loop', { budget: { modelCalls: 3 } }));
    expect(calls.spent).toBe(3);
    expect(calls.message).toContain(`${calls.spent} spent`);
    const tokens = caught(() => agent.call('loop '.repeat(40), { budget: { tokens: 600 } }));
    expect(tokens.spent).toBeLessThanOrEqual(600);
    expect(tokens.message).toContain(`${tokens.spent} spent`);
  });

  it('tool definitions count in the prompt ({ tokens: 500 } never spends 2,000)', () => {
    const llm = new CappedMockLLM({ responses: ['done'] });
    const big = tool({
      name: 'Lookup',
      description: `Looks a record up. ${'It takes a key and answers with the record. '.repeat(150)}`,
      parameters: z.object({ key: z.string() }),
      run: ({ key }) => key,
    });
    const agent = new FunctionCallingAgent({ llm, actions: [big] });
    const error = caught(() => agent.call('find the record of Ada', { budget: { tokens: 500 } }));
    expect(error.budget).toBe('tokens');
    expect(error.message).toMatch(/tool definitions/);
    expect(llm.calls).toHaveLength(0);
    expect(llm.total()).toBe(0);
    // With room for them, a request's prompt is what the provider bills: messages and tools.
    const reply = agent.call('find the record of Ada', { budget: { tokens: 5_000 } });
    expect(usageOf(reply).promptTokens).toBe(llm.spent[0]!.promptTokens);
    expect(usageOf(reply).promptTokens).toBeGreaterThan(1_000);
  });

  it('parallel sub-agents cannot together pass the budget (4,000 tokens of 1,000)', async () => {
    const llm = new AsyncCappedMockLLM({ responses: () => 'word '.repeat(800), latencyMs: 1 });
    class Fan extends AsyncAgent {
      branches = [0, 1, 2, 3].map((i) => new AsyncAgent({ llm, name: `branch${i}` }));
      override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
        const replies = await Promise.all(
          this.branches.map((branch) => branch.call(messages, { sessionId: options.sessionId })),
        );
        return replies.map((reply) => reply.content).join('\n');
      }
    }
    await new Fan().call('go', { budget: { tokens: 1_000 } }).catch(() => undefined);
    expect(llm.total()).toBeLessThanOrEqual(1_000);
  });
});

describe('every attempt counts', () => {
  it('each HTTP attempt of a retry is a model request, with its prompt; a retry past the budget is not sent', async () => {
    const server = await startFakeOpenAI({
      script: [
        { status: 500 },
        { status: 503 },
        { content: 'at last', usage: { prompt_tokens: 20, completion_tokens: 2 } },
      ],
    });
    try {
      const llm = new AsyncGPTAPI({
        model: 'gpt-4o',
        apiKey: 'k',
        baseURL: server.baseURL,
        retryMinDelayMs: 1,
      });
      const agent = new AsyncAgent({ llm });
      const reply = await agent.call('hi', { budget: {} });
      expect(usageOf(reply).modelCalls).toBe(3);
      const prompt = llm.countTokens([{ role: 'user', content: 'hi' }]);
      expect(usageOf(reply).promptTokens).toBe(20 + 2 * prompt);
      server.setScript([{ status: 500 }, { status: 500 }, 'never sent']);
      const error = await rejected(agent.call('hi', { sessionId: 2, budget: { modelCalls: 2 } }));
      expect(error.budget).toBe('modelCalls');
      expect(server.requests).toHaveLength(5);
    } finally {
      await server.close();
    }
  });

  it('each model a fallback chain tries is a model request', async () => {
    const failing = await startFakeOpenAI({ script: () => ({ status: 500 }) });
    const working = await startFakeOpenAI({
      script: () => ({ content: 'ok', usage: { prompt_tokens: 9, completion_tokens: 1 } }),
    });
    try {
      const llm = new AsyncFallbackLLM(
        [
          new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: failing.baseURL, retry: 0 }),
          new AsyncGPTAPI({ model: 'gpt-4o-mini', apiKey: 'k', baseURL: working.baseURL, retry: 0 }),
          // Both calls ask the failing model first (no cool-down skipping it on the second).
        ],
        { coolDownMs: 0 },
      );
      const reply = await new AsyncAgent({ llm }).call('hi', { budget: { usd: 1 } });
      expect(usageOf(reply).modelCalls).toBe(2);
      expect(usageOf(reply).promptTokens).toBeGreaterThan(9);
      // The answer is priced as the model that gave it (gpt-4o-mini), the failed attempt's prompt as gpt-4o.
      expect(usageOf(reply).usd).toBeGreaterThan((9 * 0.15 + 0.6) / 1_000_000);
      const error = await rejected(new AsyncAgent({ llm }).call('hi', { budget: { modelCalls: 1 } }));
      expect(error.budget).toBe('modelCalls');
      expect(working.requests).toHaveLength(1);
    } finally {
      await failing.close();
      await working.close();
    }
  });
});

describe('usd at the rates the provider bills', () => {
  it('cached prompt tokens cost the cache rate, reasoning tokens the output rate', async () => {
    const server = await startFakeOpenAI({
      script: [
        {
          content: 'ok',
          usage: {
            prompt_tokens: 1000,
            completion_tokens: 100,
            cached_tokens: 800,
            reasoning_tokens: 60,
          },
        },
      ],
    });
    try {
      const llm = new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: server.baseURL });
      const reply = await new AsyncAgent({ llm }).call('hi', { budget: { usd: 1 } });
      expect(usageOf(reply).usd).toBeCloseTo((200 * 2.5 + 800 * 1.25 + 100 * 10) / 1_000_000, 15);
    } finally {
      await server.close();
    }
  });
});

describe('a failed request gives its hold back and is charged what it used', () => {
  it('a stream that fails midway is charged its prompt and the text it gave; its hold is released', async () => {
    class Breaking extends AsyncMockLLM {
      override async *streamChat(messages: never, params?: never) {
        let sent = 0;
        for await (const chunk of super.streamChat(messages, params)) {
          if (++sent > 2) throw new Error('connection lost');
          yield chunk;
        }
      }
    }
    const failing = new AsyncStreamingAgent({
      llm: new Breaking({ responses: ['word '.repeat(100)], chunkSize: 20 }),
      name: 'failing',
    });
    const after = new AsyncCappedMockLLM({ responses: ['fine'], maxNewTokens: 5_000 });
    class Tolerant extends AsyncAgent {
      first = failing;
      second = new AsyncAgent({ llm: after, name: 'second' });
      override async forward(messages: AgentMessage[]) {
        try {
          for await (const _ of this.first.call(messages));
        } catch {
          // the first answer is optional
        }
        return this.second.call(messages);
      }
    }
    const reply = await new Tolerant().call('go', { budget: { tokens: 1_000 } });
    const usage = usageOf(reply);
    expect(usage.modelCalls).toBe(2);
    // The failed stream: its prompt and the 40 characters it gave (10 tokens); the second request had the rest.
    const failedPrompt = usage.promptTokens - after.spent[0]!.promptTokens;
    expect(failedPrompt).toBeGreaterThan(0);
    expect(usage.completionTokens - after.spent[0]!.completionTokens).toBe(10);
    expect(after.calls[0]!.params.maxNewTokens).toBe(
      1_000 - failedPrompt - 10 - after.spent[0]!.promptTokens,
    );
  });
});
