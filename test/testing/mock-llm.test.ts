import { ModelStatusCode } from 'lagent-ts';
import { AsyncMockLLM, MockLLM, MockScriptError } from 'lagent-ts/testing';
import { describe, expect, it, vi } from 'vitest';

const user = (content: string) => [{ role: 'user', content }];

describe('MockLLM', () => {
  it('replies from a list in order, records calls, and explains when the script runs out', () => {
    const llm = new MockLLM({ responses: ['one', 'two'] });
    expect(llm.chat(user('a'))).toBe('one');
    expect(() => llm.assertComplete()).toThrow(/used 1 of 2/);
    expect(llm.chat(user('b'), { temperature: 0 })).toBe('two');
    llm.assertComplete();
    expect(llm.calls.map((call) => call.messages[0]!.content)).toEqual(['a', 'b']);
    expect(llm.calls[1]!.params.temperature).toBe(0);
    expect(() => llm.chat(user('c'))).toThrow(MockScriptError);
    expect(() => llm.chat(user('c'))).toThrow(/call #4, but only 2 were given/);
  });

  it('a function script sees the messages, resolved params and call index', () => {
    const llm = new MockLLM({
      responses: (messages, params, index) => `${index}:${messages.length}:${params.maxNewTokens}`,
      maxNewTokens: 64,
    });
    expect(llm.chat(user('x'))).toBe('0:1:64');
    expect(llm.chat(user('x'), { maxNewTokens: 8 })).toBe('1:1:8');
    expect(llm.genParams.maxNewTokens).toBe(64);
  });

  it('cuts output before the first stop word, from defaults or per call', () => {
    const llm = new MockLLM({ responses: () => 'answer<|im_end|>junk\n```\nmore', stopWords: '<|im_end|>' });
    expect(llm.genParams.stopWords).toEqual(['<|im_end|>']);
    expect(llm.chat(user('x'))).toBe('answer');
    expect(llm.chat(user('x'), { stopWords: ['\n```\n'] })).toBe('answer<|im_end|>junk');
    expect(llm.chat(user('x'), { stopWords: ['swer', 'ans'] })).toBe('');
    expect(llm.genParams.stopWords).toEqual(['<|im_end|>']);
  });

  it('streams cumulative chunks of chunkSize, then one END chunk with the full text', () => {
    const llm = new MockLLM({ responses: ['abcdefg'], chunkSize: 3 });
    const chunks = [...llm.streamChat(user('x'))];
    expect(chunks).toEqual([
      { state: ModelStatusCode.STREAM_ING, content: 'abc', delta: 'abc' },
      { state: ModelStatusCode.STREAM_ING, content: 'abcdef', delta: 'def' },
      { state: ModelStatusCode.STREAM_ING, content: 'abcdefg', delta: 'g' },
      { state: ModelStatusCode.END, content: 'abcdefg', delta: '' },
    ]);
  });

  it('rejects bad configuration and non-string replies clearly', () => {
    expect(() => new MockLLM({ responses: 'x' as never })).toThrow(/needs responses/);
    expect(() => new MockLLM({ responses: [], chunkSize: 0 })).toThrow(/chunkSize/);
    expect(() => new MockLLM({ responses: [], stopWords: [1] as never })).toThrow(/stopWords/);
    const llm = new MockLLM({ responses: () => 42 as never });
    expect(() => llm.chat(user('x'))).toThrow(/not a string/);
  });
});

describe('AsyncMockLLM', () => {
  it('resolves after latencyMs and honours an abort signal', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const llm = new AsyncMockLLM({ responses: () => 'ok', latencyMs: 30 });
      let answer: string | undefined;
      const pending = llm.chat(user('x')).then((text) => {
        answer = text;
      });
      await vi.advanceTimersByTimeAsync(29);
      expect(answer).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      await pending;
      expect(answer).toBe('ok');
    } finally {
      vi.useRealTimers();
    }
    const llm = new AsyncMockLLM({ responses: () => 'ok', latencyMs: 30 });
    const controller = new AbortController();
    const pending = llm.chat(user('x'), { signal: controller.signal });
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });

  it('streams asynchronously with the same chunk protocol', async () => {
    const llm = new AsyncMockLLM({ responses: ['hello'], chunkSize: 2 });
    const chunks = [];
    for await (const chunk of llm.streamChat(user('x'))) chunks.push(chunk.content);
    expect(chunks).toEqual(['he', 'hell', 'hello', 'hello']);
    llm.assertComplete();
  });
});
