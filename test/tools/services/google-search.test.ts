import { ActionStatusCode } from 'lagent-ts';
import { AsyncGoogleSearch } from 'lagent-ts/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeHttpServer } from '../../helpers/http-server';
import { GOOD_KEY } from './fakes/keys';
import { startFakeSerper } from './fakes/serper';
import { transportCases } from './fakes/transport-cases';

let serper: FakeHttpServer;
beforeAll(async () => {
  serper = await startFakeSerper();
});
afterAll(async () => {
  await serper.close();
});

const search = (options: ConstructorParameters<typeof AsyncGoogleSearch>[0] = {}) =>
  new AsyncGoogleSearch({ apiKey: GOOD_KEY, baseURL: serper.url, ...options });
const snippets = async (tool: AsyncGoogleSearch, query: string) => {
  const result = await tool.call({ query });
  expect(result.state, result.errmsg ?? '').toBe(ActionStatusCode.SUCCESS);
  return JSON.parse(result.formatResult()) as string[];
};

describe('AsyncGoogleSearch', () => {
  it("is a simple tool named GoogleSearch with run({ query, k? }), reading Lagent's 10 results by default", () => {
    const tool = search();
    expect(tool.name).toBe('GoogleSearch');
    expect(tool.isToolkit).toBe(false);
    expect(tool.description.required).toEqual(['query']);
    expect(tool.description.parameters!.map((parameter) => parameter.name)).toEqual(['query', 'k']);
    expect(tool.topK).toBe(10);
  });

  it("a call may ask for k results, as Lagent's run(query, k=10) does", async () => {
    const organic = (lines: string[]) => lines.filter((line) => line.startsWith('apple snippet'));
    expect(organic(await snippets(search(), 'apple inc'))).toHaveLength(10);
    const two = await search().call({ query: 'apple inc', k: 2 });
    expect(organic(JSON.parse(two.formatResult()) as string[])).toHaveLength(2);
    const before = serper.requests.length;
    await search().call({ query: 'apple inc', k: 12 });
    expect(JSON.parse(serper.requests[before]!.body)).toEqual({ q: 'apple inc', num: 12 });
  });

  it("posts the query to /search with the key in X-API-KEY, as Serper's API wants", async () => {
    const before = serper.requests.length;
    await search().call({ query: 'apple inc' });
    const [request] = serper.requests.slice(before);
    expect(request).toMatchObject({ method: 'POST', path: '/search' });
    expect(request!.headers['x-api-key']).toBe(GOOD_KEY);
    expect(request!.headers['content-type']).toMatch(/application\/json/);
    expect(JSON.parse(request!.body)).toEqual({ q: 'apple inc' });
  });

  it("answers with the answer box's answer alone", async () => {
    expect(await snippets(search(), 'capital of france')).toEqual(['Paris']);
  });

  it("uses the answer box's snippet (one line) or its highlighted parts when there is no answer", async () => {
    expect(await snippets(search(), 'boiling point')).toEqual(['Water boils at 100 °C at sea level.']);
    expect(await snippets(search(), 'tallest mountain')).toEqual(['Mount Everest', '8,849 m']);
  });

  it('lists the knowledge graph, then the first topK organic snippets with their attributes', async () => {
    expect(await snippets(search({ topK: 3 }), 'apple inc')).toEqual([
      'Apple: Technology company.',
      'Apple Inc. designs consumer electronics.',
      'Apple Founded: April 1, 1976.',
      'Apple CEO: Tim Cook.',
      'apple snippet 1',
      'Headquarters: Cupertino.',
      'apple snippet 2',
      'apple snippet 3',
    ]);
    const five = await snippets(search({ topK: 5 }), 'apple inc');
    expect(five.filter((line) => line.startsWith('apple snippet'))).toHaveLength(5);
  });

  it('asks Serper for more than its ten results only when topK needs them', async () => {
    const before = serper.requests.length;
    const many = await snippets(search({ topK: 12 }), 'apple inc');
    expect(JSON.parse(serper.requests[before]!.body)).toEqual({ q: 'apple inc', num: 12 });
    expect(many.filter((line) => line.startsWith('apple snippet'))).toHaveLength(12);
  });

  it('says so when nothing was found', async () => {
    expect(await snippets(search(), 'zzqx nothing')).toEqual(['No good Google Search Result was found']);
  });

  it("a JSON answer that is not Serper's is an API_ERROR", async () => {
    serper.queue({ status: 200, json: ['not', 'an', 'object'] });
    const listBody = await search().call({ query: 'x' });
    expect(listBody.state).toBe(ActionStatusCode.API_ERROR);
    expect(listBody.errmsg).toMatch(/^GoogleSearch: the answer does not look like Serper's/);
    serper.queue({ status: 200, json: { organic: 'oops' } });
    expect((await search().call({ query: 'x' })).state).toBe(ActionStatusCode.API_ERROR);
  });

  it('an empty query is an ARGS_ERROR, not a request', async () => {
    const before = serper.requests.length;
    expect((await search().call({ query: '' })).state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(serper.requests.length).toBe(before);
  });
});

describe('AsyncGoogleSearch over HTTP', () => {
  transportCases({
    name: 'GoogleSearch',
    environmentVariable: 'SERPER_API_KEY',
    start: startFakeSerper,
    call: (options) => new AsyncGoogleSearch(options).call({ query: 'capital of france' }),
  });
});
