import {
  AgentForInternLM,
  type AgentMessage,
  AsyncAgentForInternLM,
  AsyncMathCoder,
  AsyncReAct,
  AsyncStreamingAgentForInternLM,
  asyncTool,
  MathCoder,
  ReAct,
  type ReActParseFailure,
  type ReActStep,
  StreamingAgentForInternLM,
  type ToolResponse,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

const syncLlm = new MockLLM({ responses: ['x'] });
const asyncLlm = new AsyncMockLLM({ responses: ['x'] });
const syncTool = tool({
  name: 'Echo',
  description: 'echo',
  parameters: z.object({ command: z.string() }),
  run: (a) => a,
});
const slowTool = asyncTool({
  name: 'Echo',
  description: 'echo',
  parameters: z.object({ command: z.string() }),
  run: async (a) => a,
});

describe('prebuilt agents and their parts', () => {
  it('sync agents refuse async models and tools; async ones take both kinds of tool', () => {
    // @ts-expect-error an async model in a sync ReAct does not compile
    new ReAct({ llm: asyncLlm, actions: [syncTool] });
    // @ts-expect-error an async tool in a sync ReAct does not compile
    new ReAct({ llm: syncLlm, actions: [slowTool] });
    // @ts-expect-error a sync model in AsyncReAct does not compile
    new AsyncReAct({ llm: syncLlm, actions: [syncTool] });
    new AsyncReAct({ llm: asyncLlm, actions: [syncTool, slowTool] });
    // @ts-expect-error an async interpreter in a sync AgentForInternLM does not compile
    new AgentForInternLM({ llm: syncLlm, interpreter: slowTool });
    // @ts-expect-error an async model in a sync MathCoder does not compile
    new MathCoder({ llm: asyncLlm, interpreter: syncTool });
    // @ts-expect-error MathCoder needs an interpreter
    new MathCoder({ llm: syncLlm });
    new AsyncMathCoder({ llm: asyncLlm, interpreter: slowTool });
    new AsyncAgentForInternLM({ llm: asyncLlm, plugins: [syncTool, slowTool] });
    // @ts-expect-error a sync model in the async streaming agent does not compile
    new AsyncStreamingAgentForInternLM({ llm: syncLlm });
  });

  it('types the replies', async () => {
    const react = new ReAct({ llm: syncLlm, actions: [syncTool] });
    expectTypeOf(react.call('x').formatted).toEqualTypeOf<ReActStep | ReActParseFailure | null>();
    const asyncReact = new AsyncReAct({ llm: asyncLlm, actions: [slowTool] });
    expectTypeOf((await asyncReact.call('x')).formatted).toEqualTypeOf<
      ReActStep | ReActParseFailure | null
    >();
    const internLM = new AgentForInternLM({ llm: syncLlm, plugins: [syncTool] });
    expectTypeOf(internLM.call('x').formatted).toEqualTypeOf<ToolResponse | null>();
    const streaming = new StreamingAgentForInternLM({ llm: syncLlm, interpreter: syncTool });
    for (const chunk of streaming.call('x')) expectTypeOf(chunk).toExtend<AgentMessage>();
  });
});
