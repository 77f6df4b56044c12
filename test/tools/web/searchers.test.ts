import { ActionStatusCode } from 'lagent-ts';
import {
  BingSearcher,
  BraveSearcher,
  createSearcher,
  DuckDuckGoSearcher,
  GoogleSearcher,
  type SearcherOptions,
  type SearcherType,
  TencentSearcher,
} from 'lagent-ts/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeHit, type FakeSearchServer, startFakeSearch } from '../fakes/search-services';

const CATS: FakeHit[] = [
  { url: 'https://cats.example/one', title: 'Cats one', snippet: 'All about cats & kittens' },
  { url: 'https://cats.example/two', title: 'Cats two', snippet: 'More cats' },
  { url: 'https://www.youtube.com/watch?v=cats', title: 'Cat video', snippet: 'A video' },
  { url: 'https://cats.example/paper.pdf', title: 'Cat paper', snippet: 'A PDF' },
  { url: 'https://cats.example/three', title: 'Cats three', snippet: 'Even more cats' },
];

let fake: FakeSearchServer;

beforeAll(async () => {
  fake = await startFakeSearch({ index: { cats: CATS } });
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  vi.unstubAllEnvs();
  fake.fault(); // nothing queued
  fake.requests.length = 0;
});

/** The searchers the shared fake serves (SearXNG has its own fake instance: searxng.test.ts). */
type ServedType = Exclude<SearcherType, 'SearxngSearch'>;

/** Each searcher as the fake's credentials need it, with a small backoff for the retry cases. */
const SETUPS: Record<
  ServedType,
  { env: string[]; good: Record<string, string>; bad: Record<string, string> }
> = {
  DuckDuckGoSearch: { env: [], good: {}, bad: {} },
  BingSearch: { env: ['BING_API_KEY'], good: { apiKey: 'test-key' }, bad: { apiKey: 'wrong' } },
  BraveSearch: { env: ['BRAVE_API_KEY'], good: { apiKey: 'test-key' }, bad: { apiKey: 'wrong' } },
  GoogleSearch: { env: ['SERPER_API_KEY'], good: { apiKey: 'test-key' }, bad: { apiKey: 'wrong' } },
  TencentSearch: {
    env: ['TENCENTCLOUD_SECRET_ID', 'TENCENTCLOUD_SECRET_KEY'],
    good: { secretId: 'test-id', secretKey: 'test-secret' },
    bad: { secretId: 'test-id', secretKey: 'wrong-secret' },
  },
};
const TYPES = Object.keys(SETUPS) as ServedType[];

function searcher(type: ServedType, options: SearcherOptions & Record<string, unknown> = {}) {
  return createSearcher(type, { baseURL: fake.url, minDelayMs: 10, ...SETUPS[type].good, ...options });
}

/** What each service's snippet for a hit becomes (Brave appends its extra snippet). */
function expectedSumm(type: ServedType, hit: FakeHit): string {
  const summ = hit.snippet;
  return type === 'BraveSearch' ? `${summ} More about ${hit.title}.` : summ;
}

describe.each(TYPES)('%s against its fake service', (type) => {
  it('finds the results, without blacklisted sites and PDFs, in the service order', async () => {
    const outcome = await searcher(type).search('cats');
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    const kept = CATS.filter((hit) => !hit.url.includes('youtube.com') && !hit.url.endsWith('.pdf'));
    // Bing's ranking (reversed by the fake) decides Bing's order.
    const ordered = type === 'BingSearch' ? [...kept].reverse() : kept;
    expect(outcome.data).toEqual(
      ordered.map((hit) => ({ url: hit.url, title: hit.title, summ: expectedSumm(type, hit) })),
    );
  });

  it('keeps at most topK results', async () => {
    const outcome = await searcher(type, { topK: 2 }).search('cats');
    // Bing is asked for 2 × topK pages (one, two, the video, the PDF), which its ranking lists last first.
    const expected =
      type === 'BingSearch'
        ? ['https://cats.example/two', 'https://cats.example/one']
        : ['https://cats.example/one', 'https://cats.example/two'];
    expect(outcome.ok && outcome.data.map((result) => result.url)).toEqual(expected);
  });

  it('answers an unknown query with no results', async () => {
    const outcome = await searcher(type).search('no such thing');
    expect(outcome.ok && outcome.data).toEqual([]);
  });

  it('retries a 429 after the Retry-After it was given', async () => {
    fake.fault({ status: 429, headers: { 'retry-after': '1' }, body: '{"message":"Too many requests"}' });
    const outcome = await searcher(type).search('cats');
    expect(outcome.ok).toBe(true);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.at - fake.requests[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('retries a 500 and reports it after the last attempt', async () => {
    fake.fault({ status: 500 }, { status: 500 }, { status: 500 });
    const outcome = await searcher(type, { retries: 2 }).search('cats');
    expect(fake.requests).toHaveLength(3);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(outcome.failure.message).toContain('HTTP 500');
    expect(outcome.failure.message).toContain('after 3 attempts');
  });

  it('gives up on a service that does not answer in time', async () => {
    fake.fault({ hang: true });
    const outcome = await searcher(type, { timeout: 300 }).search('cats');
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.kind).toBe('timeout');
    expect(outcome.failure.message.startsWith(`${type}: no answer`)).toBe(true);
  });

  it('reports a malformed body as an API error', async () => {
    fake.fault({
      status: 200,
      body: type === 'DuckDuckGoSearch' ? '\u0000\u0001 binary' : '{"web": {"results": [',
    });
    const outcome = await searcher(type).search('cats');
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.kind).toBe('malformed');
    expect(outcome.failure.state).toBe(ActionStatusCode.API_ERROR);
  });

  if (type !== 'DuckDuckGoSearch') {
    it('reports rejected credentials with what to set', async () => {
      const outcome = await searcher(type, SETUPS[type].bad).search('cats');
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      for (const name of SETUPS[type].env) expect(outcome.failure.message).toContain(name);
      expect(fake.requests).toHaveLength(1);
    });

    it('reads its credentials from the environment at construction, and fails without them', async () => {
      for (const [index, name] of SETUPS[type].env.entries()) {
        vi.stubEnv(name, type === 'TencentSearch' ? ['test-id', 'test-secret'][index]! : 'test-key');
      }
      const fromEnv = createSearcher(type, { baseURL: fake.url });
      expect((await fromEnv.search('cats')).ok).toBe(true);
      for (const name of SETUPS[type].env) vi.stubEnv(name, '');
      const before = fake.requests.length;
      const missing = await createSearcher(type, { baseURL: fake.url }).search('cats');
      expect(fake.requests).toHaveLength(before);
      expect(missing.ok).toBe(false);
      if (missing.ok) return;
      expect(missing.failure.kind).toBe('missing-key');
      expect(missing.failure.state).toBe(ActionStatusCode.API_ERROR);
      expect(missing.failure.message).toContain(SETUPS[type].env[0]);
    });
  }
});

describe('wire formats', () => {
  it('Bing: GET /v7.0/search with q, count = 2 × topK, mkt and the subscription key', async () => {
    await new BingSearcher({ baseURL: fake.url, apiKey: 'test-key', topK: 3, market: 'en-US' }).search(
      'cats',
    );
    const [request] = fake.requests;
    expect(request?.method).toBe('GET');
    expect(request?.path).toBe('/v7.0/search');
    expect(request?.query).toEqual({ q: 'cats', count: '6', mkt: 'en-US' });
    expect(request?.headers['ocp-apim-subscription-key']).toBe('test-key');
  });

  it('Brave: GET /res/v1/web/search with count at most 20 and extra snippets', async () => {
    const outcome = await new BraveSearcher({ baseURL: fake.url, apiKey: 'test-key', topK: 50 }).search(
      'cats',
    );
    expect(outcome.ok).toBe(true);
    const [request] = fake.requests;
    expect(request?.query).toMatchObject({ q: 'cats', count: '20', extra_snippets: 'true' });
    expect(request?.headers['x-subscription-token']).toBe('test-key');
    expect(request?.headers.accept).toBe('application/json');
  });

  it('Serper: POST /search with a JSON body { q, num } and X-API-KEY', async () => {
    await new GoogleSearcher({ baseURL: fake.url, apiKey: 'test-key', topK: 4 }).search('cats');
    const [request] = fake.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/search');
    expect(JSON.parse(request?.body ?? '')).toEqual({ q: 'cats', num: 4 });
    expect(request?.headers['x-api-key']).toBe('test-key');
  });

  it('Tencent: a TC3-signed SearchCommon call (the fake verifies the signature)', async () => {
    const good = await new TencentSearcher({ baseURL: fake.url, apiKey: 'test-id:test-secret' }).search(
      'cats',
    );
    expect(good.ok).toBe(true);
    const [request] = fake.requests;
    expect(request?.headers['x-tc-action']).toBe('SearchCommon');
    expect(request?.headers['x-tc-version']).toBe('2020-12-29');
    expect(JSON.parse(request?.body ?? '')).toEqual({ Query: 'cats' });
    const bad = await new TencentSearcher({
      baseURL: fake.url,
      secretId: 'test-id',
      secretKey: 'nope',
    }).search('cats');
    expect(!bad.ok && bad.failure.message).toContain('AuthFailure.SignatureFailure');
    expect(!bad.ok && bad.failure.kind).toBe('service-error');
  });

  it('DuckDuckGo: POST /html/ with the form, links unwrapped from uddg, ads and markup left out', async () => {
    const outcome = await new DuckDuckGoSearcher({ baseURL: fake.url, region: 'us-en' }).search('cats');
    const [request] = fake.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/html/');
    expect(Object.fromEntries(new URLSearchParams(request?.body))).toEqual({
      q: 'cats',
      kl: 'us-en',
      p: '-1',
    });
    expect(outcome.ok && outcome.data[0]).toEqual({
      url: 'https://cats.example/one',
      title: 'Cats one',
      summ: 'All about cats & kittens',
    });
    expect(outcome.ok && outcome.data.some((result) => result.title === 'An ad')).toBe(false);
  });
});
