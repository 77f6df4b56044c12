import { isPlainObject } from '../../../utils/is';
import { type HttpOutcome, httpError } from '../http';
import { arrayAt, BaseSearcher, type SearcherOptions, type SearchResult, stringField } from './base';

/** Options of {@link BingSearcher}. */
export interface BingSearcherOptions extends SearcherOptions {
  /** The market (`mkt`), e.g. `'en-US'` or `'zh-CN'`; Bing picks one from the request when absent. */
  market?: string | undefined;
}

/**
 * Bing Web Search API v7: `GET {baseURL}/v7.0/search?q=&count=&mkt=` with the key in
 * `Ocp-Apim-Subscription-Key` (default `BING_API_KEY`). Results follow the answer's `rankingResponse.mainline`
 * as Lagent reads it (web pages by id, and the news answer), falling back to `webPages.value` in order when
 * the answer has no ranking.
 *
 * @default baseURL 'https://api.bing.microsoft.com'
 */
export class BingSearcher extends BaseSearcher {
  readonly #market: string | undefined;

  constructor(options: BingSearcherOptions = {}) {
    super(options, {
      name: 'BingSearch',
      defaultBaseURL: 'https://api.bing.microsoft.com',
      keyEnv: 'BING_API_KEY',
    });
    this.#market = options.market;
  }

  async search(
    query: string,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<HttpOutcome<SearchResult[]>> {
    const outcome = await this.http.json({
      path: '/v7.0/search',
      query: { q: query, count: Math.min(50, this.topK * 2), mkt: this.#market },
      headers: { 'Ocp-Apim-Subscription-Key': this.http.apiKey ?? '' },
      signal: options.signal,
    });
    if (!outcome.ok) return outcome;
    const body = outcome.data;
    if (!isPlainObject(body)) {
      return httpError({
        kind: 'malformed',
        message: `${this.name}: the answer is not a Bing SearchResponse object; check baseURL.`,
      });
    }
    return { ...outcome, data: this.filter(parseBing(body)) };
  }
}

function parseBing(body: Record<string, unknown>): SearchResult[] {
  const pages = arrayAt(body, 'webPages', 'value') ?? [];
  const page = (item: unknown): SearchResult => ({
    url: stringField(item, 'url'),
    summ: stringField(item, 'snippet'),
    title: stringField(item, 'name'),
  });
  const mainline = arrayAt(body, 'rankingResponse', 'mainline', 'items');
  if (!mainline) return pages.map(page);
  const byId = new Map(pages.map((item) => [stringField(item, 'id'), item]));
  const news = isPlainObject(body.news) ? body.news : undefined;
  const results: SearchResult[] = [];
  for (const item of mainline) {
    const type = stringField(item, 'answerType');
    const id = stringField(isPlainObject(item) ? item.value : undefined, 'id');
    if (type === 'WebPages') {
      const found = byId.get(id);
      if (found) results.push(page(found));
    } else if (type === 'News' && news && id === stringField(news, 'id')) {
      for (const story of arrayAt(news, 'value') ?? []) {
        results.push({
          url: stringField(story, 'url'),
          summ: stringField(story, 'description'),
          title: stringField(story, 'name'),
        });
      }
    }
  }
  return results;
}
