import {
  AsyncAgent,
  AsyncClaudeAPI,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncOpenAIResponsesAPI,
  modelPrice,
} from 'lagent-ts';
import {
  type FakeAnthropicServer,
  type FakeOpenAIServer,
  startFakeAnthropic,
  startFakeOpenAI,
} from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { calculator } from '../helpers/tools';

const FAST = { retry: 0, timeout: 5_000 };
/** A system prompt long enough for Anthropic's cache (1,024 tokens and more). */
const SYSTEM = `You are a careful assistant. ${'Follow the house rules and cite your sources. '.repeat(120)}`;
const MARK = { type: 'ephemeral' };

let anthropic: FakeAnthropicServer | undefined;
let openai: FakeOpenAIServer | undefined;
afterEach(async () => {
  await anthropic?.close();
  await openai?.close();
  anthropic = undefined;
  openai = undefined;
});

describe('Claude prompt caching', () => {
  it('marks the tools, the system prompt and the newest message, and the loop reads its prefix from the cache', async () => {
    anthropic = await startFakeAnthropic({
      script: [
        { toolCalls: [{ id: 'toolu_1', name: 'Calculator__add', arguments: { a: 1, b: 2 } }] },
        'Three.',
      ],
    });
    const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, ...FAST });
    const usages: unknown[] = [];
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [calculator], template: SYSTEM });
    agent.events.on('llmEnd', () => usages.push(llm.getLastUsage()));
    expect((await agent.call('1 + 2?')).content).toBe('Three.');

    const [first, second] = anthropic.requests.map((request) => request.body);
    expect(first.tools.at(-1).cache_control).toEqual(MARK);
    expect(first.system).toEqual([{ type: 'text', text: SYSTEM, cache_control: MARK }]);
    expect(first.messages.at(-1).content.at(-1)).toMatchObject({
      type: 'text',
      text: '1 + 2?',
      cache_control: MARK,
    });
    expect(second.messages.at(-1).content.at(-1)).toMatchObject({ type: 'tool_result', cache_control: MARK });
    // The old mark moved: only the newest message carries one.
    expect(JSON.stringify(second.messages.slice(0, -1))).not.toContain('cache_control');

    // The first request writes its prefix; the second reads it back and writes only what it added.
    const [written, read] = usages as {
      cachedPromptTokens?: number;
      cacheWriteTokens?: number;
      promptTokens: number;
    }[];
    expect(written!.cacheWriteTokens).toBeGreaterThan(1024);
    expect(written!.cachedPromptTokens).toBeUndefined();
    expect(read!.cachedPromptTokens).toBe(written!.cacheWriteTokens);
    expect(read!.cacheWriteTokens).toBeGreaterThan(0);
    expect(read!.promptTokens).toBeGreaterThan(read!.cachedPromptTokens!);
    expect(llm.getTotalUsage()).toMatchObject({
      cachedPromptTokens: read!.cachedPromptTokens,
      cacheWriteTokens: written!.cacheWriteTokens! + read!.cacheWriteTokens!,
    });
  });

  it("a budgeted call's usage reports the cached and cache-written tokens", async () => {
    anthropic = await startFakeAnthropic({ script: 'Sure.' });
    const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, ...FAST });
    const agent = new AsyncAgent({ llm, template: SYSTEM });
    const first = await agent.call('hi', { budget: { tokens: 100_000 } });
    const second = await agent.call('and again', { budget: { tokens: 100_000 } });
    const written = (first.extraInfo as { usage: Record<string, number> }).usage;
    const read = (second.extraInfo as { usage: Record<string, number> }).usage;
    expect(written.cacheWriteTokens).toBeGreaterThan(1024);
    expect(read.cachedPromptTokens).toBeGreaterThanOrEqual(written.cacheWriteTokens!);
    expect(read.promptTokens).toBeGreaterThan(read.cachedPromptTokens!);
  });

  it('cache: false (per client or per call) sends no marks', async () => {
    anthropic = await startFakeAnthropic({ script: 'ok' });
    const off = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, cache: false, ...FAST });
    await off.chat([
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'hi' },
    ]);
    const on = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, ...FAST });
    await on.chat([{ role: 'user', content: 'hi' }], { cache: false });
    for (const request of anthropic.requests)
      expect(JSON.stringify(request.body)).not.toContain('cache_control');
    expect(anthropic.requests[0]!.body.system).toBe(SYSTEM);
  });

  it('a streamed reply reports the cache too', async () => {
    anthropic = await startFakeAnthropic({ script: 'streamed' });
    const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, ...FAST });
    const ask = async () => {
      for await (const _chunk of llm.streamChat([
        { role: 'system', content: SYSTEM },
        { role: 'user', content: 'hi' },
      ])) {
        // drained
      }
      return llm.getLastUsage();
    };
    expect((await ask())?.cacheWriteTokens).toBeGreaterThan(1024);
    expect((await ask())?.cachedPromptTokens).toBeGreaterThan(1024);
  });
});

describe('cached tokens reported by OpenAI-compatible servers', () => {
  it("reads OpenAI's cached_tokens, DeepSeek's hit count and the Responses API's details", async () => {
    openai = await startFakeOpenAI({
      script: [
        { content: 'a', usage: { prompt_tokens: 2000, completion_tokens: 10, cached_tokens: 1536 } },
        {
          content: 'b',
          usage: {
            prompt_tokens: 900,
            completion_tokens: 50,
            prompt_cache_hit_tokens: 640,
            cached_tokens: 0,
          },
        },
        {
          content: 'c',
          usage: { prompt_tokens: 1200, completion_tokens: 80, cached_tokens: 1024, reasoning_tokens: 64 },
        },
      ],
    });
    const chat = new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: openai.baseURL, ...FAST });
    await chat.chat([{ role: 'user', content: 'x' }]);
    expect(chat.getLastUsage()).toEqual({
      promptTokens: 2000,
      completionTokens: 10,
      totalTokens: 2010,
      cachedPromptTokens: 1536,
    });
    await chat.chat([{ role: 'user', content: 'x' }]);
    expect(chat.getLastUsage()).toMatchObject({ cachedPromptTokens: 640 });
    const responses = new AsyncOpenAIResponsesAPI({
      model: 'gpt-5-mini',
      apiKey: 'k',
      baseURL: openai.baseURL,
      ...FAST,
    });
    await responses.chat([{ role: 'user', content: 'x' }]);
    expect(responses.getLastUsage()).toEqual({
      promptTokens: 1200,
      completionTokens: 80,
      totalTokens: 1280,
      cachedPromptTokens: 1024,
      reasoningTokens: 64,
    });
  });
});

describe('cache rates in the price table', () => {
  it('lists what reading and writing the cache costs per million tokens', () => {
    expect(modelPrice('claude-sonnet-4-5')).toEqual({
      input: 3,
      output: 15,
      cacheRead: 0.3,
      cacheWrite: 3.75,
    });
    expect(modelPrice('gpt-4o-2024-08-06')).toMatchObject({ input: 2.5, cacheRead: 1.25 });
    expect(modelPrice('deepseek-reasoner')).toMatchObject({ cacheRead: 0.028 });
  });
});
