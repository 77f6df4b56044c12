import { ActionStatusCode, ConfigurationError } from 'lagent-ts';
import { AsyncWebBrowser, type WebBrowserOptions } from 'lagent-ts/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeSearchServer, startFakeSearch } from '../fakes/search-services';

const LONG_TITLE = `Headline ${'very '.repeat(4000)}long`;
const paragraphs = Array.from(
  { length: 5 },
  (_, n) => `<p>Paragraph ${n}: enough words about the subject to count as the main text of an article.</p>`,
).join('');

let fake: FakeSearchServer;
let browsers: AsyncWebBrowser[] = [];

beforeAll(async () => {
  fake = await startFakeSearch({
    index: {
      cats: [
        { url: '{origin}/pages/cats', title: 'Cats', snippet: 'About cats' },
        { url: '{origin}/pages/long-title', title: LONG_TITLE, snippet: 'A page with a long title' },
      ],
    },
    pages: {
      cats: {
        body: `<html><head><title>Cats</title></head><body><article>${paragraphs}</article></body></html>`,
      },
      'long-title': {
        body: `<html><head><title>${LONG_TITLE}</title></head><body><article>${paragraphs}</article></body></html>`,
      },
    },
  });
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
    ...options,
  });
  browsers.push(made);
  return made;
}

const searchRequests = () => fake.requests.filter((request) => request.path === '/v7.0/search');

describe('WebBrowser.search with many queries', () => {
  it('searches at most maxQueries of them and says which were left out', async () => {
    const queries = ['cats', ...Array.from({ length: 1999 }, (_, n) => `query number ${n}`)];
    const result = await browser().call({ query: queries }, 'search');
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(searchRequests()).toHaveLength(8);
    expect(searchRequests()[0]?.query.q).toBe('cats');
    const note = result.result?.at(-1)?.content ?? '';
    expect(note).toBe(
      'At most 8 queries are searched per call; 1992 more were left out, from "query number 7" on; search them in another call if they are needed.',
    );
  });

  it('takes maxQueries as an option, and refuses one that is not a positive integer', async () => {
    await browser({ maxQueries: 2 }).call({ query: ['a', 'b', 'c'] }, 'search');
    expect(searchRequests().map((request) => request.query.q)).toEqual(['a', 'b']);
    expect(() => browser({ maxQueries: 0 })).toThrow(ConfigurationError);
  });
});

describe('WebBrowser titles', () => {
  it('cuts a search result’s title', async () => {
    const result = await browser().call({ query: 'cats' }, 'search');
    const numbered = JSON.parse(result.formatResult()) as Record<string, { title: string }>;
    const titles = Object.values(numbered).map((entry) => entry.title);
    expect(titles).toContain('Cats');
    const long = titles.find((title) => title.startsWith('Headline'));
    expect(long?.length).toBe(256);
    expect(long?.endsWith('…')).toBe(true);
  });

  it('cuts a page’s title in open_url and select', async () => {
    const tool = browser();
    const opened = await tool.call({ url: `${fake.url}/pages/long-title` }, 'open_url');
    expect(opened.state).toBe(ActionStatusCode.SUCCESS);
    const [titleLine = '', ...rest] = opened.formatResult().split('\n');
    expect(titleLine.length).toBe(256);
    expect(rest.join('\n')).toContain('Paragraph 1');
    await tool.call({ query: 'cats' }, 'search');
    const selected = await tool.call({ select_ids: [0, 1] }, 'select');
    const read = JSON.parse(selected.formatResult()) as Record<string, { title: string }>;
    for (const page of Object.values(read)) expect(page.title.length).toBeLessThanOrEqual(256);
  });
});

describe('WebBrowser.select with many unknown ids', () => {
  it('keeps the error short', async () => {
    const tool = browser();
    await tool.call({ query: 'cats' }, 'search');
    const ids = Array.from({ length: 1_000_000 }, (_, n) => n + 10);
    const result = await tool.call({ select_ids: ids }, 'select');
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toBe(
      'WebBrowser.select: No result numbered 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 (and 999990 more) in the last search (its results: 0 to 1).',
    );
  });

  it('lists a few unknown ids in full', async () => {
    const tool = browser();
    await tool.call({ query: 'cats' }, 'search');
    const result = await tool.call({ select_ids: [7, 9] }, 'select');
    expect(result.errmsg).toBe(
      'WebBrowser.select: No result numbered 7, 9 in the last search (its results: 0 to 1).',
    );
  });
});
