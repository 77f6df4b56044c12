import { Agent, type AgentMessage, AsyncAgent, AsyncStreamingAgent, StreamingAgent } from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expectTypeOf, it } from 'vitest';

const syncLlm = new MockLLM({ responses: ['x'] });
const asyncLlm = new AsyncMockLLM({ responses: ['x'] });

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
    expectTypeOf(new Agent({ llm: syncLlm }).call('x')).toEqualTypeOf<AgentMessage>();
    expectTypeOf(new AsyncAgent({ llm: asyncLlm }).call('x')).toEqualTypeOf<Promise<AgentMessage>>();
    expectTypeOf(new StreamingAgent({ llm: syncLlm }).call('x')).toEqualTypeOf<
      Generator<AgentMessage, AgentMessage, undefined>
    >();
    expectTypeOf(new AsyncStreamingAgent({ llm: asyncLlm }).call('x')).toEqualTypeOf<
      AsyncGenerator<AgentMessage, AgentMessage, undefined>
    >();
  });
});
