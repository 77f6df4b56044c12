import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV2, LanguageModelV3, LanguageModelV4 } from '@ai-sdk/provider';
import type { AISDKLanguageModel } from 'lagent-ts';
import { describe, expectTypeOf, it } from 'vitest';

describe('AISDKLanguageModel', () => {
  it('takes the model objects of real providers', () => {
    const compatible = createOpenAICompatible({ name: 'local', baseURL: 'http://127.0.0.1:1/v1' });
    const anthropic = createAnthropic({ baseURL: 'http://127.0.0.1:1/v1', apiKey: 'x' });
    expectTypeOf(compatible.chatModel('m')).toExtend<AISDKLanguageModel>();
    expectTypeOf(compatible('m')).toExtend<AISDKLanguageModel>();
    expectTypeOf(anthropic('claude-sonnet-4-6')).toExtend<AISDKLanguageModel>();
  });

  it('takes every specification version of @ai-sdk/provider', () => {
    expectTypeOf<LanguageModelV2>().toExtend<AISDKLanguageModel>();
    expectTypeOf<LanguageModelV3>().toExtend<AISDKLanguageModel>();
    expectTypeOf<LanguageModelV4>().toExtend<AISDKLanguageModel>();
  });

  it('refuses objects that are not language models', () => {
    expectTypeOf<{ modelId: string }>().not.toExtend<AISDKLanguageModel>();
    expectTypeOf<{
      specificationVersion: 'v1';
      provider: string;
      modelId: string;
      doGenerate(): Promise<unknown>;
      doStream(): Promise<unknown>;
    }>().not.toExtend<AISDKLanguageModel>();
  });
});
