import type {
  AsyncBaseLLM,
  AsyncGPTAPI,
  AsyncVllmModel,
  BaseAction,
  BaseLLM,
  GPTAPI,
  LLMCallParams,
  LMDeployServer,
  ModelReply,
  OpenAITool,
  StreamChunk,
  ToolCall,
  ToolSpec,
  VllmModel,
} from 'lagent-ts';
import { Agent, AsyncAgent } from 'lagent-ts';
import { describe, expectTypeOf, it } from 'vitest';

describe('LLM client types', () => {
  it('sync clients are BaseLLMs that return values', () => {
    expectTypeOf<GPTAPI>().toExtend<BaseLLM>();
    expectTypeOf<VllmModel>().toExtend<BaseLLM>();
    expectTypeOf<LMDeployServer>().toExtend<BaseLLM>();
    expectTypeOf<GPTAPI['chat']>().returns.toEqualTypeOf<string>();
    expectTypeOf<GPTAPI['streamChat']>().returns.toEqualTypeOf<Generator<StreamChunk, void, undefined>>();
  });

  it('async clients are AsyncBaseLLMs that return promises', () => {
    expectTypeOf<AsyncGPTAPI>().toExtend<AsyncBaseLLM>();
    expectTypeOf<AsyncVllmModel>().toExtend<AsyncBaseLLM>();
    expectTypeOf<AsyncGPTAPI['chat']>().returns.toEqualTypeOf<Promise<string>>();
  });

  it('agents accept only the matching kind', () => {
    expectTypeOf<GPTAPI>().not.toExtend<AsyncBaseLLM>();
    expectTypeOf<AsyncGPTAPI>().not.toExtend<BaseLLM>();
    expectTypeOf(Agent).constructorParameters.toExtend<[({ llm?: BaseLLM | undefined } | undefined)?]>();
    expectTypeOf(AsyncAgent).constructorParameters.toExtend<
      [({ llm?: AsyncBaseLLM | undefined } | undefined)?]
    >();
  });

  it('generate() returns a ModelReply, sync or async, and tools take actions or OpenAI JSON', () => {
    expectTypeOf<GPTAPI['generate']>().returns.toEqualTypeOf<ModelReply>();
    expectTypeOf<BaseLLM['generate']>().returns.toEqualTypeOf<ModelReply>();
    expectTypeOf<AsyncGPTAPI['generate']>().returns.toEqualTypeOf<Promise<ModelReply>>();
    expectTypeOf<AsyncBaseLLM['generate']>().returns.toEqualTypeOf<Promise<ModelReply>>();
    expectTypeOf<ModelReply['toolCalls']>().toEqualTypeOf<ToolCall[]>();
    expectTypeOf<BaseAction>().toExtend<ToolSpec>();
    expectTypeOf<OpenAITool>().toExtend<ToolSpec>();
    expectTypeOf<{ name: string }>().not.toExtend<ToolSpec>();
    expectTypeOf<LLMCallParams['toolChoice']>().toEqualTypeOf<
      'auto' | 'none' | 'required' | { name: string } | undefined
    >();
    expectTypeOf<StreamChunk['toolCalls']>().toEqualTypeOf<ToolCall[] | undefined>();
  });
});
