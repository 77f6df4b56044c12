import { modelPrice, setModelPrice } from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { usageOf } from '#src/llms/ai-sdk-results';
import { usageFromClaude } from '#src/llms/claude-messages';
import { costOf, costOfUsage } from '#src/llms/prices';
import { usageFromAPI } from '#src/llms/usage';

describe('usage as the providers report it', () => {
  it('OpenAI: cached prompt tokens and reasoning tokens are kept; negative counts are none', () => {
    expect(
      usageFromAPI({
        prompt_tokens: 1000,
        completion_tokens: 100,
        total_tokens: 1100,
        prompt_tokens_details: { cached_tokens: 800 },
        completion_tokens_details: { reasoning_tokens: 60 },
      }),
    ).toEqual({
      promptTokens: 1000,
      completionTokens: 100,
      totalTokens: 1100,
      cachedPromptTokens: 800,
      reasoningTokens: 60,
    });
    expect(usageFromAPI({ prompt_tokens: 5, completion_tokens: 2 })).toEqual({
      promptTokens: 5,
      completionTokens: 2,
      totalTokens: 7,
    });
    expect(usageFromAPI({ prompt_tokens: -5000, completion_tokens: Number.NaN })).toEqual({
      promptTokens: 0,
      completionTokens: 0,
      totalTokens: 0,
    });
  });

  it('Anthropic: cache reads and writes are prompt tokens, kept apart for their rates', () => {
    expect(
      usageFromClaude({
        input_tokens: 10,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 50,
        output_tokens: 7,
      }),
    ).toEqual({
      promptTokens: 160,
      completionTokens: 7,
      totalTokens: 167,
      cachedPromptTokens: 50,
      cacheWriteTokens: 100,
    });
    expect(usageFromClaude({ input_tokens: 3, output_tokens: 1, cache_read_input_tokens: 0 })).toEqual({
      promptTokens: 3,
      completionTokens: 1,
      totalTokens: 4,
    });
  });

  it('AI SDK: reasoning counted apart from the output (v2, Google) is a completion token; v3 splits are read', () => {
    expect(usageOf({ inputTokens: 10, outputTokens: 5, totalTokens: 25, reasoningTokens: 10 })).toEqual({
      promptTokens: 10,
      completionTokens: 15,
      totalTokens: 25,
      reasoningTokens: 10,
    });
    // OpenAI's provider counts reasoning inside the output already.
    expect(
      usageOf({ inputTokens: 10, outputTokens: 15, totalTokens: 25, reasoningTokens: 10 }),
    ).toMatchObject({
      completionTokens: 15,
      totalTokens: 25,
    });
    expect(
      usageOf({
        inputTokens: { total: 100, cacheRead: 60, cacheWrite: 20 },
        outputTokens: { total: 30, reasoning: 12 },
      }),
    ).toEqual({
      promptTokens: 100,
      completionTokens: 30,
      totalTokens: 130,
      cachedPromptTokens: 60,
      cacheWriteTokens: 20,
      reasoningTokens: 12,
    });
    expect(usageOf({ inputTokens: -3, outputTokens: undefined })).toBeUndefined();
  });
});

describe('prices', () => {
  it('cache reads and writes are billed at their rates, as input when the price has none', () => {
    const sonnet = modelPrice('claude-sonnet-4-20250514')!;
    expect(sonnet).toEqual({ input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 });
    expect(costOf(sonnet, 160, 7, 50, 100)).toBeCloseTo((10 * 3 + 50 * 0.3 + 100 * 3.75 + 7 * 15) / 1e6, 15);
    expect(
      costOfUsage(modelPrice('gpt-4o')!, {
        promptTokens: 1000,
        completionTokens: 100,
        totalTokens: 1100,
        cachedPromptTokens: 800,
      }),
    ).toBeCloseTo((200 * 2.5 + 800 * 1.25 + 100 * 10) / 1e6, 15);
    expect(costOf({ input: 2, output: 4 }, 10, 1, 5, 5)).toBe((10 * 2 + 4) / 1e6);
  });

  it('setModelPrice takes cache rates, and refuses rates that are not finite numbers >= 0', () => {
    setModelPrice('my-cached-model', { input: 1, output: 2, cacheRead: 0.1 });
    try {
      expect(modelPrice('my-cached-model-v2')).toEqual({ input: 1, output: 2, cacheRead: 0.1 });
      expect(() => setModelPrice('x', { input: 1, output: 2, cacheWrite: -1 })).toThrow(RangeError);
      expect(() => setModelPrice('x', { input: Number.POSITIVE_INFINITY, output: 2 })).toThrow(RangeError);
    } finally {
      setModelPrice('my-cached-model', null);
    }
  });
});
