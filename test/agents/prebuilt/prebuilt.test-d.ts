import {
  type ActionReturn,
  AgentForInternLM,
  type AgentMessage,
  AgentStatusCode,
  AsyncAgentForInternLM,
  AsyncMathCoder,
  AsyncReAct,
  AsyncStreamingAgentForInternLM,
  AsyncStreamingFunctionCallingAgent,
  MathCoder,
  ReAct,
  type ReActParseFailure,
  type ReActStep,
  StreamingAgentForInternLM,
  type ToolCall,
  type ToolResponse,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expectTypeOf, it } from 'vitest';
import { asyncFakePython, fakePython } from '../../helpers/tools';

const syncLlm = new MockLLM({ responses: ['x'] });
const asyncLlm = new AsyncMockLLM({ responses: ['x'] });

describe('prebuilt agents and their parts', () => {
  it('sync agents refuse async models and tools; async ones take both kinds of tool', () => {
    // @ts-expect-error an async model in a sync ReAct does not compile
    new ReAct({ llm: asyncLlm, actions: [fakePython] });
    // @ts-expect-error an async tool in a sync ReAct does not compile
    new ReAct({ llm: syncLlm, actions: [asyncFakePython] });
    // @ts-expect-error a sync model in AsyncReAct does not compile
    new AsyncReAct({ llm: syncLlm, actions: [fakePython] });
    new AsyncReAct({ llm: asyncLlm, actions: [fakePython, asyncFakePython] });
    // @ts-expect-error an async interpreter in a sync AgentForInternLM does not compile
    new AgentForInternLM({ llm: syncLlm, interpreter: asyncFakePython });
    // @ts-expect-error an async model in a sync MathCoder does not compile
    new MathCoder({ llm: asyncLlm, interpreter: fakePython });
    // @ts-expect-error MathCoder needs an interpreter
    new MathCoder({ llm: syncLlm });
    new AsyncMathCoder({ llm: asyncLlm, interpreter: asyncFakePython });
    new AsyncAgentForInternLM({ llm: asyncLlm, plugins: [fakePython, asyncFakePython] });
    // @ts-expect-error a sync model in the async streaming agent does not compile
    new AsyncStreamingAgentForInternLM({ llm: syncLlm });
  });

  it('types the replies', async () => {
    const react = new ReAct({ llm: syncLlm, actions: [fakePython] });
    expectTypeOf(react.call('x').formatted).toEqualTypeOf<ReActStep | ReActParseFailure | null>();
    const asyncReact = new AsyncReAct({ llm: asyncLlm, actions: [asyncFakePython] });
    expectTypeOf((await asyncReact.call('x')).formatted).toEqualTypeOf<
      ReActStep | ReActParseFailure | null
    >();
    const internLM = new AgentForInternLM({ llm: syncLlm, plugins: [fakePython] });
    expectTypeOf(internLM.call('x').formatted).toEqualTypeOf<ToolResponse | null>();
    const streaming = new StreamingAgentForInternLM({ llm: syncLlm, interpreter: fakePython });
    for (const chunk of streaming.call('x')) expectTypeOf(chunk).toExtend<AgentMessage>();
  });

  it('streamed chunks narrow on streamState: content and formatted follow the state', async () => {
    const agent = new AsyncStreamingFunctionCallingAgent({ llm: asyncLlm, actions: [asyncFakePython] });
    for await (const chunk of agent.call('x')) {
      if (chunk.streamState === AgentStatusCode.PLUGIN_RETURN) {
        expectTypeOf(chunk.content).toEqualTypeOf<ActionReturn[]>();
        expectTypeOf(chunk.formatted).toEqualTypeOf<{ toolCalls: ToolCall[] }>();
      } else if (chunk.streamState === AgentStatusCode.PLUGIN_END) {
        expectTypeOf(chunk.content).toEqualTypeOf<string>();
        expectTypeOf(chunk.formatted.toolCalls).toEqualTypeOf<ToolCall[]>();
      } else {
        expectTypeOf(chunk.content).toEqualTypeOf<string>();
        expectTypeOf(chunk.formatted).toEqualTypeOf<null>();
      }
    }
    const internLM = new AsyncStreamingAgentForInternLM({ llm: asyncLlm, interpreter: asyncFakePython });
    for await (const chunk of internLM.call('x')) {
      if (chunk.streamState === AgentStatusCode.CODE_END) {
        expectTypeOf(chunk.formatted).toEqualTypeOf<ToolResponse>();
        expectTypeOf(chunk.content).toEqualTypeOf<string>();
      } else if (
        chunk.streamState === AgentStatusCode.STREAM_ING ||
        chunk.streamState === AgentStatusCode.CODING
      ) {
        expectTypeOf(chunk.content).toEqualTypeOf<string>();
        expectTypeOf(chunk.formatted).toEqualTypeOf<ToolResponse | null>();
      }
    }
  });
});
