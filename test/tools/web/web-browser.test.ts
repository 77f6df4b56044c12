import { fileURLToPath } from 'node:url';
import { ActionStatusCode, ConfigurationError, SyncBridge } from 'lagent-ts';
import { AsyncWebBrowser, WebBrowser, type WebBrowserOptions } from 'lagent-ts/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type FakeHit, type FakeSearchServer, startFakeSearch } from '../fakes/search-services';

const paragraph = (topic: string, n: number) =>
  `<p>${topic} paragraph ${n}: ${topic} are wonderful animals that people have kept for thousands of years, and they appear in many stories.</p>`;

function article(topic: string, paragraphs = 5) {
  return `<!doctype html><html><head><title>${topic} | Pets</title><style>body{color:red}</style>
<script>window.secretToken = "do-not-leak";</script></head><body>
<nav><a href="/">Home</a><a href="/about">About us</a></nav><header>Pets site header</header>
<main><article><h1>All about ${topic}</h1>${Array.from({ length: paragraphs }, (_, n) => paragraph(topic, n + 1)).join('')}</article></main>
<footer>Copyright Pets footer</footer><script>trackVisitor()</script></body></html>`;
}

const INDEX: Record<string, FakeHit[]> = {
  cats: [
    { url: '{origin}/pages/cats', title: 'Cats', snippet: 'About cats' },
    { url: '{origin}/pages/shared', title: 'Pets', snippet: 'Cats and dogs' },
    { url: '{origin}/pages/missing', title: 'Gone', snippet: 'A dead link' },
  ],
  dogs: [
    { url: '{origin}/pages/dogs', title: 'Dogs', snippet: 'About dogs' },
    { url: '{origin}/pages/shared', title: 'Pets', snippet: 'Dogs and cats' },
  ],
  secrets: [{ url: 'http://169.254.169.254/latest/meta-data/', title: 'Metadata', snippet: 'instance data' }],
};

const PAGES = {
  cats: { body: article('Cats') },
  dogs: { body: article('Dogs') },
  shared: { body: article('Pets') },
  long: { body: article('Horses', 200) },
  plain: { body: 'line one\n\n\n   line   two\n', contentType: 'text/plain; charset=utf-8' },
  'to-localhost': { redirect: 'http://localhost:{port}/pages/cats' },
  'to-cats': { redirect: '/pages/cats' },
};

let fake: FakeSearchServer;
let browsers: AsyncWebBrowser[] = [];

beforeAll(async () => {
  fake = await startFakeSearch({ index: INDEX, pages: PAGES });
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  for (const browser of browsers) browser.close();
  browsers = [];
  fake.requests.length = 0;
});

function browser(options: WebBrowserOptions = {}) {
  const made = new AsyncWebBrowser({
    searcherType: 'BingSearch',
    apiKey: 'test-key',
    baseURL: fake.url,
    allowPrivateNetwork: true,
    searcherOptions: { minDelayMs: 10 },
    ...options,
  });
  browsers.push(made);
  return made;
}

const pageRequests = () => fake.requests.filter((request) => request.path.startsWith('/pages/'));

describe('AsyncWebBrowser.search', () => {
  it('is the WebBrowser toolkit with Lagent’s three APIs', () => {
    const tool = browser();
    expect(tool.name).toBe('WebBrowser');
    expect(tool.isToolkit).toBe(true);
    expect([...tool.apis.keys()]).toEqual(['search', 'select', 'open_url']);
    expect(tool.toOpenAITools().map((entry) => entry.function.name)).toEqual([
      'WebBrowser__search',
      'WebBrowser__select',
      'WebBrowser__open_url',
    ]);
  });

  it('numbers the results from 0', async () => {
    const result = await browser().call({ query: 'dogs' }, 'search');
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    // The fake's Bing ranking lists its pages last first.
    expect(JSON.parse(result.formatResult())).toEqual({
      0: { url: `${fake.url}/pages/shared`, title: 'Pets', summ: 'Dogs and cats' },
      1: { url: `${fake.url}/pages/dogs`, title: 'Dogs', summ: 'About dogs' },
    });
  });

  it('searches several queries concurrently, merging results by URL and joining their snippets', async () => {
    const result = await browser().call({ query: ['cats', 'dogs'] }, 'search');
    const numbered = JSON.parse(result.formatResult()) as Record<string, { url: string; summ: string }>;
    const urls = Object.values(numbered).map((entry) => entry.url);
    expect(urls).toHaveLength(new Set(urls).size);
    expect(urls.sort()).toEqual(
      ['cats', 'shared', 'missing', 'dogs'].map((page) => `${fake.url}/pages/${page}`).sort(),
    );
    const shared = Object.values(numbered).find((entry) => entry.url.endsWith('/shared'));
    expect(shared?.summ).toBe('Cats and dogs\nDogs and cats');
    expect(Object.keys(numbered)).toEqual(['0', '1', '2', '3']);
  });

  it('runs the queries at the same time', async () => {
    // Both requests hang: one after another, the second would be sent only once the first had ended.
    const tool = browser({ retries: 0 });
    fake.fault({ hang: true }, { hang: true });
    const controller = new AbortController();
    const searching = tool.call({ query: ['cats', 'dogs'] }, 'search', { signal: controller.signal });
    await expect.poll(() => fake.requests.length).toBe(2);
    expect(fake.requests.map((request) => request.query.q).sort()).toEqual(['cats', 'dogs']);
    expect(fake.requests.some((request) => request.clientLeft)).toBe(false);
    controller.abort(new Error('enough'));
    await expect(searching).rejects.toThrow('enough');
    await expect.poll(() => fake.requests.every((request) => request.clientLeft)).toBe(true);
  });

  it('times out hung queries together, naming each', async () => {
    const tool = browser({ timeout: 400, retries: 0 });
    fake.fault({ hang: true }, { hang: true });
    const result = await tool.call({ query: ['cats', 'dogs'] }, 'search');
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toContain('"cats": BingSearch: no answer');
    expect(result.errmsg).toContain('"dogs": BingSearch: no answer');
  });

  it('applies topK per query', async () => {
    const result = await browser({ topK: 1 }).call({ query: 'cats' }, 'search');
    expect(Object.keys(JSON.parse(result.formatResult()))).toEqual(['0']);
  });

  it('says when nothing was found', async () => {
    const result = await browser().call({ query: 'nothing at all' }, 'search');
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.formatResult()).toBe('No results for "nothing at all"; try other words.');
  });

  it('returns the results of the queries that worked, with a note for the one that failed', async () => {
    const tool = browser({ retries: 0 });
    fake.fault({ status: 400, body: '{"message":"bad query"}' });
    const result = await tool.call({ query: ['cats', 'dogs'] }, 'search');
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.result).toHaveLength(2);
    expect(result.result?.[1]?.content).toMatch(/^The query "(cats|dogs)" failed: BingSearch: .*HTTP 400/);
  });

  it('turns service failures into results the model can read', async () => {
    const rejected = await browser({ apiKey: 'wrong' }).call({ query: 'cats' }, 'search');
    expect(rejected.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(rejected.errmsg).toContain(
      'BingSearch: the API key was rejected (HTTP 401); set BING_API_KEY or pass apiKey',
    );
    fake.fault({ status: 503 }, { status: 503 }, { status: 503 });
    const down = await browser().call({ query: 'cats' }, 'search');
    expect(down.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(down.errmsg).toContain('HTTP 503');
    fake.fault({ status: 200, body: 'not json' });
    const malformed = await browser().call({ query: 'cats' }, 'search');
    expect(malformed.state).toBe(ActionStatusCode.API_ERROR);
  });

  it('stops the search request when the caller aborts', async () => {
    fake.fault({ hang: true });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user cancelled')), 100);
    await expect(browser().call({ query: 'cats' }, 'search', { signal: controller.signal })).rejects.toThrow(
      'user cancelled',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(fake.requests[0]?.clientLeft).toBe(true);
  });

  it('refuses an unknown searcherType at construction', () => {
    expect(() => new AsyncWebBrowser({ searcherType: 'AskJeeves' as never })).toThrow(ConfigurationError);
  });
});

describe('AsyncWebBrowser.select', () => {
  it('reads the chosen results: main text only, no scripts, navigation or markup', async () => {
    const tool = browser();
    await tool.call({ query: 'dogs' }, 'search', { sessionId: 'a' });
    const result = await tool.call({ select_ids: [1] }, 'select', { sessionId: 'a' });
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    const read = JSON.parse(result.formatResult()) as Record<
      string,
      { url: string; title: string; content: string }
    >;
    expect(Object.keys(read)).toEqual(['1']);
    expect(read[1]?.url).toBe(`${fake.url}/pages/dogs`);
    expect(read[1]?.title).toContain('Dogs');
    const content = read[1]?.content ?? '';
    expect(content).toContain('Dogs paragraph 1: Dogs are wonderful animals');
    expect(content).toContain('Dogs paragraph 5');
    for (const noise of [
      'do-not-leak',
      'trackVisitor',
      'About us',
      'Pets site header',
      'Copyright',
      '<p>',
      'color:red',
    ]) {
      expect(content).not.toContain(noise);
    }
  });

  it('cuts long pages at maxPageChars with a note', async () => {
    const tool = browser({ maxPageChars: 300 });
    const result = await tool.call({ url: `${fake.url}/pages/long` }, 'open_url');
    const text = result.formatResult();
    expect(text).toMatch(/\[… truncated: 300 of \d+ characters shown\]$/);
    const shown = Number(/of (\d+) characters/.exec(text)?.[1]);
    expect(shown).toBeGreaterThan(10_000);
  });

  it('keeps each session’s last search apart', async () => {
    const tool = browser();
    await tool.call({ query: 'cats' }, 'search', { sessionId: 1 });
    const other = await tool.call({ select_ids: [2] }, 'select', { sessionId: 2 });
    expect(other.state).toBe(ActionStatusCode.API_ERROR);
    expect(other.errmsg).toBe(
      'WebBrowser.select: there are no search results to select from; call WebBrowser.search first.',
    );
    const own = await tool.call({ select_ids: [2] }, 'select', { sessionId: 1 });
    expect(own.state).toBe(ActionStatusCode.SUCCESS);
  });

  it('notes unknown ids and pages that cannot be read, and reads the rest', async () => {
    const tool = browser();
    await tool.call({ query: 'cats' }, 'search');
    // cats: ranking reversed, so 0 = missing (404), 1 = shared, 2 = cats.
    const result = await tool.call({ select_ids: [0, 1, 9] }, 'select');
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(Object.keys(JSON.parse(result.formatResult().split('\n')[0]!))).toEqual(['1']);
    const notes = (result.result ?? []).slice(1).map((item) => item.content);
    expect(notes).toContain('No result numbered 9 in the last search (its results: 0 to 2).');
    expect(notes.some((note) => /^Result 0 could not be read: .*HTTP 404/.test(note))).toBe(true);
  });

  it('fails as data when no chosen page can be read', async () => {
    const tool = browser();
    await tool.call({ query: 'cats' }, 'search');
    const result = await tool.call({ select_ids: [0] }, 'select');
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toContain('HTTP 404');
  });

  it('reads at most maxSelect pages per call', async () => {
    const tool = browser({ maxSelect: 1 });
    await tool.call({ query: 'cats' }, 'search');
    const result = await tool.call({ select_ids: [2, 1] }, 'select');
    expect(pageRequests()).toHaveLength(1);
    expect(result.result?.at(-1)?.content).toBe('At most 1 page(s) are read per select; left out: 1.');
  });

  it('caches pages per session, and close() forgets everything', async () => {
    const tool = browser();
    await tool.call({ query: 'cats' }, 'search', { sessionId: 's' });
    await tool.call({ select_ids: [2] }, 'select', { sessionId: 's' });
    await tool.call({ select_ids: [2] }, 'select', { sessionId: 's' });
    await tool.call({ url: `${fake.url}/pages/cats` }, 'open_url', { sessionId: 's' });
    expect(pageRequests()).toHaveLength(1);
    await tool.call({ url: `${fake.url}/pages/cats` }, 'open_url', { sessionId: 'other' });
    expect(pageRequests()).toHaveLength(2);
    tool.close();
    const after = await tool.call({ select_ids: [2] }, 'select', { sessionId: 's' });
    expect(after.state).toBe(ActionStatusCode.API_ERROR);
  });

  it('keeps at most maxSessions sessions, forgetting the least recently used', async () => {
    const tool = browser({ maxSessions: 1 });
    await tool.call({ query: 'cats' }, 'search', { sessionId: 1 });
    await tool.call({ query: 'dogs' }, 'search', { sessionId: 2 });
    const forgotten = await tool.call({ select_ids: [2] }, 'select', { sessionId: 1 });
    expect(forgotten.state).toBe(ActionStatusCode.API_ERROR);
    expect(forgotten.errmsg).toContain('no search results to select from');
    const kept = await tool.call({ select_ids: [1] }, 'select', { sessionId: 2 });
    expect(kept.state).toBe(ActionStatusCode.SUCCESS);
  });

  it('bounds the cache: the least recently used page is fetched again', async () => {
    const tool = browser({ cacheSize: 1 });
    await tool.call({ url: `${fake.url}/pages/cats` }, 'open_url');
    await tool.call({ url: `${fake.url}/pages/dogs` }, 'open_url');
    await tool.call({ url: `${fake.url}/pages/cats` }, 'open_url');
    expect(pageRequests().map((request) => request.path)).toEqual([
      '/pages/cats',
      '/pages/dogs',
      '/pages/cats',
    ]);
  });

  it('refuses search results on private addresses by default', async () => {
    const tool = browser({ allowPrivateNetwork: false });
    await tool.call({ query: 'secrets' }, 'search');
    const metadata = await tool.call({ select_ids: [0] }, 'select');
    expect(metadata.state).toBe(ActionStatusCode.API_ERROR);
    expect(metadata.errmsg).toContain('169.254.169.254 is a link-local or cloud metadata address');
    await tool.call({ query: 'dogs' }, 'search');
    const local = await tool.call({ select_ids: [0, 1] }, 'select');
    expect(local.state).toBe(ActionStatusCode.API_ERROR);
    expect(local.errmsg).toContain('127.0.0.1 is a loopback address');
    expect(pageRequests()).toHaveLength(0);
  });
});

describe('AsyncWebBrowser.open_url', () => {
  it('reads a page with its title, and plain text as it is', async () => {
    const tool = browser();
    const page = await tool.call({ url: `${fake.url}/pages/to-cats` }, 'open_url');
    expect(page.state).toBe(ActionStatusCode.SUCCESS);
    expect(page.formatResult().split('\n')[0]).toContain('Cats');
    expect(page.formatResult()).toContain('Cats paragraph 3');
    const plain = await tool.call({ url: `${fake.url}/pages/plain` }, 'open_url');
    expect(plain.formatResult()).toBe('line one\nline two');
  });

  it.each([
    ['loopback by IP', () => `${fake.url}/pages/cats`, '127.0.0.1 is a loopback address'],
    [
      'a name resolving to loopback',
      () => `http://localhost:${fake.port}/pages/cats`,
      'localhost resolves to',
    ],
    ['IPv6 loopback', () => `http://[::1]:${fake.port}/pages/cats`, '::1 is a loopback address'],
    ['the metadata address', () => 'http://169.254.169.254/latest/meta-data/iam/', 'metadata address'],
    ['a non-http scheme', () => 'file:///etc/passwd', 'only http and https URLs can be opened, not file:'],
  ])('refuses %s by default', async (_name, url, words) => {
    const result = await browser({ allowPrivateNetwork: false }).call({ url: url() }, 'open_url');
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toContain('WebBrowser.open_url: refused');
    expect(result.errmsg).toContain(words);
    expect(pageRequests()).toHaveLength(0);
  });

  it('refuses a redirect to loopback, checked again after the first hop', async () => {
    // 127.0.0.1 is exempt here (as an intranet host would be); its redirect to localhost is not.
    const tool = browser({ allowPrivateNetwork: false, allowedHosts: ['127.0.0.1'] });
    const result = await tool.call({ url: `${fake.url}/pages/to-localhost` }, 'open_url');
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toContain(`refused http://localhost:${fake.port}/pages/cats (redirected from`);
    expect(pageRequests().map((request) => request.path)).toEqual(['/pages/to-localhost']);
  });

  it('reads the same page when private addresses are allowed', async () => {
    const result = await browser({ allowPrivateNetwork: true }).call(
      { url: `http://localhost:${fake.port}/pages/cats` },
      'open_url',
    );
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.formatResult()).toContain('Cats paragraph 1');
  });

  it('reports a page that does not load in time', async () => {
    fake.fault({ hang: true });
    const result = await browser({ timeout: 300 }).call({ url: `${fake.url}/pages/cats` }, 'open_url');
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toContain('did not load within 300 ms');
  });
});

describe('WebBrowser (sync)', () => {
  const fakeModule = fileURLToPath(new URL('../fakes/search-services.ts', import.meta.url));
  let host: SyncBridge | undefined;
  let sync: WebBrowser | undefined;

  afterEach(() => {
    sync?.close();
    sync = undefined;
    if (host) {
      host.call('close');
      host.close();
      host = undefined;
    }
  });

  it('runs the async browser in the bridge worker against a fake served from another thread', () => {
    // The fake lives in the bridge's worker thread: this thread blocks during each call.
    host = new SyncBridge({
      module: fakeModule,
      exportName: 'FakeSearchHost',
      args: [{ index: INDEX, pages: PAGES }],
    });
    const url = host.call<string>('start');
    sync = new WebBrowser({
      searcherType: 'GoogleSearch',
      apiKey: 'test-key',
      baseURL: url,
      allowPrivateNetwork: true,
      timeout: 5000,
    });
    expect(sync.name).toBe('WebBrowser');
    const search = sync.call({ query: 'cats' }, 'search', { sessionId: 7 });
    expect(search.state).toBe(ActionStatusCode.SUCCESS);
    expect(JSON.parse(search.formatResult())[0]).toEqual({
      url: `${url}/pages/cats`,
      title: 'Cats',
      summ: 'About cats',
    });
    const select = sync.call({ select_ids: [0] }, 'select', { sessionId: 7 });
    expect(select.formatResult()).toContain('Cats paragraph 2');
    const other = sync.call({ select_ids: [0] }, 'select', { sessionId: 8 });
    expect(other.state).toBe(ActionStatusCode.API_ERROR);
    const strict = new WebBrowser({ baseURL: url });
    try {
      const refused = strict.call({ url: `${url}/pages/cats` }, 'open_url');
      expect(refused.state).toBe(ActionStatusCode.API_ERROR);
      expect(refused.errmsg).toContain('loopback');
    } finally {
      strict.close();
    }
    expect(host.call<string[]>('paths')).toEqual(['/search', '/pages/cats']);
  });

  it('sends the key set in this thread’s environment after the worker started', () => {
    host = new SyncBridge({ module: fakeModule, exportName: 'FakeSearchHost', args: [{ index: INDEX }] });
    const url = host.call<string>('start'); // the worker runs from here on
    vi.stubEnv('SERPER_API_KEY', 'test-key');
    try {
      sync = new WebBrowser({ searcherType: 'GoogleSearch', baseURL: url, timeout: 5000 });
      const search = sync.call({ query: 'dogs' }, 'search');
      expect(search.state).toBe(ActionStatusCode.SUCCESS);
      expect(Object.keys(JSON.parse(search.formatResult()))).toEqual(['0', '1']);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
