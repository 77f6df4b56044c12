import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChatMessage, StreamChunk } from 'lagent-ts';
import {
  AsyncAgent,
  AsyncCachedLLM,
  asyncTool,
  CachedLLM,
  ConfigurationError,
  MemoryStore,
  ModelStatusCode,
} from 'lagent-ts';
import type { SessionStore } from 'lagent-ts/stores';
import { SQLiteStore } from 'lagent-ts/stores';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

const ask = (text: string): ChatMessage[] => [{ role: 'user', content: text }];

/** A mock that numbers its answers, so a second model call is visible in the text. */
const counting = (prefix = 'answer') => {
  let n = 0;
  return () => `${prefix} ${++n}`;
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-cache-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('CachedLLM (sync)', () => {
  it('answers identical requests from the cache; other messages, params or tools go to the model', () => {
    const inner = new MockLLM({ responses: counting() });
    const llm = new CachedLLM(inner);
    expect(llm.chat(ask('a'))).toBe('answer 1');
    expect(llm.chat(ask('a'))).toBe('answer 1');
    expect(inner.calls).toHaveLength(1);
    expect(llm.chat(ask('b'))).toBe('answer 2');
    expect(llm.chat(ask('a'), { temperature: 0.1 })).toBe('answer 3');
    expect(llm.chat(ask('a'), { temperature: 0.1, sessionId: 'other session' })).toBe('answer 3');
    inner.genParams.stopWords.push('STOP'); // the model's defaults take part: a changed default is a new request
    expect(llm.chat(ask('a'))).toBe('answer 4');
    expect(llm.stats).toEqual({ hits: 2, misses: 4 });
  });

  it('keys on the tools offered, and serves generate() with its tool calls', () => {
    const inner = new MockLLM({
      responses: (_messages, _params, index) => ({
        content: '',
        toolCalls: [{ name: 'lookup', arguments: { q: `call ${index}` } }],
      }),
    });
    const llm = new CachedLLM(inner);
    const tool = (name: string) => ({
      type: 'function' as const,
      function: { name, description: 'd', parameters: { type: 'object', properties: {} } },
    });
    const first = llm.generate(ask('a'), { tools: [tool('lookup')] });
    first.toolCalls[0]!.name = 'changed by the caller';
    expect(llm.generate(ask('a'), { tools: [tool('lookup')] }).toolCalls[0]).toMatchObject({
      name: 'lookup',
      arguments: { q: 'call 0' },
    });
    expect(
      llm.generate(ask('a'), { tools: [tool('lookup'), tool('other')] }).toolCalls[0]!.arguments,
    ).toEqual({
      q: 'call 1',
    });
  });

  it('caches a stream as its chunks and replays them chunk by chunk', () => {
    const inner = new MockLLM({ responses: ['a fairly long streamed answer'], chunkSize: 5 });
    const llm = new CachedLLM(inner);
    const first = [...llm.streamChat(ask('s'))];
    const second = [...llm.streamChat(ask('s'))];
    expect(first.length).toBeGreaterThan(3);
    expect(second).toEqual(first);
    expect(inner.calls).toHaveLength(1);
  });

  it('caches a stream whose reader stops at its END chunk (as agents do)', () => {
    const inner = new MockLLM({ responses: counting('streamed answer'), chunkSize: 3 });
    const llm = new CachedLLM(inner);
    for (const chunk of llm.streamChat(ask('s'))) if (chunk.state === ModelStatusCode.END) break;
    expect([...llm.streamChat(ask('s'))].at(-1)?.content).toBe('streamed answer 1');
    expect(inner.calls).toHaveLength(1);
  });

  it('does not cache a stream left before its end', () => {
    const inner = new MockLLM({ responses: counting('streamed answer'), chunkSize: 3 });
    const llm = new CachedLLM(inner);
    for (const _chunk of llm.streamChat(ask('s'))) break;
    const whole = [...llm.streamChat(ask('s'))];
    expect(whole.at(-1)?.content).toBe('streamed answer 2');
  });

  it('forgets answers after ttlMs', () => {
    const inner = new MockLLM({ responses: counting() });
    const llm = new CachedLLM(inner, { ttlMs: 40 });
    // The clock is fake: it moves when told.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      expect(llm.chat(ask('a'))).toBe('answer 1');
      vi.setSystemTime(Date.now() + 39);
      expect(llm.chat(ask('a'))).toBe('answer 1');
      vi.setSystemTime(Date.now() + 1);
      expect(llm.chat(ask('a'))).toBe('answer 2');
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps answers in a SessionStore: another CachedLLM on the same SQLite file answers from it', () => {
    const path = join(dir, 'cache.db');
    const store = new SQLiteStore({ path });
    new CachedLLM(new MockLLM({ responses: ['stored answer'] }), { store }).chat(ask('q'));
    store.close();
    const reopened = new SQLiteStore({ path });
    const inner = new MockLLM({ responses: ['fresh answer'] });
    const llm = new CachedLLM(inner, { store: reopened });
    expect(llm.chat(ask('q'))).toBe('stored answer');
    expect(inner.calls).toHaveLength(0);
    llm.clear();
    expect(llm.chat(ask('q'))).toBe('fresh answer');
    // Cached answers live in a namespace of their own: the store's sessions are untouched.
    expect(reopened.listSessions('default').sessions).toEqual([]);
    reopened.close();
  });

  it('honours ttlMs in a store', () => {
    const store = new MemoryStore();
    const llm = new CachedLLM(new MockLLM({ responses: counting() }), { store, ttlMs: 40 });
    // The clock (the store's too) is fake: it moves when told.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      expect(llm.chat(ask('a'))).toBe('answer 1');
      vi.setSystemTime(Date.now() + 39);
      expect(llm.chat(ask('a'))).toBe('answer 1');
      vi.setSystemTime(Date.now() + 1);
      expect(llm.chat(ask('a'))).toBe('answer 2');
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses an async store, a bad ttl and a missing model', () => {
    const asyncStore = {
      ...new MemoryStore(),
      synchronous: false,
      description: 'SomeAsyncStore',
      readJournal() {},
      appendJournal() {},
    };
    expect(
      () =>
        new CachedLLM(new MockLLM({ responses: ['x'] }), { store: asyncStore as unknown as SessionStore }),
    ).toThrow(/needs a synchronous store .*SomeAsyncStore.*AsyncCachedLLM/);
    expect(() => new CachedLLM(new MockLLM({ responses: ['x'] }), { ttlMs: -1 })).toThrow(ConfigurationError);
    expect(() => new CachedLLM(undefined as never)).toThrow(ConfigurationError);
  });
});

describe('AsyncCachedLLM', () => {
  it('answers identical requests from the cache, streams included, with any store', async () => {
    const store = new MemoryStore();
    const inner = new AsyncMockLLM({ responses: counting('streamed answer'), chunkSize: 4 });
    const llm = new AsyncCachedLLM(inner, { store });
    expect(await llm.chat(ask('a'))).toBe('streamed answer 1');
    expect(await llm.chat(ask('a'))).toBe('streamed answer 1');
    const read = async () => {
      const chunks: StreamChunk[] = [];
      for await (const chunk of llm.streamChat(ask('b'))) chunks.push(chunk);
      return chunks;
    };
    const first = await read();
    expect(await read()).toEqual(first);
    expect(first.at(-1)?.content).toBe('streamed answer 2');
    expect(inner.calls).toHaveLength(2);
  });

  it('is a model agents use, function calling included', async () => {
    const inner = new AsyncMockLLM({
      responses: (messages) =>
        messages.at(-1)?.role === 'tool'
          ? `it is ${messages.at(-1)!.content}`
          : { toolCalls: [{ name: 'clock', arguments: {} }] },
    });
    const llm = new AsyncCachedLLM(inner);
    const clock = asyncTool({
      name: 'clock',
      description: 'the time',
      parameters: z.object({}),
      run: () => 'noon',
    });
    const { AsyncFunctionCallingAgent } = await import('#src/agents/prebuilt/function-calling-agent');
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [clock] });
    expect((await agent.call('time?', { sessionId: 1 })).content).toBe('it is noon');
    expect((await agent.call('time?', { sessionId: 2 })).content).toBe('it is noon');
    expect(inner.calls).toHaveLength(2);
    expect(llm.stats).toEqual({ hits: 2, misses: 2 });
    const plain = new AsyncAgent({ llm: new AsyncCachedLLM(new AsyncMockLLM({ responses: counting() })) });
    expect((await plain.call('x', { sessionId: 1 })).content).toBe('answer 1');
    expect((await plain.call('x', { sessionId: 2 })).content).toBe('answer 1');
  });
});
