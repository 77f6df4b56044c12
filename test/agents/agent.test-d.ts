import {
  ActionExecutor,
  type ActionReturn,
  Agent,
  type AgentBase,
  AgentMessage,
  AsyncAgent,
  type AsyncForwardOptions,
  AsyncStreamingAgent,
  type ForwardOptions,
  Hook,
  JSONParser,
  MessageLogger,
  type ParsedReply,
  StreamingAgent,
  ToolParser,
  type ToolResponse,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

const syncLlm = new MockLLM({ responses: ['x'] });
const asyncLlm = new AsyncMockLLM({ responses: ['x'] });
const schema = z.object({ city: z.string(), days: z.number().default(1) });
type Trip = z.infer<typeof schema>;

describe('agent variants and their models', () => {
  it('Agent refuses an async model; AsyncAgent refuses a sync one', () => {
    // @ts-expect-error an async model in a sync agent does not compile
    new Agent({ llm: asyncLlm });
    // @ts-expect-error a sync model in an async agent does not compile
    new AsyncAgent({ llm: syncLlm });
    // @ts-expect-error the same holds for the streaming variants
    new StreamingAgent({ llm: asyncLlm });
    // @ts-expect-error and the async streaming one
    new AsyncStreamingAgent({ llm: syncLlm });
    expectTypeOf(new Agent({ llm: syncLlm })).toEqualTypeOf<Agent>();
  });

  it('sync call returns a message, async call a promise, streaming calls generators', () => {
    type Text = AgentMessage<string, unknown>;
    type Reply = ParsedReply<unknown>;
    expectTypeOf(new Agent({ llm: syncLlm }).call('x')).toEqualTypeOf<Reply>();
    expectTypeOf(new AsyncAgent({ llm: asyncLlm }).call('x')).toEqualTypeOf<Promise<Reply>>();
    expectTypeOf(new StreamingAgent({ llm: syncLlm }).call('x')).toEqualTypeOf<
      Generator<Text, Reply, undefined>
    >();
    expectTypeOf(new AsyncStreamingAgent({ llm: asyncLlm }).call('x')).toEqualTypeOf<
      AsyncGenerator<Text, Reply, undefined>
    >();
  });
});

describe('formatted follows the output parser', () => {
  it('a JSONParser types formatted with the schema, in every variant', () => {
    const reply = new Agent({ llm: syncLlm, outputFormat: new JSONParser({ schema }) }).call('x');
    expectTypeOf(reply).toEqualTypeOf<ParsedReply<Trip>>();
    // The final reply's formatted is never null: a reply the parser cannot read fails the call.
    expectTypeOf(reply.formatted).toEqualTypeOf<Trip>();
    const city: string = reply.formatted.city;
    // @ts-expect-error the schema says city is a string
    const wrong: number = reply.formatted.city;
    // @ts-expect-error and has no field of that name
    reply.formatted.country;
    void [city, wrong];

    const asyncAgent = new AsyncAgent({ llm: asyncLlm, outputFormat: new JSONParser({ schema }) });
    expectTypeOf(asyncAgent.call('x')).toEqualTypeOf<Promise<ParsedReply<Trip>>>();
    const streaming = new StreamingAgent({ llm: syncLlm, outputFormat: new JSONParser({ schema }) });
    // Chunks are partial text: their formatted is null until the parser can read it.
    expectTypeOf(streaming.call('x')).toEqualTypeOf<
      Generator<AgentMessage<string, Trip>, ParsedReply<Trip>, undefined>
    >();
    const asyncStreaming = new AsyncStreamingAgent({
      llm: asyncLlm,
      outputFormat: new JSONParser({ schema }),
    });
    expectTypeOf(asyncStreaming.call('x')).toEqualTypeOf<
      AsyncGenerator<AgentMessage<string, Trip>, ParsedReply<Trip>, undefined>
    >();
  });

  it('a ToolParser types formatted as its ToolResponse', () => {
    const parser = new ToolParser({ toolType: 'python', begin: '```python\n', end: '\n```\n' });
    const reply = new Agent({ llm: syncLlm, outputFormat: parser }).call('x');
    expectTypeOf(reply.formatted).toEqualTypeOf<ToolResponse<string>>();
    // @ts-expect-error toolType is a string or null
    const toolType: number = reply.formatted.toolType;
    void toolType;
  });

  it('without an output format, formatted is unknown and content is text', () => {
    const reply = new Agent({ llm: syncLlm }).call('x');
    expectTypeOf(reply.content).toEqualTypeOf<string>();
    expectTypeOf(reply.formatted).toEqualTypeOf<unknown>();
    // @ts-expect-error an unknown formatted must be narrowed before use
    reply.formatted.city;
  });

  it('the agent type records the parser', () => {
    const agent = new Agent({ llm: syncLlm, outputFormat: new JSONParser({ schema }) });
    expectTypeOf(agent).toEqualTypeOf<Agent<Trip>>();
    expectTypeOf(agent).toExtend<Agent>();
    expectTypeOf(agent).toExtend<AgentBase>();
  });
});

describe('a subclass that overrides forward', () => {
  it('returns what its forward returns', () => {
    const executor = new ActionExecutor({ actions: [tool({ name: 'x', run: () => 1 })] });
    class Coder extends Agent {
      override forward([message]: AgentMessage[], options: ForwardOptions) {
        return executor.call(message!, options);
      }
    }
    // Its input's formatted is unknown, so the executor may have run a text call or native ones.
    expectTypeOf(new Coder().call('x').content).toEqualTypeOf<ActionReturn | ActionReturn[]>();

    class Echo extends Agent {
      override forward(messages: AgentMessage[]) {
        return String(messages.length);
      }
    }
    expectTypeOf(new Echo().call('x')).toEqualTypeOf<AgentMessage<string, null>>();
    expectTypeOf(new Echo().call('x').formatted).toEqualTypeOf<null>();

    class Loose extends Agent {
      override forward(): AgentMessage {
        return new AgentMessage({ content: 1 });
      }
    }
    expectTypeOf(new Loose().call('x')).toEqualTypeOf<AgentMessage>();
  });

  it('in the async and streaming variants too', () => {
    const writer = new AsyncAgent({ llm: asyncLlm, outputFormat: new JSONParser({ schema }) });
    class Blogger extends AsyncAgent {
      override async forward([message]: AgentMessage[], options: AsyncForwardOptions) {
        return writer.call(message!, options);
      }
    }
    // A sub-agent's parsed reply passes through as it is: formatted still never null.
    expectTypeOf(new Blogger().call('x')).toEqualTypeOf<Promise<ParsedReply<Trip>>>();

    const count = (n: number) => new AgentMessage({ content: n, formatted: { n } });
    class Counter extends StreamingAgent {
      override *forward() {
        yield count(1);
        return count(2);
      }
    }
    type Count = AgentMessage<number, { n: number }>;
    expectTypeOf(new Counter().call('x')).toEqualTypeOf<Generator<Count, Count, undefined>>();

    class Words extends AsyncStreamingAgent {
      override async *forward() {
        yield 'a';
        yield 'a b';
      }
    }
    type Text = AgentMessage<string, null>;
    expectTypeOf(new Words().call('x')).toEqualTypeOf<AsyncGenerator<Text, Text, undefined>>();
  });
});

describe('hooks', () => {
  class SyncHook extends Hook {
    override beforeAgent(_agent: AgentBase, messages: AgentMessage[]) {
      return messages;
    }
  }
  class AsyncHook extends Hook {
    override async afterAgent(_agent: AgentBase, message: AgentMessage) {
      return message;
    }
  }

  it('a sync agent takes sync hooks only', () => {
    new Agent({ llm: syncLlm, hooks: [new SyncHook(), new MessageLogger()] });
    new StreamingAgent({ llm: syncLlm, hooks: [new SyncHook()] });
    // @ts-expect-error an async hook in a sync agent does not compile
    new Agent({ llm: syncLlm, hooks: [new AsyncHook()] });
    // @ts-expect-error nor in a sync streaming agent
    new StreamingAgent({ llm: syncLlm, hooks: [new AsyncHook()] });
    const agent = new Agent({ llm: syncLlm });
    agent.registerHook(new SyncHook());
    // @ts-expect-error registerHook refuses it too
    agent.registerHook(new AsyncHook());
  });

  it('an async agent takes both', () => {
    const agent = new AsyncAgent({ llm: asyncLlm, hooks: [new SyncHook(), new AsyncHook()] });
    agent.registerHook(new AsyncHook());
    new AsyncStreamingAgent({ llm: asyncLlm, hooks: [new AsyncHook(), new MessageLogger()] });
  });

  it('a hook returns messages or nothing', () => {
    class Wrong extends Hook {
      override afterAgent() {
        return 42;
      }
    }
    // @ts-expect-error afterAgent must return a message or nothing
    new AsyncAgent({ llm: asyncLlm, hooks: [new Wrong()] });
    // @ts-expect-error in a sync agent too
    new Agent({ llm: syncLlm, hooks: [new Wrong()] });
  });
});

describe('options under exactOptionalPropertyTypes (on in this project)', () => {
  it('accept a signal or session that may be undefined, passed on by hand', () => {
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['x'] }) });
    const maybeSignal: AbortSignal | undefined = undefined as AbortSignal | undefined;
    const maybeSession: string | undefined = undefined as string | undefined;
    expectTypeOf(agent.call).toBeCallableWith('hi', { signal: maybeSignal, sessionId: maybeSession });
    class Outer extends AsyncAgent {
      inner = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['x'] }) });
      override async forward(messages: AgentMessage[], options: AsyncForwardOptions): Promise<AgentMessage> {
        return this.inner.call(messages, { sessionId: options.sessionId, signal: options.signal });
      }
    }
    expectTypeOf(new Outer().call).toBeCallableWith('hi', { temperature: undefined, signal: maybeSignal });
  });
});
