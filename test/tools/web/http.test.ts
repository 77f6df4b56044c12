import { gzipSync } from 'node:zlib';
import { ActionStatusCode } from 'lagent-ts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { blockedAddressReason, HttpClient, safeFetch } from '#src/tools/web/http';
import { BlockedAddressError, publicOnlyLookup } from '#src/tools/web/http/transport';
import { type FakeHttpServer, sendJson, startFakeHttp } from '../../helpers/http-server';
import { recordTimerDelays } from '../../helpers/timer-delays';

let servers: FakeHttpServer[] = [];

async function serve(...args: Parameters<typeof startFakeHttp>): Promise<FakeHttpServer> {
  const server = await startFakeHttp(...args);
  servers.push(server);
  return server;
}

afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

function client(server: FakeHttpServer, options: Partial<ConstructorParameters<typeof HttpClient>[0]> = {}) {
  return new HttpClient({
    service: 'TestSearch',
    baseURL: `${server.url}/api`,
    keyHint: 'set TEST_API_KEY or pass apiKey',
    minDelayMs: 20,
    ...options,
  });
}

describe('blockedAddressReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['0.0.0.0', 'this network'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1%eth0', 'link-local'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['2002:c0a8:0101::1', 'private'],
    ['localhost', 'not an IP'],
  ])('refuses %s', (address, words) => {
    expect(blockedAddressReason(address)).toContain(words);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '172.15.255.255', '2606:4700::1111', '::ffff:8.8.8.8'])(
    'lets the public address %s through',
    (address) => {
      expect(blockedAddressReason(address)).toBeUndefined();
    },
  );
});

describe('publicOnlyLookup (the lookup the socket connects with)', () => {
  const lookup = (host: string, all: boolean) =>
    new Promise<unknown>((resolve, reject) =>
      publicOnlyLookup(host, { all }, (error: Error | null, address: unknown) =>
        error ? reject(error) : resolve(address),
      ),
    );

  it.each([false, true])('refuses a name that resolves to loopback (all: %s)', async (all) => {
    const failure = lookup('localhost', all);
    await expect(failure).rejects.toBeInstanceOf(BlockedAddressError);
    await expect(failure).rejects.toThrow(/^localhost resolves to (127\.0\.0\.1|::1), a loopback address$/);
  });

  it('answers an IP literal that is public with itself', async () => {
    await expect(lookup('8.8.8.8', false)).resolves.toBe('8.8.8.8');
    await expect(lookup('8.8.8.8', true)).resolves.toEqual([{ address: '8.8.8.8', family: 4 }]);
  });
});

describe('HttpClient', () => {
  it('sends the path, query, headers and JSON body, and parses the JSON answer', async () => {
    const server = await serve((request, response) => sendJson(response, 200, { echo: request.query.q }));
    const outcome = await client(server, { headers: { 'x-key': 'k1' } }).json<{ echo: string }>({
      method: 'POST',
      path: '/search',
      query: { q: 'hello world', n: 3, skip: undefined },
      json: { a: 1 },
    });
    expect(outcome.ok && outcome.data).toEqual({ echo: 'hello world' });
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/api/search');
    expect(request?.query).toEqual({ q: 'hello world', n: '3' });
    expect(request?.headers['x-key']).toBe('k1');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual({ a: 1 });
  });

  it('fails without sending anything when a required key is missing', async () => {
    const server = await serve((_request, response) => sendJson(response, 200, {}));
    const http = client(server, { requireKey: true, apiKey: '' });
    const outcome = await http.json({ path: '/x' });
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.kind).toBe('missing-key');
    expect(outcome.failure.state).toBe(ActionStatusCode.API_ERROR);
    expect(outcome.failure.message).toBe(
      'TestSearch: no API key is configured; set TEST_API_KEY or pass apiKey.',
    );
    expect(server.requests).toHaveLength(0);
  });

  it.each([401, 403])('reports a rejected key (HTTP %i) at once, without retrying', async (status) => {
    const server = await serve((_request, response) =>
      sendJson(response, status, { error: { message: 'Access denied due to invalid subscription key.' } }),
    );
    const outcome = await client(server, { apiKey: 'bad' }).json();
    expect(server.requests).toHaveLength(1);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(outcome.failure.status).toBe(status);
    expect(outcome.failure.message).toContain(`the API key was rejected (HTTP ${status}); set TEST_API_KEY`);
    expect(outcome.failure.message).toContain('invalid subscription key');
    const action = outcome.failure.toActionReturn();
    expect(action.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(action.errmsg).toBe(outcome.failure.message);
  });

  it('waits as long as a 429 Retry-After (seconds) asks, then succeeds', async () => {
    const server = await serve((_request, response, index) =>
      index === 0
        ? sendJson(response, 429, { message: 'slow down' }, { 'retry-after': '1' })
        : sendJson(response, 200, { fine: true }),
    );
    const timers = recordTimerDelays();
    const outcome = await client(server)
      .json()
      .finally(() => timers.stop());
    expect(outcome.ok && outcome.data).toEqual({ fine: true });
    expect(outcome.ok && outcome.attempts).toBe(2);
    // It waited the server's second, not its own 20 ms backoff.
    expect(timers.delays).toContain(1000);
    expect(timers.delays).not.toContain(20);
  });

  it('honours a Retry-After given as an HTTP date', async () => {
    // The clock stands still at a whole second (timers run as usual): the date is exactly 2 s from now.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2030-01-02T03:04:05.000Z') });
    const timers = recordTimerDelays();
    try {
      const server = await serve((_request, response, index) =>
        index === 0
          ? sendJson(response, 503, 'busy', { 'retry-after': new Date(Date.now() + 2000).toUTCString() })
          : sendJson(response, 200, { fine: true }),
      );
      const outcome = await client(server).json();
      expect(outcome.ok).toBe(true);
    } finally {
      timers.stop();
      vi.useRealTimers();
    }
    // The date's 2 s, not the 20 ms backoff.
    expect(timers.delays).toContain(2000);
    expect(timers.delays).not.toContain(20);
  });

  it('does not retry when Retry-After asks for longer than maxRetryAfterMs, and says how long', async () => {
    const server = await serve((_request, response) => sendJson(response, 429, {}, { 'retry-after': '120' }));
    const outcome = await client(server, { maxRetryAfterMs: 1000 }).json();
    expect(server.requests).toHaveLength(1);
    expect(!outcome.ok && outcome.failure.message).toContain('asks to wait 120 s');
  });

  it('retries 500 with backoff and gives up after the bounded number of attempts', async () => {
    const server = await serve((_request, response) => sendJson(response, 500, { message: 'boom' }));
    const timers = recordTimerDelays();
    const outcome = await client(server, { retries: 2, minDelayMs: 50 })
      .json()
      .finally(() => timers.stop());
    expect(server.requests).toHaveLength(3);
    // 50 ms before the second attempt, twice that before the third.
    expect(timers.delays.filter((delay) => delay === 50 || delay === 100)).toEqual([50, 100]);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.status).toBe(500);
    expect(outcome.failure.attempts).toBe(3);
    expect(outcome.failure.message).toBe(
      'TestSearch: the service failed (HTTP 500) after 3 attempts; try again later. The service said: boom',
    );
  });

  it('recovers when a 5xx is followed by success', async () => {
    const server = await serve((_request, response, index) =>
      index < 2 ? sendJson(response, 502, '') : sendJson(response, 200, [1, 2]),
    );
    const outcome = await client(server).json();
    expect(outcome.ok && outcome.data).toEqual([1, 2]);
  });

  it('does not retry other 4xx statuses', async () => {
    const server = await serve((_request, response) => sendJson(response, 400, { message: 'q is required' }));
    const outcome = await client(server).json();
    expect(server.requests).toHaveLength(1);
    expect(!outcome.ok && outcome.failure.message).toContain('HTTP 400');
    expect(!outcome.ok && outcome.failure.message).toContain('q is required');
  });

  it('times out an attempt that gets no answer, without retrying it', async () => {
    const server = await serve(() => {
      // never answers
    });
    const outcome = await client(server, { timeout: 300 }).json();
    expect(server.requests).toHaveLength(1);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.kind).toBe('timeout');
    expect(outcome.failure.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(outcome.failure.message).toContain('within 300 ms');
  });

  it('reports a malformed JSON body as an API error', async () => {
    const server = await serve((_request, response) => sendJson(response, 200, '{"results": [1, 2'));
    const outcome = await client(server).json();
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.kind).toBe('malformed');
    expect(outcome.failure.state).toBe(ActionStatusCode.API_ERROR);
    expect(outcome.failure.message).toContain('not valid JSON');
  });

  it('does not read an answer larger than maxResponseBytes', async () => {
    const server = await serve((_request, response) => sendJson(response, 200, { data: 'x'.repeat(5000) }));
    const outcome = await client(server, { maxResponseBytes: 1000 }).json();
    expect(!outcome.ok && outcome.failure.kind).toBe('malformed');
    expect(!outcome.ok && outcome.failure.message).toContain('larger than 1000 bytes');
  });

  it('keeps the body of an error answer for services that explain themselves there', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(400, { 'content-type': 'application/xml' });
      response.end('<error><reason>bad field</reason></error>');
    });
    const outcome = await client(server).text();
    expect(!outcome.ok && outcome.failure.body).toBe('<error><reason>bad field</reason></error>');
  });

  it('reports a server that cannot be reached', async () => {
    const server = await serve((_request, response) => sendJson(response, 200, {}));
    await server.close();
    const outcome = await client(server).json();
    expect(!outcome.ok && outcome.failure.kind).toBe('network');
    expect(!outcome.ok && outcome.failure.message).toContain('ECONNREFUSED');
  });

  it('stops at once when the caller aborts, also during a backoff wait', async () => {
    // The server asks for 10 minutes: only the abort ends the wait.
    const server = await serve((_request, response) => sendJson(response, 503, {}, { 'retry-after': '600' }));
    const controller = new AbortController();
    const timers = recordTimerDelays();
    const pending = client(server, { maxRetryAfterMs: 600_000 }).json({ signal: controller.signal });
    await expect.poll(() => timers.delays.includes(600_000)).toBe(true);
    timers.stop();
    controller.abort(new Error('stop'));
    const outcome = await pending;
    expect(!outcome.ok && outcome.failure.kind).toBe('aborted');
    expect(server.requests).toHaveLength(1);
  });

  it('drops the connection of a request the caller aborts', async () => {
    const server = await serve(() => {
      // never answers
    });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stop')), 100);
    const outcome = await client(server).json({ signal: controller.signal });
    expect(!outcome.ok && outcome.failure.kind).toBe('aborted');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.requests[0]?.clientLeft).toBe(true);
  });
});

describe('safeFetch', () => {
  const page = (body: string, type = 'text/html; charset=utf-8') => ({ body, type });

  async function pageServer(
    pages: Record<string, { body: string | Buffer; type: string; headers?: object }>,
  ) {
    return serve((request, response) => {
      const found = pages[request.path];
      if (!found) return sendJson(response, 404, 'not here');
      response.writeHead(200, { 'content-type': found.type, ...found.headers });
      response.end(found.body);
    });
  }

  it('fetches a page when private addresses are allowed', async () => {
    const server = await pageServer({ '/a': page('<p>hello</p>') });
    const outcome = await safeFetch(`${server.url}/a`, { allowPrivateNetwork: true });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.data).toEqual({ contentType: 'text/html', text: '<p>hello</p>', truncated: false });
    expect(outcome.url).toBe(`${server.url}/a`);
  });

  it.each([
    ['loopback by IP', (port: number) => `http://127.0.0.1:${port}/a`, '127.0.0.1 is a loopback address'],
    ['loopback by name', (port: number) => `http://localhost:${port}/a`, 'localhost resolves to'],
    ['IPv6 loopback', (port: number) => `http://[::1]:${port}/a`, '::1 is a loopback address'],
    ['IPv4-mapped loopback', (port: number) => `http://[::ffff:127.0.0.1]:${port}/a`, 'loopback'],
    ['loopback in decimal', () => 'http://2130706433/a', '127.0.0.1 is a loopback address'],
    ['the metadata service', () => 'http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['a private network', () => 'http://10.0.0.8/', 'private'],
  ])('refuses %s by default, before anything is sent', async (_name, url, words) => {
    const server = await pageServer({ '/a': page('secret') });
    const outcome = await safeFetch(url(server.port));
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.kind).toBe('blocked-url');
    expect(outcome.failure.state).toBe(ActionStatusCode.API_ERROR);
    expect(outcome.failure.message).toContain(words);
    expect(outcome.failure.message).toContain('only public addresses');
    expect(server.requests).toHaveLength(0);
  });

  it.each(['file:///etc/passwd', 'ftp://example.com/x', 'javascript:alert(1)', 'data:text/html,hi'])(
    'refuses the non-http URL %s',
    async (url) => {
      const outcome = await safeFetch(url, { allowPrivateNetwork: true });
      expect(!outcome.ok && outcome.failure.message).toContain('only http and https URLs can be opened');
    },
  );

  it('refuses a URL that is not one', async () => {
    const outcome = await safeFetch('not a url');
    expect(!outcome.ok && outcome.failure.message).toContain('is not a valid URL');
  });

  it('checks every redirect again: a redirect to loopback is refused', async () => {
    const target = await pageServer({ '/secret': page('secret') });
    for (const location of [
      `http://127.0.0.2:${target.port}/secret`,
      `http://localhost:${target.port}/secret`,
      `http://[::1]:${target.port}/secret`,
    ]) {
      const redirector = await serve((_request, response) => {
        response.writeHead(302, { location });
        response.end();
      });
      // The first host is exempt (as an intranet host would be); the redirect target is not.
      const outcome = await safeFetch(`${redirector.url}/start`, { allowedHosts: ['127.0.0.1'] });
      expect(outcome.ok).toBe(false);
      if (outcome.ok) continue;
      expect(outcome.failure.kind).toBe('blocked-url');
      expect(outcome.failure.message).toContain('redirected from');
      expect(redirector.requests).toHaveLength(1);
    }
    expect(target.requests).toHaveLength(0);
  });

  it('follows redirects, relative ones too, up to the bound', async () => {
    const server = await serve((request, response) => {
      const step = Number(request.path.slice(1));
      if (step < 3) {
        response.writeHead(301, { location: `/${step + 1}` });
        return response.end();
      }
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(`arrived at ${step}`);
    });
    const outcome = await safeFetch(`${server.url}/0`, { allowPrivateNetwork: true, maxRedirects: 3 });
    expect(outcome.ok && outcome.data.text).toBe('arrived at 3');
    expect(outcome.ok && outcome.url).toBe(`${server.url}/3`);
    const tooFew = await safeFetch(`${server.url}/0`, { allowPrivateNetwork: true, maxRedirects: 2 });
    expect(!tooFew.ok && tooFew.failure.kind).toBe('too-many-redirects');
    expect(!tooFew.ok && tooFew.failure.state).toBe(ActionStatusCode.HTTP_ERROR);
  });

  it('cuts a body at maxBytes', async () => {
    const server = await pageServer({ '/big': page('x'.repeat(200_000), 'text/plain') });
    const outcome = await safeFetch(`${server.url}/big`, { allowPrivateNetwork: true, maxBytes: 1000 });
    expect(outcome.ok && outcome.data.text.length).toBe(1000);
    expect(outcome.ok && outcome.data.truncated).toBe(true);
  });

  it('gives up on a page that does not load in time', async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.write('<p>a start, and then nothing');
    });
    const outcome = await safeFetch(`${server.url}/slow`, { allowPrivateNetwork: true, timeout: 300 });
    expect(!outcome.ok && outcome.failure.kind).toBe('timeout');
    expect(!outcome.ok && outcome.failure.message).toContain('did not load within 300 ms');
  });

  it('reports error statuses and non-text documents as failures', async () => {
    const server = await pageServer({ '/doc.pdf': { body: '%PDF-1.4', type: 'application/pdf' } });
    const missing = await safeFetch(`${server.url}/nothing`, { allowPrivateNetwork: true });
    expect(!missing.ok && missing.failure.status).toBe(404);
    expect(!missing.ok && missing.failure.message).toContain('the page does not exist');
    const pdf = await safeFetch(`${server.url}/doc.pdf`, { allowPrivateNetwork: true });
    expect(!pdf.ok && pdf.failure.kind).toBe('unsupported-content');
  });

  it('decompresses gzip and decodes the declared charset', async () => {
    const server = await pageServer({
      '/gz': { body: gzipSync('<p>zipped</p>'), type: 'text/html', headers: { 'content-encoding': 'gzip' } },
      '/latin': { body: Buffer.from('<p>caf\xe9</p>', 'latin1'), type: 'text/html; charset=iso-8859-1' },
    });
    const zipped = await safeFetch(`${server.url}/gz`, { allowPrivateNetwork: true });
    expect(zipped.ok && zipped.data.text).toBe('<p>zipped</p>');
    const latin = await safeFetch(`${server.url}/latin`, { allowPrivateNetwork: true });
    expect(latin.ok && latin.data.text).toBe('<p>café</p>');
  });
});
