import { afterEach, describe, expect, it } from 'vitest';
import { type FakeOpenAIServer, startFakeOpenAI } from '../../src/testing/fake-openai';

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
    await new Promise((resolve) => setTimeout(resolve, 50));
    await server.close();
    server = undefined;
    expect(await pending).toBeInstanceOf(Error);
  });
});
