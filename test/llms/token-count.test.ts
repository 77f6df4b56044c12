import { encode as encodeCl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { encode as encodeO200k } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatMessage } from 'lagent-ts';
import { AsyncClaudeAPI, AsyncGPTAPI } from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it, vi } from 'vitest';
import {
  countTokens,
  encodingForModel,
  estimateTextTokens,
  TOKENS_PER_MESSAGE,
  TOKENS_REPLY_PRIMING,
} from '#src/llms/token-count';

const TEXT = 'Tokenizers split text into pieces: naïve café, 東京, and code like `x => x + 1`.';

describe('encodingForModel', () => {
  it('maps OpenAI models to their encodings and everything else to an estimate', () => {
    for (const model of [
      'gpt-4o',
      'gpt-4o-mini',
      'gpt-4.1',
      'o1',
      'o3-mini',
      'o4-mini',
      'gpt-5',
      'openai/gpt-4o',
    ]) {
      expect(encodingForModel(model), model).toBe('o200k_base');
    }
    for (const model of ['gpt-4', 'gpt-4-turbo', 'gpt-3.5-turbo']) {
      expect(encodingForModel(model), model).toBe('cl100k_base');
    }
    for (const model of ['claude-sonnet-4-5', 'internlm2_5-7b-chat', 'omni', undefined]) {
      expect(encodingForModel(model), String(model)).toBeUndefined();
    }
  });
});

describe('countTokens', () => {
  it('counts a text exactly with the model encoding', () => {
    expect(countTokens(TEXT, { model: 'gpt-4o' })).toBe(encodeO200k(TEXT).length);
    expect(countTokens(TEXT, { model: 'gpt-4' })).toBe(encodeCl100k(TEXT).length);
    expect(encodeO200k(TEXT).length).not.toBe(encodeCl100k(TEXT).length);
  });

  it('estimates other models as ceil(UTF-8 bytes / 4)', () => {
    const bytes = Buffer.byteLength(TEXT, 'utf8');
    expect(countTokens(TEXT, { model: 'claude-sonnet-4-5' })).toBe(Math.ceil(bytes / 4));
    expect(estimateTextTokens('')).toBe(0);
    expect(estimateTextTokens('abcde')).toBe(2);
  });

  it('counts messages with OpenAI per-message framing, as the API bills gpt-4o prompts', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Hello there!', name: 'alice' },
    ];
    const tokens = (text: string) => encodeO200k(text).length;
    const expected =
      TOKENS_REPLY_PRIMING +
      2 * TOKENS_PER_MESSAGE +
      tokens('system') +
      tokens('You are a helpful assistant.') +
      tokens('user') +
      tokens('Hello there!') +
      1 +
      tokens('alice');
    expect(countTokens(messages, { model: 'gpt-4o' })).toBe(expected);
  });

  it('counts tool calls and tool results by their JSON', () => {
    const call: ChatMessage = {
      role: 'assistant',
      content: null,
      toolCalls: [{ id: 'call_1', name: 'search', arguments: { query: 'weather in Paris', limit: 3 } }],
    };
    const bare: ChatMessage = { role: 'assistant', content: null };
    const result: ChatMessage = {
      role: 'tool',
      toolCallId: 'call_1',
      name: 'search',
      content: 'Sunny, 21°C',
    };
    const withCall = countTokens([call], { model: 'gpt-4o' });
    const withoutCall = countTokens([bare], { model: 'gpt-4o' });
    const json = JSON.stringify({
      id: 'call_1',
      type: 'function',
      function: { name: 'search', arguments: JSON.stringify({ query: 'weather in Paris', limit: 3 }) },
    });
    expect(withCall - withoutCall).toBe(encodeO200k(json).length);
    expect(countTokens([result], { model: 'gpt-4o' })).toBeGreaterThan(
      countTokens([{ role: 'tool', content: 'Sunny, 21°C' }], { model: 'gpt-4o' }),
    );
    // The estimate counts them too.
    expect(countTokens([call], { model: 'claude-3' })).toBeGreaterThan(
      countTokens([bare], { model: 'claude-3' }),
    );
  });
});

describe('llm.countTokens', () => {
  it('API clients count with their model', () => {
    const gpt = new AsyncGPTAPI({
      model: 'gpt-4o-mini',
      apiKey: 'sk-test',
      baseURL: 'http://127.0.0.1:9/v1',
    });
    const claude = new AsyncClaudeAPI({
      model: 'claude-sonnet-4-5',
      apiKey: 'test',
      baseURL: 'http://127.0.0.1:9',
    });
    expect(gpt.countTokens(TEXT)).toBe(encodeO200k(TEXT).length);
    expect(claude.countTokens(TEXT)).toBe(estimateTextTokens(TEXT));
  });

  it('uses the model name of the client, sync and async', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: TEXT }];
    const gpt = new MockLLM({ responses: [], model: 'gpt-4o' });
    const asyncGpt = new AsyncMockLLM({ responses: [], model: 'gpt-4o' });
    const unknown = new MockLLM({ responses: [] });
    expect(gpt.countTokens(TEXT)).toBe(encodeO200k(TEXT).length);
    expect(asyncGpt.countTokens(messages)).toBe(countTokens(messages, { model: 'gpt-4o' }));
    expect(unknown.countTokens(TEXT)).toBe(estimateTextTokens(TEXT));
  });
});

describe('without gpt-tokenizer', () => {
  it('estimates instead of failing', async () => {
    vi.resetModules();
    vi.doMock('node:module', async (original) => ({
      ...(await original<typeof import('node:module')>()),
      createRequire: () => () => {
        throw new Error("Cannot find module 'gpt-tokenizer/encoding/o200k_base'");
      },
    }));
    try {
      const fresh = await import('#src/llms/token-count');
      expect(fresh.countTokens(TEXT, { model: 'gpt-4o' })).toBe(estimateTextTokens(TEXT));
      expect(fresh.textCounterFor({ model: 'gpt-4o' }).exact).toBe(false);
    } finally {
      vi.doUnmock('node:module');
      vi.resetModules();
    }
  });
});
