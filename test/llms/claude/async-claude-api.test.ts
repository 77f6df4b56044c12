import {
  AsyncClaudeAPI,
  ConfigurationError,
  LLMRequestError,
  ModelOutputError,
  ModelStatusCode,
} from 'lagent-ts';
import { type FakeAnthropicServer, startFakeAnthropic } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAnthropicSDK } from '#src/llms/claude-sdk';
import { recordTimerDelays } from '../../helpers/timer-delays';
import { calculator } from '../../helpers/tools';

const user = (content: string) => [{ role: 'user', content }];

let server: FakeAnthropicServer;
const client = (options: ConstructorParameters<typeof AsyncClaudeAPI>[0] = {}) =>
  new AsyncClaudeAPI({
    model: 'claude-test',
    apiKey: 'sk-ant-test',
    baseURL: server.baseURL,
    retryMinDelayMs: 1,
    // The bodies below are checked whole; prompt caching marks are tested in prompt-caching.test.ts.
    cache: false,
    ...options,
  });
const lastBody = () => server.requests.at(-1)?.body;

beforeAll(async () => {
  server = await startFakeAnthropic();
});
afterAll(async () => {
  await server.close();
});

describe('AsyncClaudeAPI chat', () => {
  it('sends the Messages API body: system field, max_tokens, temperature, the API key', async () => {
    server.setScript(['Hello!']);
    const llm = client();
    const text = await llm.chat([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
    expect(text).toBe('Hello!');
    const request = server.requests.at(-1)!;
    expect(request.path).toBe('/v1/messages');
    // The SDK sends the key as `x-api-key` or as a bearer token, depending on its version.
    expect(request.headers['x-api-key'] ?? request.headers.authorization).toMatch(/(^|Bearer )sk-ant-test$/);
    expect(request.headers['anthropic-version']).toBeDefined();
    expect(request.body).toEqual({
      model: 'claude-test',
      max_tokens: 4096,
      system: 'Be brief.',
      temperature: 0.8,
      messages: [{ role: 'user', content: 'hi' }],
    });
  });

  it('sends top_p and top_k only when set, clamps temperature, and merges extraBody', async () => {
    server.setScript('ok');
    await client({ topP: 0.5, temperature: 1.7, maxNewTokens: 99 }).chat(user('a'));
    expect(lastBody()).toMatchObject({ top_p: 0.5, temperature: 1, max_tokens: 99 });
    expect(lastBody().top_k).toBeUndefined();
    await client().chat(user('b'), { topK: 5, extraBody: { metadata: { user_id: 'u1' } } });
    expect(lastBody()).toMatchObject({ top_k: 5, metadata: { user_id: 'u1' } });
    expect(lastBody().top_p).toBeUndefined();
  });

  it('sends stop words as stop_sequences and never returns text after one', async () => {
    server.setScript([
      { content: 'Answer: 42</a> trailing' },
      { content: 'Answer: 42</a> trailing', ignoreStop: true },
    ]);
    const llm = client({ stopWords: ['</a>', '\n'] });
    expect(await llm.chat(user('q'))).toBe('Answer: 42');
    // Whitespace-only stop sequences are refused by Anthropic: cut on this side only.
    expect(lastBody().stop_sequences).toEqual(['</a>']);
    const reply = await llm.generate(user('q'));
    expect(reply).toEqual({
      content: 'Answer: 42',
      toolCalls: [],
      finishReason: 'stop',
      usage: { promptTokens: 11, completionTokens: 6, totalTokens: 17 },
    });
  });

  it('streams text deltas, then an END chunk; stop words cut the stream even when the server ignores them', async () => {
    server.setScript([
      { content: 'Hello, streaming world', chunkSize: 3 },
      { content: 'keep<stop>drop', chunkSize: 2, ignoreStop: true },
    ]);
    const llm = client();
    const chunks = [];
    for await (const chunk of llm.streamChat(user('s'))) chunks.push(chunk);
    expect(lastBody().stream).toBe(true);
    expect(chunks.at(-1)).toEqual({
      state: ModelStatusCode.END,
      content: 'Hello, streaming world',
      delta: '',
    });
    expect(
      chunks
        .filter((c) => c.state === ModelStatusCode.STREAM_ING)
        .map((c) => c.delta)
        .join(''),
    ).toBe('Hello, streaming world');
    expect(chunks.length).toBeGreaterThan(3);
    const cut = [];
    for await (const chunk of llm.streamChat(user('s'), { stopWords: ['<stop>'] })) cut.push(chunk);
    expect(cut.at(-1)?.content).toBe('keep');
    expect(cut.map((c) => c.delta).join('')).toBe('keep');
  });

  it('records token usage per call and per session, streams included', async () => {
    server.setScript([
      { content: 'a', usage: { input_tokens: 10, output_tokens: 3 } },
      { content: 'b', usage: { input_tokens: 7, output_tokens: 2 } },
    ]);
    const llm = client();
    await llm.chat(user('x'), { sessionId: 's1' });
    expect(llm.getLastUsage()).toEqual({ promptTokens: 10, completionTokens: 3, totalTokens: 13 });
    for await (const _ of llm.streamChat(user('y'), { sessionId: 's1' })) {
      // drain
    }
    expect(llm.getLastUsage()).toEqual({ promptTokens: 7, completionTokens: 2, totalTokens: 9 });
    expect(llm.getUsage('s1')).toEqual({ promptTokens: 17, completionTokens: 5, totalTokens: 22 });
    expect(llm.getTotalUsage().totalTokens).toBe(22);
  });
});

describe('AsyncClaudeAPI function calling', () => {
  it('offers tools as Anthropic tools and returns tool_use blocks as typed calls, names mapped back', async () => {
    server.setScript([
      {
        content: 'On it.',
        toolCalls: [{ id: 'toolu_1', name: 'Calculator__add', arguments: { a: 40, b: 2 } }],
      },
    ]);
    const llm = client();
    const reply = await llm.generate(user('40+2'), {
      tools: [calculator],
      toolChoice: { name: 'Calculator.add' },
      parallelToolCalls: false,
    });
    expect(reply).toEqual({
      usage: { promptTokens: 12, completionTokens: 20, totalTokens: 32 },
      content: 'On it.',
      toolCalls: [{ id: 'toolu_1', name: 'Calculator.add', arguments: { a: 40, b: 2 } }],
      finishReason: 'tool_calls',
    });
    const body = lastBody();
    expect(body.tools).toHaveLength(1);
    expect(body.tools[0]).toMatchObject({
      name: 'Calculator__add',
      description: expect.stringContaining('a + b'),
      input_schema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    });
    expect(body.tool_choice).toEqual({
      type: 'tool',
      name: 'Calculator__add',
      disable_parallel_tool_use: true,
    });
  });

  it('maps toolChoice required/none/auto', async () => {
    server.setScript('fine');
    const llm = client();
    await llm.generate(user('x'), { tools: [calculator], toolChoice: 'required' });
    expect(lastBody().tool_choice).toEqual({ type: 'any' });
    await llm.generate(user('x'), { tools: [calculator], toolChoice: 'none' });
    expect(lastBody().tool_choice).toEqual({ type: 'none' });
    await llm.generate(user('x'), { tools: [calculator] });
    expect(lastBody().tool_choice).toBeUndefined();
  });

  it('chat() refuses a reply with tool calls, pointing at generate()', async () => {
    server.setScript({ toolCalls: [{ name: 'Calculator__add', arguments: { a: 1, b: 1 } }] });
    await expect(client().chat(user('x'), { tools: [calculator] })).rejects.toThrow(ModelOutputError);
  });

  it('assembles streamed input_json_delta pieces split at every position', async () => {
    const args = { a: 12.5, b: -3, note: 'quote " and \\ and ünïcode' };
    const json = JSON.stringify(args);
    const llm = client();
    for (let size = 1; size <= json.length + 1; size += size < 12 ? 1 : 7) {
      server.setScript({
        content: 'Let me add.',
        chunkSize: size,
        toolCalls: [
          { id: 'toolu_a', name: 'Calculator__add', arguments: args },
          { id: 'toolu_b', name: 'Calculator__add', arguments: '{"a": 1, "b": 2}' },
        ],
      });
      const chunks = [];
      for await (const chunk of llm.streamChat(user('x'), { tools: [calculator] })) chunks.push(chunk);
      const end = chunks.at(-1)!;
      expect(end.state).toBe(ModelStatusCode.END);
      expect(end.content).toBe('Let me add.');
      expect(end.toolCalls).toEqual([
        { id: 'toolu_a', name: 'Calculator.add', arguments: args },
        { id: 'toolu_b', name: 'Calculator.add', arguments: { a: 1, b: 2 } },
      ]);
    }
  });

  it('a tool call with no input deltas has {} arguments', async () => {
    server.setScript({
      events: [
        { event: 'message_start', data: { type: 'message_start', message: { usage: { input_tokens: 1 } } } },
        {
          event: 'content_block_start',
          data: {
            type: 'content_block_start',
            index: 0,
            content_block: { type: 'tool_use', id: 'toolu_z', name: 'Calculator__add', input: {} },
          },
        },
        { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
        {
          event: 'message_delta',
          data: { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 4 } },
        },
        { event: 'message_stop', data: { type: 'message_stop' } },
      ],
    });
    const llm = client();
    const chunks = [];
    for await (const chunk of llm.streamChat(user('x'), { tools: [calculator] })) chunks.push(chunk);
    expect(chunks.at(-1)?.toolCalls).toEqual([{ id: 'toolu_z', name: 'Calculator.add', arguments: {} }]);
    expect(llm.getLastUsage()).toEqual({ promptTokens: 1, completionTokens: 4, totalTokens: 5 });
  });

  it('converts an OpenAI-shaped tool history: system field, tool_use blocks, tool_result blocks merged in one user turn', async () => {
    server.setScript('Sunny, and 3.');
    const llm = client();
    await llm.generate(
      [
        { role: 'system', content: 'Use tools.' },
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Paris, and 1 + 2?' },
        {
          role: 'assistant',
          content: null,
          toolCalls: [
            { id: 'toolu_1', name: 'Weather', arguments: { city: 'Paris' } },
            { id: 'toolu_2', name: 'Calculator.add', arguments: '{"a":1,"b":2}' },
          ],
        },
        { role: 'tool', content: 'Sunny in Paris', toolCallId: 'toolu_1', name: 'Weather' },
        { role: 'tool', content: '3', toolCallId: 'toolu_2' },
        { role: 'user', content: 'Summarize.' },
        { role: 'assistant', content: 'Sure' },
        { role: 'assistant', content: '' },
        { role: 'environment', content: 'note from the environment' },
        { role: 'system', content: 'late system note' },
      ],
      { tools: [calculator] },
    );
    const body = lastBody();
    expect(body.system).toBe('Use tools.\n\nBe brief.');
    expect(body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris, and 1 + 2?' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'toolu_1', name: 'Weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'Calculator__add', input: { a: 1, b: 2 } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny in Paris' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: '3' },
          { type: 'text', text: 'Summarize.' },
        ],
      },
      { role: 'assistant', content: 'Sure' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'note from the environment' },
          { type: 'text', text: 'late system note' },
        ],
      },
    ]);
  });
});

describe('AsyncClaudeAPI retries, errors, abort and timeouts', () => {
  it('retries a 429 after the retry-after the server asked for', async () => {
    server.setScript([
      { status: 429, headers: { 'retry-after': '0.3' }, error: { message: 'slow down' } },
      'after the wait',
    ]);
    const llm = client({ retryMinDelayMs: 0 });
    const timers = recordTimerDelays();
    try {
      expect(await llm.chat(user('x'))).toBe('after the wait');
    } finally {
      timers.stop();
    }
    // It waited the server's 0.3 s, not its own (here zero) backoff.
    expect(timers.delays).toContain(300);
  });

  it('retries 500 and 529 (overloaded), and says how many attempts were made when it gives up', async () => {
    server.setScript([{ status: 500 }, { status: 529 }, 'recovered']);
    expect(await client({ retry: 2 }).chat(user('x'))).toBe('recovered');
    server.setScript({ status: 503, error: { message: 'down for maintenance' } });
    const error = await client({ retry: 1 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error).toMatchObject({ status: 503, attempts: 2, retryable: true });
    expect((error as Error).message).toMatch(/down for maintenance/);
    expect((error as Error).message).toMatch(/AsyncClaudeAPI request to .*\/v1\/messages/);
  });

  it('does not retry a 401 and reports the server message', async () => {
    server.setScript([{ status: 401, error: { message: 'invalid x-api-key' } }, 'never']);
    const before = server.requests.length;
    const error = await client({ retry: 3 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error).toMatchObject({ status: 401, retryable: false, attempts: 1 });
    expect((error as Error).message).toMatch(/invalid x-api-key/);
    expect(server.requests.length - before).toBe(1);
  });

  it('retries a refused connection, then says the server could not be reached', async () => {
    const closed = await startFakeAnthropic();
    const baseURL = closed.baseURL;
    await closed.close();
    const error = await client({ baseURL, retry: 1, retryMinDelayMs: 0 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error).toMatchObject({ retryable: true, attempts: 2 });
    expect((error as Error).message).toMatch(/could not reach the server/);
  });

  it('turns an error event inside a stream into a non-retryable LLMRequestError', async () => {
    server.setScript({
      events: [
        { event: 'message_start', data: { type: 'message_start', message: { usage: { input_tokens: 1 } } } },
        {
          event: 'error',
          data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
        },
      ],
    });
    const run = async () => {
      for await (const _ of client().streamChat(user('x'))) {
        // drain
      }
    };
    await expect(run()).rejects.toThrow(/Overloaded/);
  });

  it("the caller's signal aborts a request at once and closes its connection", async () => {
    // The server never answers: only the abort ends the request.
    server.setScript({ content: 'late', hang: true });
    const controller = new AbortController();
    const reason = new Error('user left');
    const before = server.requests.length;
    const pending = client().chat(user('x'), { signal: controller.signal });
    await expect.poll(() => server.requests.length).toBe(before + 1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await expect.poll(() => server.requests.at(-1)?.aborted).toBe(true);
  });

  it('aborting mid-stream stops the stream', async () => {
    // Three pieces of text, then the stream stays open: only the abort ends it.
    server.setScript({ content: 'aaa', chunkSize: 1, hang: true });
    const controller = new AbortController();
    const seen: string[] = [];
    const run = async () => {
      for await (const chunk of client().streamChat(user('x'), { signal: controller.signal })) {
        seen.push(chunk.delta);
        if (seen.length === 3) controller.abort(new Error('stop now'));
      }
    };
    await expect(run()).rejects.toThrow('stop now');
    expect(seen).toEqual(['a', 'a', 'a']);
  });

  it('times out an attempt, retries it, then throws a timeout LLMRequestError', async () => {
    // The server never answers: each attempt ends by its timeout.
    server.setScript({ content: 'late', hang: true });
    const before = server.requests.length;
    const error = await client({ timeout: 150, retry: 1, retryMinDelayMs: 0 })
      .chat(user('x'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect((error as Error).message).toMatch(/timed out/);
    expect(error).toMatchObject({ attempts: 2 });
    expect(server.requests.length - before).toBe(2);
  });

  it('times out a stream that goes silent', async () => {
    server.setScript({
      hang: true,
      events: [
        { event: 'message_start', data: { type: 'message_start', message: { usage: { input_tokens: 1 } } } },
        {
          event: 'content_block_start',
          data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        },
        {
          event: 'content_block_delta',
          data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'partial' } },
        },
      ],
    });
    const seen: string[] = [];
    const run = async () => {
      for await (const chunk of client({ timeout: 200, retry: 0 }).streamChat(user('x')))
        seen.push(chunk.delta);
    };
    await expect(run()).rejects.toThrow(/timed out/);
    expect(seen).toEqual(['partial']);
  });
});

describe('AsyncClaudeAPI configuration', () => {
  it('needs an API key when no base URL is given', () => {
    const saved = { key: process.env.ANTHROPIC_API_KEY, url: process.env.ANTHROPIC_BASE_URL };
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_BASE_URL;
    try {
      expect(() => new AsyncClaudeAPI()).toThrow(/ANTHROPIC_API_KEY/);
      process.env.ANTHROPIC_API_KEY = 'sk-env';
      expect(new AsyncClaudeAPI().describe()).toEqual({
        model: 'claude-sonnet-4-6',
        baseURL: 'https://api.anthropic.com',
      });
    } finally {
      if (saved.key === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved.key;
      if (saved.url !== undefined) process.env.ANTHROPIC_BASE_URL = saved.url;
    }
  });

  it('a missing @anthropic-ai/sdk is a ConfigurationError saying what to install', async () => {
    const missing = Object.assign(new Error("Cannot find package '@anthropic-ai/sdk'"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const error = await loadAnthropicSDK('ClaudeAPI', () => Promise.reject(missing)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/^install @anthropic-ai\/sdk to use ClaudeAPI/);
    expect((error as Error).cause).toBe(missing);
    // The real package loads.
    const sdk = await loadAnthropicSDK();
    expect(typeof sdk.default).toBe('function');
  });
});

describe('AsyncClaudeAPI countTokensExact', () => {
  it("asks the count endpoint with the request's system, messages and tools; countTokens stays a local estimate", async () => {
    const llm = client();
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'How many tokens is this question?' },
    ];
    const before = server.requests.length;
    const exact = await llm.countTokensExact(messages, { tools: [calculator] });
    const request = server.requests.at(-1)!;
    expect(server.requests.length).toBe(before + 1);
    expect(request.path).toBe('/v1/messages/count_tokens');
    expect(request.body).toMatchObject({
      model: 'claude-test',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'How many tokens is this question?' }],
    });
    expect(request.body.tools).toHaveLength(1);
    expect(exact).toBeGreaterThan(0);
    // A plain text is one user message; the local estimate asks nobody.
    expect(await llm.countTokensExact('hi')).toBeGreaterThan(0);
    const count = server.requests.length;
    expect(llm.countTokens(messages)).toBeGreaterThan(0);
    expect(server.requests.length).toBe(count);
  });
});
