import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  Agent,
  ConfigurationError,
  GPTAPI,
  LLMRequestError,
  ModelStatusCode,
  StreamingAgent,
} from 'lagent-ts';
import { type FakeOpenAIWorkerServer, startFakeOpenAI, startFakeOpenAIWorker } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const user = (content: string) => [{ role: 'user', content }];

// GPTAPI blocks this thread while it waits, so the server runs on another thread.
let server: FakeOpenAIWorkerServer;
beforeAll(() => {
  server = startFakeOpenAIWorker();
});
afterAll(() => server.close());

function client(options: ConstructorParameters<typeof GPTAPI>[0] = {}) {
  return new GPTAPI({
    model: 'sync-model',
    apiKey: 'sk-sync',
    baseURL: server.baseURL,
    retryMinDelayMs: 1,
    ...options,
  });
}

describe('GPTAPI (sync, through the bridge)', () => {
  it('returns a string and sends the same request as the async client', () => {
    server.setScript(['Hello from the server<|im_end|>ignored']);
    const llm = client({ stopWords: ['<|im_end|>'], temperature: 0.1 });
    const before = server.requests().length;
    const reply = llm.chat(user('hi'), { stopWords: ['STOP'], sessionId: 3, notForTheServer: () => 1 });
    expect(typeof reply).toBe('string');
    const request = server.requests()[before];
    expect(request?.headers.authorization).toBe('Bearer sk-sync');
    expect(request?.body).toMatchObject({
      model: 'sync-model',
      temperature: 0.1,
      stop: ['STOP'],
      messages: user('hi'),
    });
  });

  it('cuts at stop words and keeps genParams on the calling side', () => {
    server.setScript({ content: 'answer<|im_end|>more', ignoreStop: true });
    const llm = client();
    llm.genParams.stopWords.push('<|im_end|>');
    expect(llm.chat(user('x'))).toBe('answer');
  });

  it('works in a sync Agent and a StreamingAgent', () => {
    server.setScript({ content: 'a streamed sync reply', chunkSize: 3 });
    const llm = client();
    expect(new Agent({ llm }).call('hi').content).toBe('a streamed sync reply');
    const messages = [...new StreamingAgent({ llm }).call('hi')];
    expect(messages.length).toBeGreaterThan(3);
    expect(messages.at(-1)).toMatchObject({
      content: 'a streamed sync reply',
      streamState: ModelStatusCode.END,
    });
    expect(messages[0]?.streamState).toBe(ModelStatusCode.STREAM_ING);
  });

  it('streamChat is a plain generator that can be left early', () => {
    // The stream never ends: a generator that read it whole before yielding would wait (here: time out).
    server.setScript({ content: 'x'.repeat(100), chunkSize: 1, hang: true });
    const llm = client({ timeout: 10_000 });
    let seen = 0;
    for (const chunk of llm.streamChat(user('x'))) {
      seen = chunk.content.length;
      if (seen >= 2) break;
    }
    expect(seen).toBe(2);
    const streamed = server.requests().at(-1);
    expect(streamed?.stream).toBe(true);
    server.setScript('after');
    expect(llm.chat(user('again'))).toBe('after');
    // Leaving the loop returned the remote stream, which aborted its HTTP request.
    expect(server.requests().at(-2)).toMatchObject({ stream: true, aborted: true });
  });

  it('errors cross the bridge with their class, status and attempts', () => {
    server.setScript({ status: 503, error: { message: 'overloaded' } });
    let error: unknown;
    try {
      client({ retry: 1 }).chat(user('x'));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error).toMatchObject({ name: 'LLMRequestError', status: 503, attempts: 2, retryable: true });
    expect((error as Error).message).toContain('overloaded');
  });

  it('reports token usage per session', () => {
    server.setScript({ content: 'ok', usage: { prompt_tokens: 7, completion_tokens: 3 } });
    const llm = client();
    llm.chat(user('x'), { sessionId: 'a' });
    llm.chat(user('x'), { sessionId: 'a' });
    expect(llm.getUsage('a')).toEqual({ promptTokens: 14, completionTokens: 6, totalTokens: 20 });
    expect(llm.getLastUsage()).toEqual({ promptTokens: 7, completionTokens: 3, totalTokens: 10 });
  });

  it("a budget counts the retries made in the worker, and a failed request's attempts", () => {
    server.setScript([{ status: 500 }, { content: 'ok', usage: { prompt_tokens: 7, completion_tokens: 3 } }]);
    const llm = client({ retry: 2 });
    const reply = new Agent({ llm }).call('hi', { budget: {} });
    const usage = (reply.extraInfo as { usage: { modelCalls: number; promptTokens: number } }).usage;
    expect(usage.modelCalls).toBe(2);
    expect(usage.promptTokens).toBe(7 + llm.countTokens(user('hi') as never));
    // Made in the worker before the budget could refuse it: the call fails after the fact.
    server.setScript([{ status: 500 }, { content: 'ok', usage: { prompt_tokens: 7, completion_tokens: 3 } }]);
    expect(() => new Agent({ llm }).call('hi', { budget: { modelCalls: 1 } })).toThrow(
      /modelCalls budget \(1\) was passed by the 2 attempts of a model request/,
    );
    server.setScript({ status: 503 });
    let error: unknown;
    try {
      new Agent({ llm }).call('hi', { budget: { modelCalls: 5 } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(llm.getRetryCount()).toBe(4);
  });

  it('constructor errors cross the bridge too', () => {
    expect(() => client({ timeout: -1 })).toThrow(/timeout must be a positive number/);
  });

  it('errors name GPTAPI, not the AsyncGPTAPI it runs on', () => {
    server.setScript({ status: 400, error: { message: 'bad request' } });
    const error = catchError(() => client({ retry: 0 }).chat(user('x')));
    expect((error as Error).message).toMatch(/^GPTAPI request to /);
    expect((error as Error).message).not.toContain('AsyncGPTAPI');
    expect(() => client({ model: '' })).toThrow(/^GPTAPI needs a model name/);
    expect(() => client({ retry: 0.5 })).toThrow(/^GPTAPI: retry must be/);
  });

  it('timeout: Infinity means no timeout; a timeout Node cannot time is refused', () => {
    server.setScript({ content: 'no hurry', delayMs: 30 });
    const llm = client({ timeout: Number.POSITIVE_INFINITY });
    expect(llm.chat(user('x'))).toBe('no hurry');
    expect(llm.callTimeout).toBe(Number.POSITIVE_INFINITY);
    expect(() => client({ timeout: 2 ** 31 })).toThrow(ConfigurationError);
    expect(() => client({ timeout: 2 ** 31 })).toThrow(/Infinity for none/);
  });

  it('every call has a deadline: the client timeout, retries and retry waits, plus a margin', () => {
    const llm = client({ timeout: 1_000, retry: 2, retryMaxDelayMs: 500, maxRetryAfter: 2_000 });
    expect(llm.callTimeout).toBe(3 * 1_000 + 2 * 2_000 + 10_000);
    expect(client().callTimeout).toBe(3 * 120_000 + 2 * 60_000 + 10_000);
  });

  it('a timeout against a server that is blocked by this very thread says why, and what to do', async () => {
    const local = await startFakeOpenAI({ script: 'never read' });
    try {
      const llm = new GPTAPI({ model: 'm', apiKey: 'k', baseURL: local.baseURL, timeout: 300, retry: 0 });
      const error = catchError(() => llm.chat(user('x')));
      expect(error).toBeInstanceOf(LLMRequestError);
      expect((error as Error).message).toMatch(/timed out/);
      expect((error as Error).message).toMatch(
        /runs on this same thread, which GPTAPI blocks while it waits.*startFakeOpenAIWorker\(\).*separate process/,
      );
    } finally {
      await local.close();
    }
  });

  it('a timeout against another local server mentions the possibility', () => {
    server.setScript({ hang: true });
    const error = catchError(() => client({ timeout: 200, retry: 0 }).chat(user('x')));
    expect((error as Error).message).toMatch(
      /timed out.*If the server at http:\/\/127\.0\.0\.1:\d+ runs on this same thread/,
    );
  });

  it('a signal that is already aborted throws before calling', () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    expect(() => client().chat(user('x'), { signal: controller.signal })).toThrow('stop');
  });
});

describe('GPTAPI in a script', () => {
  it('a child process using GPTAPI (under tsx) exits on its own', async () => {
    const fake = await startFakeOpenAI({
      script: ['child reply', { content: 'child stream<|im_end|>x', ignoreStop: true }, { status: 404 }],
    });
    try {
      const tsx = fileURLToPath(new URL('../../node_modules/tsx/dist/cli.mjs', import.meta.url));
      const script = fileURLToPath(new URL('./fixtures/sync-client-script.ts', import.meta.url));
      const child = spawn(process.execPath, [tsx, script], {
        env: { ...process.env, FAKE_BASE_URL: fake.baseURL },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (data: Buffer) => {
        stdout += data;
      });
      child.stderr.on('data', (data: Buffer) => {
        stderr += data;
      });
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => {
          child.kill();
          resolve(null);
        }, 15_000);
        child.on('exit', (exitCode) => {
          clearTimeout(timer);
          resolve(exitCode);
        });
      });
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const result = JSON.parse(stdout);
      expect(result.chat).toBe('child reply');
      expect(result.streamed.at(-1)).toBe('child stream');
      expect(result.error).toEqual({ name: 'LLMRequestError', status: 404 });
      expect(fake.requests).toHaveLength(3);
    } finally {
      await fake.close();
    }
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
