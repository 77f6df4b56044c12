import { ActionStatusCode, ConfigurationError } from 'lagent-ts';
import {
  AsyncWebBrowser,
  createSearcher,
  SEARCHER_TYPES,
  SearxngSearcher,
  searcherCredentialsFromEnv,
} from 'lagent-ts/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FakeHttpServer } from '../../helpers/http-server';
import { type SearxngHit, startFakeSearxng } from './fakes/searxng';

const HITS: SearxngHit[] = [
  { url: 'https://lagent.example/one', title: 'Lagent <b>one</b>', content: 'An agent &amp; its tools' },
  { url: 'https://www.youtube.com/watch?v=x', title: 'Video', content: 'A video' },
  { url: 'https://lagent.example/paper.pdf', title: 'Paper', content: 'A PDF' },
  { url: 'https://lagent.example/two', title: 'Lagent two', content: 'More' },
];

let instance: FakeHttpServer;
let closed: FakeHttpServer;
let prefixed: FakeHttpServer;

beforeAll(async () => {
  [instance, closed, prefixed] = await Promise.all([
    startFakeSearxng({ index: { lagent: HITS } }),
    startFakeSearxng({ index: { lagent: HITS }, json: false }),
    startFakeSearxng({ index: { lagent: HITS }, prefix: '/searx' }),
  ]);
});
afterAll(async () => {
  await Promise.all([instance.close(), closed.close(), prefixed.close()]);
});
afterEach(() => {
  vi.unstubAllEnvs();
  instance.requests.length = 0;
});

describe('SearxngSearch', () => {
  it('asks the instance for JSON and keeps its results, filtered, without a key header', async () => {
    const outcome = await new SearxngSearcher({ baseURL: instance.url, language: 'en' }).search('lagent');
    expect(outcome.ok && outcome.data).toEqual([
      { url: 'https://lagent.example/one', title: 'Lagent one', summ: 'An agent & its tools' },
      { url: 'https://lagent.example/two', title: 'Lagent two', summ: 'More' },
    ]);
    const [request] = instance.requests;
    expect(request!.path).toBe('/search');
    expect(request!.query).toEqual({ q: 'lagent', format: 'json', categories: 'general', language: 'en' });
    expect(request!.headers.searxng).toBeUndefined();
  });

  it("takes Lagent's SEARXNG_URL (with /search) from the environment, and an instance under a path", async () => {
    vi.stubEnv('SEARXNG_URL', `${instance.url}/search`);
    const fromEnvironment = createSearcher('SearxngSearch', { topK: 1 });
    const outcome = await fromEnvironment.search('lagent');
    expect(outcome.ok && outcome.data.map((hit) => hit.url)).toEqual(['https://lagent.example/one']);
    expect(searcherCredentialsFromEnv('SearxngSearch')).toEqual({ baseURL: `${instance.url}/search` });
    const underPath = await new SearxngSearcher({ baseURL: `${prefixed.url}/searx/` }).search('lagent');
    expect(underPath.ok).toBe(true);
  });

  it('sends a key in its header only when one is given', async () => {
    await new SearxngSearcher({ baseURL: instance.url, apiKey: 'k1' }).search('lagent');
    await new SearxngSearcher({ baseURL: instance.url, apiKey: 'k2', authHeader: 'X-Token' }).search('x');
    expect(instance.requests[0]!.headers.searxng).toBe('k1');
    expect(instance.requests[1]!.headers['x-token']).toBe('k2');
  });

  it('without an address, construction fails saying what to set', () => {
    vi.stubEnv('SEARXNG_URL', '');
    expect(() => createSearcher('SearxngSearch')).toThrow(ConfigurationError);
    expect(() => new AsyncWebBrowser({ searcherType: 'SearxngSearch' })).toThrow(
      /baseURL .* or set SEARXNG_URL/,
    );
  });

  it('an instance that does not allow the JSON format is reported with the setting to change', async () => {
    const outcome = await new SearxngSearcher({ baseURL: closed.url }).search('lagent');
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.status).toBe(403);
    expect(outcome.failure.message).toMatch(
      /JSON API \(HTTP 403\).*`json` under `search.formats`.*settings.yml/,
    );
    expect(closed.requests).toHaveLength(1); // a 403 is not retried
  });

  it('a server that is not SearXNG is a malformed answer', async () => {
    const outcome = await new SearxngSearcher({ baseURL: `${instance.url}/elsewhere` }).search('lagent');
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.failure.message).toMatch(/^SearxngSearch: .*HTTP 404.*check baseURL/);
  });

  it("is one of WebBrowser's searcherTypes, searching a private address it was configured with", async () => {
    expect(SEARCHER_TYPES).toContain('SearxngSearch');
    const browser = new AsyncWebBrowser({ searcherType: 'SearxngSearch', baseURL: instance.url });
    try {
      const result = await browser.call({ query: 'lagent' }, 'search');
      expect(result.state).toBe(ActionStatusCode.SUCCESS);
      expect(JSON.parse(result.formatResult())).toEqual({
        0: { url: 'https://lagent.example/one', title: 'Lagent one', summ: 'An agent & its tools' },
        1: { url: 'https://lagent.example/two', title: 'Lagent two', summ: 'More' },
      });
    } finally {
      browser.close();
    }
  });
});
