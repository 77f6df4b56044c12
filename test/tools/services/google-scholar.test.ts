import { ActionStatusCode } from 'lagent-ts';
import { AsyncGoogleScholar } from 'lagent-ts/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeHttpServer } from '../../helpers/http-server';
import { GOOD_KEY } from './fakes/keys';
import { startFakeSerpApi } from './fakes/serpapi';
import { transportCases } from './fakes/transport-cases';

let serpapi: FakeHttpServer;
beforeAll(async () => {
  serpapi = await startFakeSerpApi();
});
afterAll(async () => {
  await serpapi.close();
});

const scholar = (options: ConstructorParameters<typeof AsyncGoogleScholar>[0] = {}) =>
  new AsyncGoogleScholar({ apiKey: GOOD_KEY, baseURL: serpapi.url, ...options });
async function json(promise: Promise<{ state: number; errmsg: string | null; formatResult(): string }>) {
  const result = await promise;
  expect(result.state, result.errmsg ?? '').toBe(ActionStatusCode.SUCCESS);
  return JSON.parse(result.formatResult()) as Record<string, unknown>;
}

describe('AsyncGoogleScholar', () => {
  it("is a toolkit named GoogleScholar with Lagent's four APIs", () => {
    const tool = scholar();
    expect(tool.name).toBe('GoogleScholar');
    expect([...tool.apis.keys()]).toEqual([
      'search_google_scholar',
      'get_author_information',
      'get_citation_format',
      'get_author_id',
    ]);
  });

  it('searches with engine=google_scholar and reports the first topK articles as Lagent does', async () => {
    const before = serpapi.requests.length;
    const found = await json(
      scholar().call({ query: 'language agents', as_ylo: 2020 }, 'search_google_scholar'),
    );
    const request = serpapi.requests[before]!;
    expect(request).toMatchObject({ method: 'GET', path: '/search.json' });
    expect(request.query).toEqual({
      engine: 'google_scholar',
      q: 'language agents',
      as_ylo: '2020',
      api_key: GOOD_KEY,
    });
    expect(found).toEqual({
      title: ['Agents paper 1', 'Agents paper 2', 'Agents paper 3'],
      cited_by: [100, 200, 300],
      organic_id: ['RID1', 'RID2', 'RID3'],
      snippets: [
        'Paper 1 studies language agents.',
        'Paper 2 studies language agents.',
        'Paper 3 studies language agents.',
      ],
      pub_info: [
        'A Author1, B Author - Journal of Agents, 2021 - example.org',
        'A Author2, B Author - Journal of Agents, 2022 - example.org',
        'A Author3, B Author - Journal of Agents, 2023 - example.org',
      ],
    });
  });

  it('an article nobody cites has an empty citation count', async () => {
    const found = await json(scholar({ topK: 5 }).call({ query: 'agents' }, 'search_google_scholar'));
    expect(found.cited_by).toEqual([100, 200, 300, '', 500]);
  });

  it('a search that finds nothing says so (SerpApi answers 200 with an error and an empty state)', async () => {
    const result = await scholar().call({ query: 'nothing at all' }, 'search_google_scholar');
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.formatResult()).toBe(
      'GoogleScholar: no articles were found for "nothing at all"; try other words.',
    );
  });

  it("gets an author's name, affiliations, website and first articles", async () => {
    const before = serpapi.requests.length;
    const author = await json(scholar().call({ author_id: 'AUTH1', hl: 'en' }, 'get_author_information'));
    expect(serpapi.requests[before]!.query).toMatchObject({
      engine: 'google_scholar_author',
      author_id: 'AUTH1',
      hl: 'en',
    });
    expect(author).toEqual({
      name: 'Ada Author',
      affiliations: 'University of Examples',
      website: 'https://ada.example.edu',
      articles: [1, 2, 3].map((index) => ({
        title: `Ada's paper ${index}`,
        authors: `A Author, Coauthor ${index}`,
      })),
    });
    const unknown = await scholar().call({ author_id: 'NOPE' }, 'get_author_information');
    expect(unknown.formatResult()).toMatch(/no author has the ID "NOPE"/);
  });

  it('gets the MLA citation of a result', async () => {
    const before = serpapi.requests.length;
    const result = await scholar().call({ q: 'RID2' }, 'get_citation_format');
    expect(serpapi.requests[before]!.query).toMatchObject({ engine: 'google_scholar_cite', q: 'RID2' });
    expect(result.formatResult()).toBe('Author, Ada. "Paper RID2." Journal of Agents (2021).');
  });

  it("finds an author's ID by name, with hl=en unless told otherwise", async () => {
    const before = serpapi.requests.length;
    const found = await json(scholar().call({ mauthors: 'Ada Author' }, 'get_author_id'));
    expect(serpapi.requests[before]!.query).toMatchObject({
      engine: 'google_scholar_profiles',
      mauthors: 'Ada Author',
      hl: 'en',
    });
    expect(found).toEqual({ author_id: 'AUTH1' });
    const nobody = await scholar().call({ mauthors: 'Nobody Known' }, 'get_author_id');
    expect(nobody.state).toBe(ActionStatusCode.SUCCESS);
    expect(nobody.formatResult()).toMatch(/no author profile matches "Nobody Known"/);
  });

  it("SerpApi's own errors in a 200 body are API_ERRORs carrying its message", async () => {
    serpapi.queue({
      status: 200,
      json: { search_metadata: { status: 'Error' }, error: 'Proxy timeout, please retry.' },
    });
    const result = await scholar().call({ query: 'agents' }, 'search_google_scholar');
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toBe(
      'GoogleScholar: the search failed; try again later. SerpApi said: Proxy timeout, please retry.',
    );
  });

  it('answers of the wrong shape are API_ERRORs', async () => {
    serpapi.queue({ status: 200, json: { organic_results: { not: 'a list' } } });
    const wrongList = await scholar().call({ query: 'agents' }, 'search_google_scholar');
    expect(wrongList.state).toBe(ActionStatusCode.API_ERROR);
    expect(wrongList.errmsg).toMatch(/"organic_results" has an unexpected shape/);
    serpapi.queue({ status: 200, json: { unrelated: true } });
    const unrelated = await scholar().call({ q: 'RID1' }, 'get_citation_format');
    expect(unrelated.state).toBe(ActionStatusCode.API_ERROR);
    expect(unrelated.errmsg).toMatch(/has no "citations"/);
  });

  it("a rejected key carries SerpApi's message", async () => {
    const result = await scholar({ apiKey: 'wrong' }).call({ query: 'agents' }, 'search_google_scholar');
    expect(result.state).toBe(ActionStatusCode.HTTP_ERROR);
    expect(result.errmsg).toMatch(/HTTP 401.*Invalid API key/);
  });
});

describe('AsyncGoogleScholar over HTTP', () => {
  transportCases({
    name: 'GoogleScholar',
    environmentVariable: 'SERPAPI_API_KEY',
    start: startFakeSerpApi,
    call: (options) => new AsyncGoogleScholar(options).call({ query: 'agents' }, 'search_google_scholar'),
  });
});
