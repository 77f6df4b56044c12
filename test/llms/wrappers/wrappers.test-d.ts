import type {
  AsyncBaseLLM,
  AsyncCachedLLM,
  AsyncFallbackLLM,
  AsyncRecordingLLM,
  AsyncReplayLLM,
  BaseLLM,
  CachedLLM,
  FallbackLLM,
  FallbackOptions,
  FallbackReply,
  RecordingLLM,
  ReplayLLM,
  StreamChunk,
} from 'lagent-ts';
import { describe, expectTypeOf, it } from 'vitest';

describe('model wrapper types', () => {
  it('sync wrappers are sync models (Agent takes them), async ones async (AsyncAgent takes them)', () => {
    expectTypeOf<FallbackLLM>().toExtend<BaseLLM>();
    expectTypeOf<CachedLLM>().toExtend<BaseLLM>();
    expectTypeOf<RecordingLLM>().toExtend<BaseLLM>();
    expectTypeOf<ReplayLLM>().toExtend<BaseLLM>();
    expectTypeOf<AsyncFallbackLLM>().toExtend<AsyncBaseLLM>();
    expectTypeOf<AsyncCachedLLM>().toExtend<AsyncBaseLLM>();
    expectTypeOf<AsyncRecordingLLM>().toExtend<AsyncBaseLLM>();
    expectTypeOf<AsyncReplayLLM>().toExtend<AsyncBaseLLM>();
    expectTypeOf<FallbackLLM>().not.toExtend<AsyncBaseLLM>();
    expectTypeOf<AsyncReplayLLM>().not.toExtend<BaseLLM>();
    expectTypeOf<ReplayLLM['chat']>().returns.toEqualTypeOf<string>();
    expectTypeOf<ReplayLLM['streamChat']>().returns.toEqualTypeOf<Generator<StreamChunk, void, undefined>>();
  });

  it('a sync wrapper wraps sync models only', () => {
    expectTypeOf<typeof FallbackLLM>().constructorParameters.toEqualTypeOf<
      [readonly BaseLLM[], (FallbackOptions | undefined)?]
    >();
    expectTypeOf<AsyncBaseLLM>().not.toExtend<ConstructorParameters<typeof CachedLLM>[0]>();
    expectTypeOf<BaseLLM>().not.toExtend<ConstructorParameters<typeof AsyncRecordingLLM>[0]>();
  });

  it('generate() of a fallback chain says who answered', () => {
    expectTypeOf<FallbackLLM['generate']>().returns.toEqualTypeOf<FallbackReply>();
    expectTypeOf<AsyncFallbackLLM['generate']>().returns.toEqualTypeOf<Promise<FallbackReply>>();
    expectTypeOf<FallbackReply['answeredBy']>().toEqualTypeOf<{ index: number; name: string }>();
  });
});
