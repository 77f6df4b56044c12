import { fileURLToPath } from 'node:url';
import { ActionStatusCode, SyncBridge } from 'lagent-ts';
import { ArxivSearch, type ArxivSearchOptions, AsyncArxivSearch } from 'lagent-ts/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeArticle, type FakeArxivServer, startFakeArxiv } from '../fakes/arxiv';

const ARTICLES: FakeArticle[] = [
  {
    id: '2308.03688v2',
    published: '2023-08-07T16:37:57Z',
    updated: '2023-10-25T10:00:00Z',
    title: 'AgentBench: Evaluating LLMs\n  as Agents',
    summary: `  Large language models are increasingly capable agents. ${'We evaluate them on many tasks. '.repeat(80)}\n`,
    authors: ['Xiao Liu', 'Hao Yu', 'Hanchen Zhang'],
  },
  {
    id: '2309.07864v1',
    published: '2023-09-14T12:00:00Z',
    updated: '2023-09-14T12:00:00Z',
    title: 'The Rise of LLM-Based Agents',
    summary: 'A survey of agents built on language models & their uses.',
    authors: ['Zhiheng Xi'],
  },
  {
    id: '2310.00001v1',
    published: '2023-10-01T00:00:00Z',
    updated: '2023-10-01T00:00:00Z',
    title: 'A third article',
    summary: 'Third.',
    authors: ['Someone Else'],
  },
];
const INDEX = { 'llm agents': ARTICLES };

let fake: FakeArxivServer;
let tools: AsyncArxivSearch[] = [];

beforeAll(async () => {
  fake = await startFakeArxiv(INDEX);
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  for (const tool of tools) tool.close();
  tools = [];
  fake.requests.length = 0;
});

function arxiv(options: ArxivSearchOptions = {}) {
  const tool = new AsyncArxivSearch({ baseURL: fake.url, ...options });
  tools.push(tool);
  return tool;
}

const API = 'get_arxiv_article_information';

describe('AsyncArxivSearch', () => {
  it('is Lagent’s ArxivSearch with one API', () => {
    const tool = arxiv();
    expect(tool.name).toBe('ArxivSearch');
    expect(tool.isToolkit).toBe(true);
    expect([...tool.apis.keys()]).toEqual([API]);
  });

  it('reports date, title, authors and summary of the top articles, as Lagent formats them', async () => {
    const result = await arxiv({ docContentMaxLength: 100 }).call({ query: 'llm agents' }, API);
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    const docs = result.formatResult().split('\n\n');
    expect(docs).toHaveLength(3);
    const first = ARTICLES[0]!;
    const summary = first.summary.replace(/\s+/g, ' ').trim().slice(0, 100);
    expect(docs[0]).toBe(
      `Published: 2023-08-07\nTitle: AgentBench: Evaluating LLMs as Agents\nAuthors: ${first.authors.join(', ')}\nSummary: ${summary}`,
    );
    expect(docs[1]).toContain('Summary: A survey of agents built on language models & their uses.');
  });

  it('asks for topK articles by relevance, with the query cut at maxQueryLength', async () => {
    await arxiv({ topK: 2, maxQueryLength: 5 }).call({ query: 'llm agents' }, API);
    expect(fake.requests[0]?.query).toEqual({
      search_query: 'llm a',
      start: '0',
      max_results: '2',
      sortBy: 'relevance',
      sortOrder: 'descending',
    });
    const result = await arxiv({ topK: 2 }).call({ query: 'llm agents' }, API);
    expect(result.formatResult().split('\n\n')).toHaveLength(2);
  });

  it('says when nothing was found', async () => {
    const result = await arxiv().call({ query: 'nothing here' }, API);
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.formatResult()).toBe('No good Arxiv Result was found');
  });

  it('passes on what arXiv says about a query it refuses', async () => {
    const result = await arxiv({ topK: -1 }).call({ query: 'llm agents' }, API);
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toBe(
      'ArxivSearch: arXiv refused the query (max_results must be non-negative); rephrase it.',
    );
  });

  it('retries a 429 after its Retry-After, and a 500', async () => {
    fake.fault({ status: 429, headers: { 'retry-after': '1' } }, { status: 500 });
    const result = await arxiv().call({ query: 'llm agents' }, API);
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests[1]!.at - fake.requests[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('reports a service that keeps failing', async () => {
    fake.fault({ status: 503 }, { status: 503 });
    const result = await arxiv({ retries: 1 }).call({ query: 'llm agents' }, API);
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toContain('ArxivSearch: the service failed (HTTP 503) after 2 attempts');
  });

  it('reports a timeout', async () => {
    fake.fault({ hang: true });
    const result = await arxiv({ timeout: 300 }).call({ query: 'llm agents' }, API);
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toContain('within 300 ms');
  });

  it.each([
    ['not XML', '{"entries": []}'],
    ['XML that is not a feed', '<html><body>maintenance</body></html>'],
  ])('reports a malformed answer (%s)', async (_name, body) => {
    fake.fault({ status: 200, body });
    const result = await arxiv().call({ query: 'llm agents' }, API);
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toContain('not an arXiv Atom feed');
  });
});

describe('ArxivSearch (sync)', () => {
  let host: SyncBridge | undefined;
  let tool: ArxivSearch | undefined;

  afterEach(() => {
    tool?.close();
    tool = undefined;
    if (host) {
      host.call('close');
      host.close();
      host = undefined;
    }
  });

  it('answers like the async tool, against a fake on another thread', () => {
    const module = fileURLToPath(new URL('../fakes/arxiv.ts', import.meta.url));
    host = new SyncBridge({ module, exportName: 'FakeArxivHost', args: [INDEX] });
    const url = host.call<string>('start');
    tool = new ArxivSearch({ baseURL: url, topK: 1, timeout: 5000 });
    const result = tool.call({ query: 'llm agents' }, API);
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.formatResult()).toMatch(/^Published: 2023-08-07\nTitle: AgentBench/);
  });
});
