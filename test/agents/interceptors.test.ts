import {
  Agent,
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  type AsyncInterceptor,
  AsyncStreamingAgent,
  asyncTool,
  ConfigurationError,
  FunctionCallingAgent,
  type StepsInterceptor,
  type SyncInterceptor,
  slot,
  TimeoutError,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

/*
 * Users' interceptors: the seam every built-in concern uses, open to users (`agent.use()`, the `interceptors`
 * option). Each test asserts what an interceptor sees and what it changes, on the variants it serves.
 */

/** A model that calls `Add` once, then answers with what the tool said. */
const adding = () => ({
  responses: (messages: { role: string; content: unknown }[], _params: unknown, index: number) =>
    index === 0
      ? { content: '', toolCalls: [{ id: 'c1', name: 'Add', arguments: { a: 2, b: 3 } }] }
      : `sum is ${String(messages.at(-1)?.content)}`,
});

const add = tool({
  name: 'Add',
  description: 'Adds two numbers',
  parameters: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }) => String(a + b),
});

const asyncAdd = asyncTool({
  name: 'Add',
  description: 'Adds two numbers',
  parameters: z.object({ a: z.number(), b: z.number() }),
  run: async ({ a, b }) => String(a + b),
});

describe('an async interceptor', () => {
  it('sees and may change the call, each model request and each tool call, in order', async () => {
    const seen: string[] = [];
    const logger: AsyncInterceptor = {
      name: 'logger',
      async agentCall(ctx, next) {
        const input = ctx.messages[0]?.content;
        seen.push(
          `agent '${ctx.path}' ${String(ctx.sessionId)} ${typeof input === 'string' ? input : 'tool results'}`,
        );
        const reply = await next();
        seen.push(`reply ${String(reply.content)}`);
        return reply;
      },
      async modelCall(ctx, next) {
        seen.push(`model ${ctx.messages.length} tools=${ctx.params.tools?.length ?? 0}`);
        return next();
      },
      async toolCall(ctx, next) {
        seen.push(
          `tool ${ctx.toolCall.name} ${JSON.stringify(ctx.toolCall.arguments)} in ${ctx.call.agent.name}`,
        );
        const result = await next();
        seen.push(`result ${JSON.stringify(result.result)}`);
        return result;
      },
    };
    const llm = new AsyncMockLLM(adding());
    const agent = new AsyncFunctionCallingAgent({ name: 'calc', llm, actions: [asyncAdd] });
    agent.use(logger);
    const reply = await agent.call('2+3?', { sessionId: 's1' });
    expect(reply.content).toBe('sum is 5');
    expect(seen).toEqual([
      // The loop's model-facing sub-agent ('agent') is called once per model turn, inside the loop's call ('').
      "agent '' s1 2+3?",
      "agent 'agent' s1 2+3?",
      'model 1 tools=1',
      'reply ',
      'tool Add {"a":2,"b":3} in calc',
      'result [{"type":"text","content":"5"}]',
      "agent 'agent' s1 tool results",
      'model 3 tools=1',
      'reply sum is 5',
      'reply sum is 5',
    ]);
  });

  it('that answers itself skips the model, and its answer is remembered as the reply', async () => {
    const llm = new AsyncMockLLM({ responses: ['from the model'] });
    const cache: AsyncInterceptor = {
      name: 'cache',
      async modelCall(ctx, next) {
        if (String(ctx.messages.at(-1)?.content) === 'cached?')
          return { content: 'from the cache', toolCalls: [] };
        return next();
      },
    };
    const agent = new AsyncAgent({ llm, interceptors: [cache] });
    expect((await agent.call('cached?')).content).toBe('from the cache');
    expect(llm.calls).toHaveLength(0);
    expect((await agent.call('not cached')).content).toBe('from the model');
    expect(llm.calls).toHaveLength(1);
    expect(agent.memory!.getMemory().map((m) => m.content)).toEqual([
      'cached?',
      'from the cache',
      'not cached',
      'from the model',
    ]);
  });

  it('that answers what is not a model reply fails the call with what it gave, and memory is untouched', async () => {
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: ['unused'] }),
      interceptors: [{ name: 'broken', modelCall: async () => ({ text: 'oops' }) as never }],
    });
    await expect(agent.call('hi', { sessionId: 's' })).rejects.toThrow(
      /answered an object with text; a model reply is a string or \{ content: string, toolCalls\? \}/,
    );
    expect(agent.memory!.getMemory('s')).toEqual([]);
  });

  it('passes a changed context to next: a redactor the model never sees past', async () => {
    const llm = new AsyncMockLLM({ responses: (messages) => `saw: ${String(messages.at(-1)?.content)}` });
    const redactor: AsyncInterceptor = {
      name: 'redactor',
      modelCall(ctx, next) {
        ctx.messages = ctx.messages.map((m) =>
          typeof m.content === 'string' ? { ...m, content: m.content.replace(/\d{4}-\d{4}/g, '[card]') } : m,
        );
        return next(ctx);
      },
    };
    const agent = new AsyncAgent({ llm, interceptors: [redactor] });
    const reply = await agent.call('pay with 1234-5678');
    expect(reply.content).toBe('saw: pay with [card]');
    // Memory keeps what the user said; only the request was changed.
    expect(agent.memory!.getMemory()[0]!.content).toBe('pay with 1234-5678');
  });

  it('refuses a second next() with a ConfigurationError, and the failed call is taken back', async () => {
    const twice: AsyncInterceptor = {
      name: 'twice',
      async agentCall(_ctx, next) {
        await next();
        return next();
      },
    };
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['a', 'b'] }), interceptors: [twice] });
    const error = await agent.call('hi', { sessionId: 's' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toContain('interceptor twice called next() twice');
    expect(agent.memory!.getMemory('s')).toEqual([]);
  });

  it('a failing hook fails the call and leaves the session as it was', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['ok', 'ok again'] }) });
    await agent.call('first', { sessionId: 's' });
    let refuse = true;
    agent.use({
      name: 'gate',
      async modelCall(_ctx, next) {
        if (refuse) throw new Error('refused');
        return next();
      },
    });
    await expect(agent.call('second', { sessionId: 's' })).rejects.toThrow('refused');
    expect(agent.memory!.getMemory('s').map((m) => m.content)).toEqual(['first', 'ok']);
    refuse = false;
    expect((await agent.call('third', { sessionId: 's' })).content).toBe('ok again');
  });
});

describe('interceptors down the tree', () => {
  it("apply to the agent's calls and every call made inside them, outermost first", async () => {
    const order: string[] = [];
    const named = (name: string): AsyncInterceptor => ({
      name,
      async agentCall(ctx, next) {
        order.push(`${name}>${ctx.agent.name}`);
        const reply = await next();
        order.push(`${name}<${ctx.agent.name}`);
        return reply;
      },
    });
    class Pipeline extends AsyncAgent {
      inner = new AsyncAgent({ name: 'inner', llm: new AsyncMockLLM({ responses: () => 'inner says hi' }) });
      override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
        const reply = await this.inner.call(messages, { sessionId: options.sessionId });
        return `outer got: ${String(reply.content)}`;
      }
    }
    const pipeline = new Pipeline({ name: 'pipeline', interceptors: [named('a')] });
    pipeline.use(named('b'));
    pipeline.inner.use(named('c'));
    const reply = await pipeline.call('hi');
    expect(reply.content).toBe('outer got: inner says hi');
    expect(order).toEqual([
      'a>pipeline',
      'b>pipeline',
      'a>inner',
      'b>inner',
      'c>inner',
      'c<inner',
      'b<inner',
      'a<inner',
      'b<pipeline',
      'a<pipeline',
    ]);
    // The sub-agent called on its own has only its own.
    order.length = 0;
    await pipeline.inner.call('alone');
    expect(order).toEqual(['c>inner', 'c<inner']);
  });

  it('keep their state in slots: a tool hook finds what the enclosing agent call set', async () => {
    const REQUEST = slot<string>('request-id');
    const tagged: string[] = [];
    const agent = new AsyncFunctionCallingAgent({
      name: 'calc',
      llm: new AsyncMockLLM(adding()),
      actions: [asyncAdd],
      interceptors: [
        {
          name: 'request-id',
          async agentCall(ctx, next) {
            ctx.set(REQUEST, `req-${String(ctx.sessionId)}`);
            return next();
          },
          async toolCall(ctx, next) {
            tagged.push(`${ctx.toolCall.name}@${ctx.find(REQUEST)}:${String(ctx.get(REQUEST))}`);
            return next();
          },
        },
      ],
    });
    await agent.call('2+3?', { sessionId: 7 });
    // The tool call's own slots are empty; find() reaches the agent call's.
    expect(tagged).toEqual(['Add@req-7:undefined']);
  });
});

describe('one interceptor written as steps serves every variant', () => {
  const counting = () => {
    const counts = { agent: 0, model: 0, tool: 0 };
    const interceptor: StepsInterceptor = {
      name: 'counting',
      steps: true,
      *agentCall(_ctx, next) {
        counts.agent++;
        return yield* next();
      },
      *modelCall(_ctx, next) {
        counts.model++;
        return yield* next();
      },
      *toolCall(_ctx, next) {
        counts.tool++;
        return yield* next();
      },
    };
    return { counts, interceptor };
  };

  it('a sync agent', () => {
    const { counts, interceptor } = counting();
    const agent = new FunctionCallingAgent({
      llm: new MockLLM(adding()),
      actions: [add],
      interceptors: [interceptor],
    });
    expect(agent.call('2+3?').content).toBe('sum is 5');
    expect(counts).toEqual({ agent: 3, model: 2, tool: 1 });
  });

  it('an async agent', async () => {
    const { counts, interceptor } = counting();
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM(adding()),
      actions: [asyncAdd],
      interceptors: [interceptor],
    });
    expect((await agent.call('2+3?')).content).toBe('sum is 5');
    expect(counts).toEqual({ agent: 3, model: 2, tool: 1 });
  });

  it('an async streaming agent: the chunks still stream through it', async () => {
    const { counts, interceptor } = counting();
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: ['hello world'], chunkSize: 4 }),
      interceptors: [interceptor],
    });
    const contents: unknown[] = [];
    for await (const chunk of agent.call('hi')) contents.push(chunk.content);
    expect(contents).toEqual(['hell', 'hello wo', 'hello world', 'hello world']);
    expect(counts).toEqual({ agent: 1, model: 1, tool: 0 });
  });

  it('a steps hook may yield a promise to await it in an async call; a sync call refuses it', async () => {
    const waiting: StepsInterceptor = {
      name: 'waiting',
      steps: true,
      *agentCall(_ctx, next) {
        const word = (yield Promise.resolve('awaited')) as string;
        const reply = yield* next();
        reply.content = `${String(reply.content)} (${word})`;
        return reply;
      },
    };
    const asyncAgent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: ['ok'] }),
      interceptors: [waiting],
    });
    expect((await asyncAgent.call('hi')).content).toBe('ok (awaited)');
    const syncAgent = new Agent({ llm: new MockLLM({ responses: ['ok'] }), interceptors: [waiting] });
    expect(() => syncAgent.call('hi')).toThrow();
    expect(syncAgent.memory!.getMemory()).toEqual([]);
  });
});

describe('an async interceptor on an async streaming agent', () => {
  it('does not hold back the chunks while it awaits next()', async () => {
    const events: string[] = [];
    const wrapper: AsyncInterceptor = {
      name: 'wrapper',
      async agentCall(_ctx, next) {
        events.push('before');
        const reply = await next();
        events.push('after');
        return reply;
      },
    };
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: ['abcdef'], chunkSize: 2 }),
      interceptors: [wrapper],
    });
    for await (const chunk of agent.call('hi')) events.push(String(chunk.content));
    // Chunks arrive while the hook is still waiting for next(): 'after' comes once the stream has ended.
    expect(events).toEqual(['before', 'ab', 'abcd', 'abcdef', 'after', 'abcdef']);
  });
});

describe('a sync interceptor', () => {
  it('gets the result itself from next()', () => {
    const lengths: number[] = [];
    const measure: SyncInterceptor = {
      name: 'measure',
      agentCall(_ctx, next) {
        const reply = next();
        lengths.push(String(reply.content).length);
        return reply;
      },
    };
    const agent = new Agent({ llm: new MockLLM({ responses: ['four'] }), interceptors: [measure] });
    expect(agent.call('hi').content).toBe('four');
    expect(lengths).toEqual([4]);
  });
});

describe('interceptors given wrongly', () => {
  it('are refused when the agent is made or use() is called, with what is wrong', () => {
    expect(() => new Agent({ interceptors: [{ name: '' } as never] })).toThrow(/needs a name/);
    expect(() => new Agent({ interceptors: [{ name: 'x' } as never] })).toThrow(
      /has none of agentCall, modelCall, toolCall/,
    );
    expect(() => new Agent({ interceptors: [{ name: 'x', toolCall: 3 } as never] })).toThrow(
      /toolCall must be a function/,
    );
    expect(() => new Agent({ interceptors: 'x' as never })).toThrow(ConfigurationError);
    expect(
      () => new Agent({ interceptors: [{ name: 'x', steps: true, toolCall: () => null } as never] }),
    ).toThrow(/says steps: true, but its toolCall is not a generator function/);
    const agent = new Agent();
    expect(() => agent.use(null as never)).toThrow(ConfigurationError);
    expect(agent.interceptors).toEqual([]);
  });
});

describe('timeoutMs: a concern added as one interceptor', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends a call that has not finished in time with a TimeoutError, however deep, and takes it back', async () => {
    vi.useFakeTimers();
    let toolSignal: AbortSignal | undefined;
    const slowTool = asyncTool({
      name: 'Slow',
      description: 'Never ends on its own',
      parameters: z.object({}),
      run: (_args, { signal }) => {
        toolSignal = signal;
        return new Promise<string>(() => {});
      },
    });
    const agent = new AsyncFunctionCallingAgent({
      name: 'slow',
      llm: new AsyncMockLLM({
        responses: [{ content: '', toolCalls: [{ id: 'c1', name: 'Slow', arguments: {} }] }],
      }),
      actions: [slowTool],
    });
    const call = agent.call('go', { sessionId: 's', timeoutMs: 1_000 });
    const settled = call.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    await vi.advanceTimersByTimeAsync(999);
    expect(toolSignal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await settled;
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as Error).message).toBe('slow.call timed out after 1000 ms');
    expect(toolSignal?.aborted).toBe(true);
    expect(agent.memory!.getMemory('s')).toEqual([]);
  });

  it('leaves a call that finishes in time alone and clears its timer', async () => {
    vi.useFakeTimers();
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['quick'] }) });
    expect((await agent.call('hi', { timeoutMs: 1_000 })).content).toBe('quick');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('refuses a timeoutMs that is not a positive number', async () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['x'] }) });
    await expect(agent.call('hi', { timeoutMs: 0 })).rejects.toThrow(/timeoutMs must be a positive number/);
    await expect(agent.call('hi', { timeoutMs: Number.NaN })).rejects.toThrow(ConfigurationError);
  });
});
