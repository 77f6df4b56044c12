import { lookup as dnsLookup } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { ActionStatusCode } from 'lagent-ts';
import { AsyncWebBrowser } from 'lagent-ts/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient, safeFetch } from '#src/tools/web/http';
import { BlockedAddressError, sendRequest } from '#src/tools/web/http/transport';
import { type FakeHttpServer, sendJson, startFakeHttp } from '../../helpers/http-server';

/**
 * A trusted request (the search API's baseURL, or a fetch with allowPrivateNetwork) leaves an idle keep-alive
 * socket to the internal host behind. A fetch chosen by the model must not ride on it.
 */
let internal: FakeHttpServer;

beforeAll(async () => {
  internal = await startFakeHttp((request, response) => {
    if (request.path === '/admin') {
      response.writeHead(200, { 'content-type': 'text/html' });
      return response.end('<html><body><p>internal admin page: the secret</p></body></html>');
    }
    // A Bing-shaped answer, so the internal server can be the browser's search API.
    sendJson(response, 200, { _type: 'SearchResponse', queryContext: { originalQuery: '' } });
  });
});
afterAll(async () => {
  await internal.close();
});
afterEach(() => {
  internal.requests.length = 0;
});

const localhost = () => `http://localhost:${internal.port}`;
const adminRequests = () => internal.requests.filter((request) => request.path === '/admin');

describe('a checked fetch after a trusted request to the same host', () => {
  it('is refused after the search API (a trusted baseURL) used the host', async () => {
    const browser = new AsyncWebBrowser({
      searcherType: 'BingSearch',
      apiKey: 'test-key',
      baseURL: localhost(),
      allowPrivateNetwork: false,
    });
    try {
      const search = await browser.call({ query: 'anything' }, 'search');
      expect(search.state).toBe(ActionStatusCode.SUCCESS);
      const opened = await browser.call({ url: `${localhost()}/admin` }, 'open_url');
      expect(opened.state).toBe(ActionStatusCode.API_ERROR);
      expect(opened.errmsg).toContain('WebBrowser.open_url: refused');
      expect(opened.errmsg).toContain('loopback');
      expect(opened.formatResult()).not.toContain('the secret');
      expect(adminRequests()).toHaveLength(0);
    } finally {
      browser.close();
    }
  });

  it('is refused after an HttpClient request and after a fetch with allowPrivateNetwork', async () => {
    const client = new HttpClient({ service: 'Internal', baseURL: localhost() });
    expect((await client.text({ path: '/status' })).ok).toBe(true);
    const trusted = await safeFetch(`${localhost()}/admin`, { allowPrivateNetwork: true });
    expect(trusted.ok && trusted.data.text).toContain('the secret');
    const checked = await safeFetch(`${localhost()}/admin`);
    expect(checked.ok).toBe(false);
    expect(!checked.ok && checked.failure.kind).toBe('blocked-url');
    expect(adminRequests()).toHaveLength(1); // the trusted one only
  });

  it('checks the connected socket’s address too, not only the lookup', async () => {
    // A lookup that lets loopback through: the check on the socket's remote address still refuses it.
    const permissive: LookupFunction = (hostname, options, callback) =>
      dnsLookup(hostname, options, callback);
    const attempt = sendRequest(new URL(`${localhost()}/admin`), {
      method: 'GET',
      headers: {},
      signal: new AbortController().signal,
      maxBytes: 1024,
      checked: true,
      lookup: permissive,
    });
    await expect(attempt).rejects.toBeInstanceOf(BlockedAddressError);
    await expect(attempt).rejects.toThrow(
      /connected to (127\.0\.0\.1|::1|::ffff:127\.0\.0\.1), a loopback address/,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(adminRequests()).toHaveLength(0);
  });
});
