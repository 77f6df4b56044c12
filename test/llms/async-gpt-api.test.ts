import type { StreamChunk } from 'lagent-ts';
import {
  AsyncAgent,
  AsyncGPTAPI,
  AsyncStreamingAgent,
  ConfigurationError,
  LLMRequestError,
  ModelStatusCode,
} from 'lagent-ts';
import { type FakeOpenAIServer, type FakeScript, startFakeOpenAI } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { recordTimerDelays } from '../helpers/timer-delays';

const user = (content: string) => [{ role: 'user', content }];
let server: FakeOpenAIServer | undefined;

async function serve(script: FakeScript): Promise<FakeOpenAIServer> {
  server = await startFakeOpenAI({ script });
  return server;
}

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function client(fake: FakeOpenAIServer, options: ConstructorParameters<typeof AsyncGPTAPI>[0] = {}) {
  return new AsyncGPTAPI({
    model: 'my-model',
    apiKey: 'sk-one',
    baseURL: fake.baseURL,
    retryMinDelayMs: 1,
    ...options,
  });
}

/** A streamed chat event carrying `text`. */
const contentEvent = (text: string) =>
  JSON.stringify({ choices: [{ index: 0, delta: { content: text }, finish_reason: null }] });

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('AsyncGPTAPI requests', () => {
  it('sends the model, key, mapped params, per-call stop words and roles', async () => {
    const fake = await serve(['ok']);
    const llm = client(fake, {
      model: 'some-unknown-model-v9',
      maxNewTokens: 64,
      temperature: 0.2,
      topP: 0.9,
      repetitionPenalty: 1.5,
      stopWords: ['<|im_end|>'],
      organization: 'org-1',
      headers: { 'x-extra': 'yes' },
    });
    const reply = await llm.chat(
      [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'run it' },
        { role: 'assistant', content: 'running' },
        { role: 'environment', content: '42', name: 'interpreter' },
      ],
      { stopWords: ['Observation:'], sessionId: 7, unrelated: () => 'ignored' },
    );
    expect(reply).toBe('ok');
    const [request] = fake.requests;
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer sk-one');
    expect(request?.headers['openai-organization']).toBe('org-1');
    expect(request?.headers['x-extra']).toBe('yes');
    expect(request?.body).toEqual({
      model: 'some-unknown-model-v9',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'run it' },
        { role: 'assistant', content: 'running' },
        { role: 'system', content: '42', name: 'interpreter' },
      ],
      max_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      frequency_penalty: 0.5,
      stop: ['Observation:'],
    });
    expect(llm.genParams.stopWords).toEqual(['<|im_end|>']);
  });

  it('changing genParams changes later calls', async () => {
    const fake = await serve(['a', 'b']);
    const llm = client(fake);
    await llm.chat(user('1'));
    llm.genParams.stopWords.push('\n```\n');
    await llm.chat(user('2'));
    expect(fake.requests[0]?.body.stop).toBeUndefined();
    expect(fake.requests[1]?.body.stop).toEqual(['\n```\n']);
  });

  it('maps jsonMode, extraBody, and reasoning models', async () => {
    const fake = await serve(['{}', '{}']);
    await client(fake, { jsonMode: true, extraBody: { top_k: 20 } }).chat(user('x'), {
      extraBody: { seed: 1 },
    });
    expect(fake.requests[0]?.body).toMatchObject({
      response_format: { type: 'json_object' },
      top_k: 20,
      seed: 1,
    });
    await client(fake, { model: 'o3-mini', stopWords: ['x'] }).chat(user('x'));
    const body = fake.requests[1]?.body;
    expect(body.max_completion_tokens).toBe(512);
    expect(body).not.toHaveProperty('max_tokens');
    expect(body).not.toHaveProperty('temperature');
    expect(body).not.toHaveProperty('stop');
  });

  it('cuts the reply at stop words even when the server ignores stop', async () => {
    const fake = await serve([{ content: 'Answer: 4<|im_end|>\nuser: more', ignoreStop: true }]);
    expect(await client(fake, { stopWords: ['<|im_end|>'] }).chat(user('2+2'))).toBe('Answer: 4');
  });

  it('rotates keys round-robin and skips a key rejected for quota', async () => {
    const quota = {
      status: 429,
      error: {
        message: 'You exceeded your current quota',
        type: 'insufficient_quota',
        code: 'insufficient_quota',
      },
    };
    const fake = await serve(['1', '2', quota, '3', '4', '5']);
    const llm = client(fake, { apiKey: ['k1', 'k2', 'k3'] });
    for (let i = 0; i < 5; i++) await llm.chat(user(String(i)));
    const keys = fake.requests.map((request) => request.headers.authorization?.replace('Bearer ', ''));
    // k3 is rejected for quota on the third call; k1 answers it instead, and k3 is never used again.
    expect(keys).toEqual(['k1', 'k2', 'k3', 'k1', 'k2', 'k1']);
  });

  it('fails clearly when every key is out of quota', async () => {
    const quota = { status: 429, error: { message: 'quota', code: 'insufficient_quota' } };
    const fake = await serve([quota, quota]);
    const error = await client(fake, { apiKey: ['k1', 'k2'] })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect((error as LLMRequestError).status).toBe(429);
    expect((error as Error).message).toMatch(/quota/);
    expect(fake.requests).toHaveLength(2);
  });

  it('records token usage per call and per session', async () => {
    const fake = await serve([
      { content: 'a', usage: { prompt_tokens: 10, completion_tokens: 2 } },
      { content: 'b', usage: { prompt_tokens: 5, completion_tokens: 1 } },
      { content: 'c', usage: { prompt_tokens: 1, completion_tokens: 1 } },
    ]);
    const llm = client(fake);
    await llm.chat(user('x'), { sessionId: 'a' });
    await llm.chat(user('x'), { sessionId: 'a' });
    await collect(llm.streamChat(user('x'), { sessionId: 'b' }));
    expect(llm.getLastUsage()).toEqual({ promptTokens: 1, completionTokens: 1, totalTokens: 2 });
    expect(llm.getUsage('a')).toEqual({ promptTokens: 15, completionTokens: 3, totalTokens: 18 });
    expect(llm.getUsage('b')).toEqual({ promptTokens: 1, completionTokens: 1, totalTokens: 2 });
    expect(llm.getTotalUsage().totalTokens).toBe(20);
    expect(fake.requests[2]?.body.stream_options).toEqual({ include_usage: true });
  });

  it('refuses to start without a key for OpenAI itself', () => {
    const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL };
    delete process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_BASE_URL;
    try {
      expect(() => new AsyncGPTAPI({ model: 'gpt-4o-mini' })).toThrow(/API key/);
    } finally {
      if (saved.key !== undefined) process.env.OPENAI_API_KEY = saved.key;
      if (saved.url !== undefined) process.env.OPENAI_BASE_URL = saved.url;
    }
  });
});

describe('AsyncGPTAPI retries', () => {
  it('retries a 429 exactly once after retry-after-ms', async () => {
    const fake = await serve([
      { status: 429, headers: { 'retry-after-ms': '30' }, error: { message: 'slow down' } },
      'ok',
    ]);
    const timers = recordTimerDelays();
    try {
      expect(await client(fake, { retryMinDelayMs: 5_000 }).chat(user('x'))).toBe('ok');
    } finally {
      timers.stop();
    }
    expect(fake.requests).toHaveLength(2);
    // The server's 30 ms, not the 5 s backoff.
    expect(timers.delays).toContain(30);
    expect(timers.delays).not.toContain(5_000);
  });

  it('honours retry-after in seconds', async () => {
    const fake = await serve([{ status: 503, headers: { 'retry-after': '0' } }, 'ok']);
    expect(await client(fake, { retryMinDelayMs: 5_000 }).chat(user('x'))).toBe('ok');
    expect(fake.requests).toHaveLength(2);
  });

  it('retries a 500 up to `retry` times, then throws LLMRequestError with status and attempts', async () => {
    const fail = { status: 500, error: { message: 'the engine is on fire' } };
    const fake = await serve([fail, fail, fail, fail, fail]);
    const error = await client(fake, { retry: 3 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error).toMatchObject({ name: 'LLMRequestError', status: 500, attempts: 4, retryable: true });
    expect((error as Error).message).toContain('the engine is on fire');
    expect(fake.requests).toHaveLength(4);
  });

  it('does not retry a 400', async () => {
    const fake = await serve([{ status: 400, error: { message: 'messages must not be empty' } }, 'never']);
    const error = await client(fake, { retry: 5 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LLMRequestError', status: 400, attempts: 1, retryable: false });
    expect((error as Error).message).toContain('messages must not be empty');
    expect(fake.requests).toHaveLength(1);
  });

  it('retries a connection reset', async () => {
    const fake = await serve([{ destroy: true }, 'recovered']);
    expect(await client(fake).chat(user('x'))).toBe('recovered');
    expect(fake.requests).toHaveLength(2);
  });

  it('retries a timeout, then reports it', async () => {
    const fake = await serve([
      { content: 'late', delayMs: 2_000 },
      { content: 'late', delayMs: 2_000 },
    ]);
    const error = await client(fake, { timeout: 50, retry: 1 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LLMRequestError', attempts: 2, retryable: true });
    expect((error as Error).message).toMatch(/timed out/);
  });
});

describe('AsyncGPTAPI retry-after cap', () => {
  it('a retry-after longer than maxRetryAfter is honoured up to the cap', async () => {
    const fake = await serve([{ status: 429, headers: { 'retry-after-ms': '100000' } }, 'ok']);
    const timers = recordTimerDelays();
    try {
      expect(await client(fake, { maxRetryAfter: 150, retryMinDelayMs: 1 }).chat(user('x'))).toBe('ok');
    } finally {
      timers.stop();
    }
    // The cap, not the server's 100 s nor the 1 ms backoff.
    expect(timers.delays).toContain(150);
    expect(timers.delays).not.toContain(100_000);
    expect(timers.delays).not.toContain(1);
  });

  it('when the server asked for more than the cap, the final error says so', async () => {
    const busy = { status: 429, headers: { 'retry-after': '120' }, error: { message: 'busy' } };
    const fake = await serve([busy, busy]);
    const error = await client(fake, { maxRetryAfter: 20, retry: 1 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LLMRequestError', status: 429, attempts: 2 });
    expect((error as Error).message).toMatch(
      /gave up after 2 attempts; the server asked to wait 120000 ms before retrying, more than maxRetryAfter \(20 ms\)/,
    );
    await fake.close();
    const once = await serve([busy]);
    const single = await client(once, { retry: 0 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect((single as Error).message).toMatch(/asked to wait 120000 ms.*maxRetryAfter \(60000 ms\)/);
  });

  it('a retry-after within the cap says nothing more', async () => {
    const fake = await serve([
      { status: 503, headers: { 'retry-after-ms': '5' } },
      { status: 503, headers: { 'retry-after-ms': '5' } },
    ]);
    const error = await client(fake, { retry: 1 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect((error as Error).message).not.toMatch(/maxRetryAfter/);
  });
});

describe('AsyncGPTAPI timeouts Node cannot time', () => {
  it('timeout: Infinity means no timeout (Node would fire such a timer after 1 ms)', async () => {
    const fake = await serve([
      { content: 'patient', delayMs: 50 },
      { content: 'streamed', chunkDelayMs: 20 },
    ]);
    const llm = client(fake, { timeout: Number.POSITIVE_INFINITY, retry: 0 });
    expect(llm.timeout).toBe(Number.POSITIVE_INFINITY);
    expect(await llm.chat(user('x'))).toBe('patient');
    expect((await collect(llm.streamChat(user('x')))).at(-1)?.content).toBe('streamed');
  });

  it('a finite timeout of 2^31 ms or more, or a non-positive one, is a ConfigurationError', async () => {
    const fake = await serve(['never']);
    for (const timeout of [2 ** 31, 1e12, 0, -5, Number.NaN]) {
      expect(() => client(fake, { timeout }), String(timeout)).toThrow(ConfigurationError);
    }
    expect(() => client(fake, { retryMaxDelayMs: 2 ** 31 })).toThrow(/retryMaxDelayMs must be at most/);
    expect(() => client(fake, { maxRetryAfter: -1 })).toThrow(/maxRetryAfter must be/);
    expect(client(fake, { maxRetryAfter: Number.POSITIVE_INFINITY }).maxRetryAfter).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(fake.requests).toHaveLength(0);
  });

  it('clientName names the client in errors', async () => {
    const fake = await serve([{ status: 400 }]);
    await expect(client(fake, { clientName: 'Drafts' }).chat(user('x'))).rejects.toThrow(
      /^Drafts request to/,
    );
  });
});

describe('AsyncGPTAPI abort', () => {
  it('aborting during a slow response rejects at once, not when the response comes', async () => {
    // The response never comes: only the abort ends the call.
    const fake = await serve([{ content: 'slow', hang: true }]);
    const controller = new AbortController();
    const pending = client(fake).chat(user('x'), { signal: controller.signal });
    await expect.poll(() => fake.requests.length).toBe(1);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await expect.poll(() => fake.requests[0]?.aborted).toBe(true);
  });

  it('aborting during a backoff wait rejects at once', async () => {
    const fake = await serve([{ status: 503 }, 'never']);
    const controller = new AbortController();
    // A backoff of 10 minutes: only the abort ends it.
    const timers = recordTimerDelays();
    try {
      const pending = client(fake, { retryMinDelayMs: 600_000, retryMaxDelayMs: 600_000 }).chat(user('x'), {
        signal: controller.signal,
      });
      await expect.poll(() => timers.delays.includes(600_000)).toBe(true);
      controller.abort(new Error('user gave up'));
      await expect(pending).rejects.toThrow('user gave up');
    } finally {
      timers.stop();
    }
    expect(fake.requests).toHaveLength(1);
  });

  it('aborting a stream midway rejects the loop', async () => {
    // One piece of text, then the stream stays open: only the abort ends it.
    const fake = await serve([{ events: [contentEvent('a ')], hang: true }]);
    const controller = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const chunk of client(fake).streamChat(user('x'), { signal: controller.signal })) {
        seen.push(chunk.delta);
        if (seen.length === 1) controller.abort();
      }
    })();
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen).toEqual(['a ']);
    await expect.poll(() => fake.requests[0]?.aborted).toBe(true);
  });
});

describe('AsyncGPTAPI streaming', () => {
  it('yields cumulative STREAM_ING chunks, then one END chunk', async () => {
    const fake = await serve([{ content: 'Hello, streaming world', chunkSize: 5 }]);
    const chunks = await collect(client(fake).streamChat(user('x')));
    expect(chunks.at(-1)).toEqual({
      state: ModelStatusCode.END,
      content: 'Hello, streaming world',
      delta: '',
    });
    const streaming = chunks.slice(0, -1);
    expect(streaming.every((chunk) => chunk.state === ModelStatusCode.STREAM_ING)).toBe(true);
    expect(streaming.map((chunk) => chunk.delta).join('')).toBe('Hello, streaming world');
    for (const chunk of streaming) expect('Hello, streaming world'.startsWith(chunk.content)).toBe(true);
    expect(fake.requests[0]?.body.stream).toBe(true);
  });

  it('never yields text after a stop word the server ignored, even split across events', async () => {
    const fake = await serve([
      { content: 'Thought: done<|im_end|>leaked text', chunkSize: 3, ignoreStop: true },
    ]);
    const chunks = await collect(client(fake, { stopWords: ['<|im_end|>'] }).streamChat(user('x')));
    for (const chunk of chunks) expect(chunk.content).not.toContain('<|');
    expect(chunks.map((chunk) => chunk.delta).join('')).toBe('Thought: done');
    expect(chunks.at(-1)).toMatchObject({ state: ModelStatusCode.END, content: 'Thought: done' });
  });

  it('releases a held-back stop-word prefix that turned out not to be one', async () => {
    const fake = await serve([{ content: 'a <|im but not the end', chunkSize: 4 }]);
    const chunks = await collect(client(fake, { stopWords: ['<|im_end|>'] }).streamChat(user('x')));
    expect(chunks.at(-1)?.content).toBe('a <|im but not the end');
  });

  it('leaving the loop early aborts the request', async () => {
    // One piece of text, then the stream stays open: the loop is left after it.
    const fake = await serve([{ events: [contentEvent('xxx')], hang: true }]);
    const llm = client(fake);
    for await (const chunk of llm.streamChat(user('x'))) {
      if (chunk.content.length >= 3) break;
    }
    await expect.poll(() => fake.requests[0]?.aborted).toBe(true);
  });

  it('streams through an AsyncStreamingAgent', async () => {
    const fake = await serve([{ content: 'streamed reply<|im_end|>tail', chunkSize: 4, ignoreStop: true }]);
    const agent = new AsyncStreamingAgent({
      llm: client(fake, { stopWords: ['<|im_end|>'] }),
      template: 'sys',
    });
    const messages = [];
    for await (const message of agent.call('hi', { sessionId: 1 })) messages.push(message);
    expect(messages.at(-1)?.content).toBe('streamed reply');
    expect(messages.at(-1)?.streamState).toBe(ModelStatusCode.END);
    expect(messages.length).toBeGreaterThan(2);
    expect(fake.requests[0]?.body.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('works in an AsyncAgent with concurrent sessions', async () => {
    const fake = await serve((request) => `echo ${request.body.messages.at(-1).content}`);
    const agent = new AsyncAgent({ llm: client(fake) });
    const replies = await Promise.all([1, 2, 3].map((i) => agent.call(`q${i}`, { sessionId: i })));
    expect(replies.map((reply) => reply.content)).toEqual(['echo q1', 'echo q2', 'echo q3']);
  });
});

describe('AsyncGPTAPI malformed replies', () => {
  it('a malformed JSON body gives a clear error, not retried', async () => {
    const fake = await serve([{ body: '{"choices": [' }, 'never']);
    const error = await client(fake)
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LLMRequestError', retryable: false });
    expect((error as Error).message).toMatch(/malformed JSON/);
  });

  it('a body that is not a completion gives a clear error', async () => {
    const fake = await serve([{ body: '<html>proxy error</html>', contentType: 'text/html' }]);
    await expect(client(fake).chat(user('x'))).rejects.toThrow(/not a completion.*proxy error/);
  });

  it('a malformed SSE event gives a clear error', async () => {
    const fake = await serve([{ events: ['{"choices":[{"delta":{"content":"ok"}}]}', '{not json'] }]);
    const error = await collect(client(fake).streamChat(user('x'))).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LLMRequestError' });
    expect((error as Error).message).toMatch(/malformed JSON/);
  });

  it('an SSE event of the wrong shape gives a clear error', async () => {
    const fake = await serve([{ events: ['{"unexpected": true}'] }]);
    await expect(collect(client(fake).streamChat(user('x')))).rejects.toThrow(/malformed stream event/);
  });

  it('an error event inside the stream is reported', async () => {
    const fake = await serve([{ events: ['{"error": {"message": "model crashed"}}'] }]);
    await expect(collect(client(fake).streamChat(user('x')))).rejects.toThrow(/model crashed/);
  });

  it('a stream that stalls times out instead of hanging', async () => {
    const fake = await serve([
      {
        content: 'never finishes',
        chunkSize: 2,
        hang: true,
        events: ['{"choices":[{"delta":{"content":"ok"}}]}'],
      },
    ]);
    const error = await collect(client(fake, { timeout: 100 }).streamChat(user('x'))).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'LLMRequestError', retryable: true });
    expect((error as Error).message).toMatch(/timed out/);
  });
});
