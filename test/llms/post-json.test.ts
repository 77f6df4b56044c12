import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AsyncGPTAPI, LLMRequestError } from 'lagent-ts';
import { APIConnectionError, APIError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { postJSON } from '#src/llms/post-json';

const completion = JSON.stringify({
  id: 'x',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' }],
});

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => {
    if (server === undefined) resolve();
    else {
      server.close(() => resolve());
      server.closeAllConnections();
    }
  });
  server = undefined;
});

/** A server whose first answer is cut mid-body, later ones whole; it records the client's socket per request. */
async function cutOnce(): Promise<{ baseURL: string; sockets: string[] }> {
  const sockets: string[] = [];
  server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      sockets.push(`${request.socket.remotePort}`);
      if (sockets.length === 1) {
        response.writeHead(200, {
          'content-type': 'application/json',
          'content-length': String(completion.length),
        });
        response.write(completion.slice(0, 20));
        setTimeout(() => request.socket.destroy(), 5);
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(completion);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseURL: `http://127.0.0.1:${port}/v1`, sockets };
}

describe('postJSON (the non-streaming transport)', () => {
  it('a reply cut mid-body is a retryable connection failure, never a partial parse', async () => {
    const { baseURL } = await cutOnce();
    const url = new URL(`${baseURL}/chat/completions`);
    const error = await postJSON(url, {}, '{}', new AbortController().signal).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(SyntaxError);
    const llm = new AsyncGPTAPI({ model: 'm', apiKey: 'k', baseURL, retryMinDelayMs: 1 });
    expect(await llm.chat([{ role: 'user', content: 'x' }])).toBe('whole');
  });

  it('gives up with an LLMRequestError that says the connection was lost when every reply is cut', async () => {
    server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
        response.write('{"choices"');
        setTimeout(() => request.socket.destroy(), 5);
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const llm = new AsyncGPTAPI({
      model: 'm',
      apiKey: 'k',
      baseURL: `http://127.0.0.1:${port}/v1`,
      retry: 1,
      retryMinDelayMs: 1,
    });
    const error = await llm.chat([{ role: 'user', content: 'x' }]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect((error as LLMRequestError).attempts).toBe(2);
    expect((error as Error).message).toMatch(/lost its connection|could not reach/);
  });

  it('keeps connections alive between calls', async () => {
    const { baseURL, sockets } = await cutOnce();
    sockets.push('skip the cut reply');
    const llm = new AsyncGPTAPI({ model: 'm', apiKey: 'k', baseURL, retry: 0 });
    for (let i = 0; i < 3; i++) await llm.chat([{ role: 'user', content: 'x' }]);
    expect(new Set(sockets.slice(1)).size).toBe(1);
  });

  it('answers HTTP errors with the SDK classes and refused connections with APIConnectionError', async () => {
    server = createServer((request, response) => {
      request.resume();
      response.writeHead(429, { 'content-type': 'application/json', 'retry-after-ms': '7' });
      response.end(
        JSON.stringify({ error: { message: 'slow down', type: 'rate', code: 'insufficient_quota' } }),
      );
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const signal = new AbortController().signal;
    const error = await postJSON(new URL(`http://127.0.0.1:${port}/v1/x`), {}, '{}', signal).catch(
      (caught) => caught,
    );
    expect(error).toBeInstanceOf(APIError);
    expect(error).toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect((error as APIError).headers?.get('retry-after-ms')).toBe('7');
    const refused = await postJSON(new URL('http://127.0.0.1:1/v1/x'), {}, '{}', signal).catch(
      (caught) => caught,
    );
    expect(refused).toBeInstanceOf(APIConnectionError);
  });
});
