import { ActionStatusCode } from 'lagent-ts';
import { AsyncWebBrowser } from 'lagent-ts/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeSearchServer, startFakeSearch } from '../fakes/search-services';

const page = (topic: string) =>
  `<!doctype html><html><head><title>${topic}</title></head><body><nav>Home</nav><main><article><h1>${topic}</h1>${`<p>${topic} composes agents like PyTorch composes modules, with memory per session.</p>`.repeat(6)}</article></main></body></html>`;

let fake: FakeSearchServer;
beforeAll(async () => {
  fake = await startFakeSearch({
    apiKey: 'key-from-env',
    index: {
      'lagent agents': [{ url: '{origin}/pages/lagent', title: 'Lagent', snippet: 'agents' }],
      InternLM: [
        { url: '{origin}/pages/internlm', title: 'InternLM', snippet: 'models' },
        { url: '{origin}/pages/lagent', title: 'Lagent', snippet: 'framework' },
      ],
    },
    pages: { lagent: { body: page('Lagent') }, internlm: { body: page('InternLM') } },
  });
});
afterAll(() => fake.close());

// The snippet of docs/guide/built-in-tools.md, against a fake Bing on 127.0.0.1 (hence baseURL and
// allowPrivateNetwork).
describe('docs: built-in tools', () => {
  it('Web, search and office tools', async () => {
    process.env.BING_API_KEY = 'key-from-env';
    try {
      const browser = new AsyncWebBrowser({
        searcherType: 'BingSearch',
        baseURL: fake.url,
        allowPrivateNetwork: true,
      });
      const found = await browser.call({ query: ['lagent agents', 'InternLM'] }, 'search', { sessionId: 1 });
      expect(found.state).toBe(ActionStatusCode.SUCCESS);
      const results = JSON.parse(found.toText()) as Record<string, { url: string }>;
      expect(Object.keys(results)).toEqual(['0', '1']); // the shared page is merged, numbered from 0
      const selected = await browser.call({ select_ids: [0, 1] }, 'select', { sessionId: 1 });
      expect(selected.toText()).toContain('composes agents like PyTorch');
      expect(selected.toText()).not.toContain('Home');
      expect(
        fake.requests.find((request) => request.path.startsWith('/v7.0/search'))?.headers[
          'ocp-apim-subscription-key'
        ],
      ).toBe('key-from-env');
      browser.close();
    } finally {
      delete process.env.BING_API_KEY;
    }
  });
});

describe('WebBrowser sessions', () => {
  it('are keyed as agents key them: 1 and "1" are one session', async () => {
    const browser = new AsyncWebBrowser({
      searcherType: 'BingSearch',
      apiKey: 'key-from-env',
      baseURL: fake.url,
      allowPrivateNetwork: true,
    });
    await browser.call({ query: 'InternLM' }, 'search', { sessionId: 1 });
    const selected = await browser.call({ select_ids: [0] }, 'select', { sessionId: '1' });
    expect(selected.state).toBe(ActionStatusCode.SUCCESS);
    expect(selected.toText()).toContain('composes agents like PyTorch');
    browser.close();
  });
});
