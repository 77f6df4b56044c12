import { request } from 'node:http';
import { type FakeOpenAIServer, startFakeOpenAI } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { sameThreadServerHint } from '#src/bridge/same-thread';

let server: FakeOpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
    body: JSON.stringify(body),
  });

describe('startFakeOpenAI', () => {
  it('answers chat completions on 127.0.0.1 and records the request', async () => {
    server = await startFakeOpenAI({ script: ['Hello'] });
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await post(`${server.baseURL}/chat/completions`, {
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const json = (await response.json()) as any;
    expect(json.choices[0].message).toEqual({ role: 'assistant', content: 'Hello' });
    expect(json.usage.total_tokens).toBe(json.usage.prompt_tokens + json.usage.completion_tokens);
    expect(server.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      endpoint: 'chat',
      stream: false,
    });
    expect(server.requests[0]?.headers.authorization).toBe('Bearer t');
  });

  it('echoes the last message by default and honours stop', async () => {
    server = await startFakeOpenAI();
    const response = await post(`${server.baseURL}/completions`, {
      model: 'm',
      prompt: 'abc STOP def',
      stop: 'STOP',
    });
    expect(((await response.json()) as any).choices[0].text).toBe('abc ');
  });

  it('streams SSE events ending in [DONE], with usage when asked', async () => {
    server = await startFakeOpenAI({ script: { content: 'abcdef', chunkSize: 2 } });
    const response = await post(`${server.baseURL}/chat/completions`, {
      model: 'm',
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events = (await response.text())
      .split('\n\n')
      .filter(Boolean)
      .map((event) => event.replace(/^data: /, ''));
    expect(events.at(-1)).toBe('[DONE]');
    const parsed = events.slice(0, -1).map((event) => JSON.parse(event));
    expect(parsed.map((event) => event.choices[0]?.delta?.content ?? '').join('')).toBe('abcdef');
    expect(parsed.at(-1).usage.completion_tokens).toBeGreaterThan(0);
  });

  it('scripts errors with headers, and says when the script ran out', async () => {
    server = await startFakeOpenAI({
      script: [{ status: 429, headers: { 'retry-after-ms': '5' }, error: { message: 'slow' } }],
    });
    const first = await post(`${server.baseURL}/chat/completions`, { messages: [] });
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after-ms')).toBe('5');
    expect(((await first.json()) as any).error.message).toBe('slow');
    const second = await post(`${server.baseURL}/chat/completions`, { messages: [] });
    expect(second.status).toBe(400);
    expect(((await second.json()) as any).error.message).toMatch(/no scripted reply for request #2/);
  });

  it('close() drops hanging connections', async () => {
    server = await startFakeOpenAI({ script: { hang: true } });
    const pending = post(`${server.baseURL}/chat/completions`, { messages: [] }).catch(
      (error: unknown) => error,
    );
    await expect.poll(() => server!.requests.length).toBe(1);
    await server.close();
    server = undefined;
    expect(await pending).toBeInstanceOf(Error);
  });
});

/**
 * Posts `total` bytes in 64 KB chunks, as a stream (no content-length); resolves with the status, the body,
 * and how many bytes had been written when the answer came.
 */
function postStream(
  url: string,
  total: number,
): Promise<{ status: number | undefined; body: string; sentBeforeAnswer: number }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } });
    outgoing.on('response', (incoming) => {
      const sentBeforeAnswer = sent;
      let body = '';
      incoming.on('data', (part: Buffer) => {
        body += part;
      });
      incoming.on('end', () => resolve({ status: incoming.statusCode, body, sentBeforeAnswer }));
    });
    outgoing.on('error', reject);
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    const pump = () => {
      while (sent < total) {
        sent += chunk.length;
        if (!outgoing.write(chunk)) {
          outgoing.once('drain', pump);
          return;
        }
      }
      outgoing.end();
    };
    pump();
  });
}

describe('startFakeOpenAI robustness', () => {
  it('answers malformed JSON with a 400 and an OpenAI-style error body, without using up the script', async () => {
    server = await startFakeOpenAI({ script: ['first'] });
    const response = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"messages": [',
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as any;
    expect(error).toEqual({
      message: expect.stringMatching(/could not parse the JSON body/),
      type: 'invalid_request_error',
      param: null,
      code: null,
    });
    expect(server.requests[0]?.body).toBe('{"messages": [');
    const next = await post(`${server.baseURL}/chat/completions`, { messages: [] });
    expect(((await next.json()) as any).choices[0].message.content).toBe('first');
  });

  it('refuses a streamed body over maxBodyBytes with a 413, and keeps serving', async () => {
    server = await startFakeOpenAI({ script: 'still serving', maxBodyBytes: 1024 });
    const total = 256 * 1024 * 1024;
    const { status, body, sentBeforeAnswer } = await postStream(`${server.baseURL}/chat/completions`, total);
    expect(status).toBe(413);
    expect(JSON.parse(body).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'request_too_large',
    });
    // The server answered long before the body was all sent: it did not wait for it, nor keep it.
    expect(sentBeforeAnswer).toBeLessThan(total / 4);
    const declared = await fetch(`${server.baseURL}/chat/completions`, {
      method: 'POST',
      body: Buffer.alloc(4096),
    });
    expect(declared.status).toBe(413);
    const after = await post(`${server.baseURL}/chat/completions`, { messages: [] });
    expect(after.status).toBe(200);
    expect(((await after.json()) as any).choices[0].message.content).toBe('still serving');
  });

  it('streams many chunks with delays without a listener leak', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      server = await startFakeOpenAI({ script: { content: 'x'.repeat(60), chunkSize: 1, chunkDelayMs: 1 } });
      const response = await post(`${server.baseURL}/chat/completions`, { messages: [], stream: true });
      const events = (await response.text()).split('\n\n').filter(Boolean);
      expect(events.length).toBeGreaterThan(60);
      await new Promise((resolve) => setTimeout(resolve, 20)); // warnings are emitted on a later tick
      expect(warnings.map((warning) => warning.name)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('setScript starts counting requests afresh', async () => {
    server = await startFakeOpenAI({ script: ['a', 'b'] });
    const content = async () =>
      ((await (await post(`${server!.baseURL}/chat/completions`, { messages: [] })).json()) as any).choices[0]
        .message.content;
    expect(await content()).toBe('a');
    server.setScript(['c', 'd']);
    expect(await content()).toBe('c');
    expect(await content()).toBe('d');
    const indexes: number[] = [];
    server.setScript((_request, index) => {
      indexes.push(index);
      return 'e';
    });
    await content();
    expect(indexes).toEqual([0]);
    expect(server.requests).toHaveLength(4);
  });

  it('registers its port on this thread, so a blocked sync client can say why it got no answer', async () => {
    server = await startFakeOpenAI();
    expect(sameThreadServerHint(server.baseURL, 'GPTAPI')).toMatch(
      /runs on this same thread, which GPTAPI blocks.*startFakeOpenAIWorker/,
    );
    const { baseURL } = server;
    await server.close();
    server = undefined;
    expect(sameThreadServerHint(baseURL, 'GPTAPI')).toMatch(/^If the server at/);
    expect(sameThreadServerHint('https://api.openai.com/v1', 'GPTAPI')).toBeUndefined();
  });
});
