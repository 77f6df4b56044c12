import {
  ActionExecutor,
  type ActionReturn,
  Agent,
  AgentMessage,
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  FunctionCallingAgent,
  type FunctionCallingChunk,
  type FunctionCallingReply,
  type MessageInState,
  Sequential,
  tool,
  toolkit,
} from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentClient } from 'lagent-ts/distributed';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

/** Replies, messages and tools are typed without `any`: what the new user tripped on. */

const weather = tool({
  name: 'weather',
  parameters: z.object({ city: z.string(), days: z.number().default(1) }),
  run: ({ city }) => `${city}: sunny`,
});
const slow = asyncTool({ name: 'slow', parameters: z.object({ ms: z.number() }), run: async () => 'done' });

describe('messages', () => {
  it('default to unknown content and formatted, never any', () => {
    const message = new AgentMessage({ content: 'x' }) as AgentMessage;
    expectTypeOf(message.content).toEqualTypeOf<unknown>();
    expectTypeOf(message.formatted).toEqualTypeOf<unknown>();
    // @ts-expect-error unknown content must be narrowed before use
    message.content.toUpperCase();
  });
});

describe('function-calling agents', () => {
  it('reply with text (formatted null) in every variant', async () => {
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({ responses: [] }),
      actions: [weather],
    });
    expectTypeOf(agent.call('x')).toEqualTypeOf<Promise<FunctionCallingReply>>();
    expectTypeOf((await agent.call('x')).content).toEqualTypeOf<string>();
    const sync = new FunctionCallingAgent({ llm: new MockLLM({ responses: [] }), actions: [weather] });
    expectTypeOf(sync.call('x')).toEqualTypeOf<FunctionCallingReply>();
    expectTypeOf<FunctionCallingReply>().toEqualTypeOf<MessageInState<0, string, null>>();
    expectTypeOf<FunctionCallingReply>().toExtend<AgentMessage<string, null>>();
  });

  it('stream text, tool calls and tool results', () => {
    const agent = new AsyncStreamingFunctionCallingAgent({
      llm: new AsyncMockLLM({ responses: [] }),
      actions: [weather],
    });
    expectTypeOf(agent.call('x')).toEqualTypeOf<
      AsyncGenerator<FunctionCallingChunk, FunctionCallingReply, undefined>
    >();
    expectTypeOf<
      Extract<FunctionCallingChunk, AgentMessage<ActionReturn[], unknown>>['content']
    >().toEqualTypeOf<ActionReturn[]>();
  });

  it('refuse an async tool in a sync agent or executor, saying what to use', () => {
    // @ts-expect-error '~runs': an async tool needs an Async* agent or AsyncActionExecutor
    new FunctionCallingAgent({ llm: new MockLLM({ responses: [] }), actions: [slow] });
    // @ts-expect-error the same for one tool given alone
    new FunctionCallingAgent({ llm: new MockLLM({ responses: [] }), actions: slow });
    // @ts-expect-error and for a sync executor
    new ActionExecutor({ actions: [slow] });
    new AsyncFunctionCallingAgent({ llm: new AsyncMockLLM({ responses: [] }), actions: [slow, weather] });
  });
});

describe('tools', () => {
  it('tool() and toolkit() type their calls from the schema', () => {
    expectTypeOf(weather.call({ city: 'Paris' })).toEqualTypeOf<ActionReturn>();
    weather.call('{"city": "Paris"}'); // JSON text, as a model writes it
    // @ts-expect-error city is a string
    weather.call({ city: 3 });
    // @ts-expect-error a tool has one API, run
    weather.call({ city: 'Paris' }, 'forecast');
    expectTypeOf(slow.call({ ms: 1 })).toEqualTypeOf<Promise<ActionReturn>>();

    const calculator = toolkit({
      name: 'Calculator',
      apis: {
        add: { parameters: z.object({ a: z.number(), b: z.number() }), run: ({ a, b }) => a + b },
        negate: { parameters: z.object({ x: z.number() }), run: ({ x }) => -x },
      },
    });
    calculator.call({ a: 1, b: 2 }, 'add');
    // @ts-expect-error negate takes x
    calculator.call({ a: 1, b: 2 }, 'negate');
    // @ts-expect-error no such API
    calculator.call({ a: 1, b: 2 }, 'divide');
  });
});

describe('composites and remote agents', () => {
  it('a member may reply with anything', () => {
    class Loose extends Agent {
      override forward(): AgentMessage {
        return new AgentMessage({ content: 1 });
      }
    }
    new Sequential(new Loose(), new Agent({ llm: new MockLLM({ responses: [] }) }));
  });

  it('HTTP clients reply with what you declare, unknown by default', async () => {
    const remote = new AsyncHTTPAgentClient({ url: 'http://127.0.0.1:1' });
    expectTypeOf((await remote.call('x')).content).toEqualTypeOf<unknown>();
    const text = new AsyncHTTPAgentClient<string>({ url: 'http://127.0.0.1:1' });
    expectTypeOf((await text.call('x')).content).toEqualTypeOf<string>();
    expectTypeOf(new HTTPAgentClient<string>({ url: 'http://127.0.0.1:1' }).call).returns.toEqualTypeOf<
      AgentMessage<string, unknown>
    >();
  });
});
