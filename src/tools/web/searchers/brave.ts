import { isPlainObject } from '../../../utils/is';
import { type HttpOutcome, httpError } from '../http';
import { arrayAt, BaseSearcher, type SearcherOptions, type SearchResult, stringField } from './base';

/** Options of {@link BraveSearcher}. */
export interface BraveSearcherOptions extends SearcherOptions {
  /** `country`, e.g. `'US'`, or `'ALL'`. Left to Brave when absent. */
  country?: string | undefined;
  /** `search_lang`, e.g. `'en'`, `'zh-hans'`. Left to Brave when absent. */
  searchLang?: string | undefined;
  /** Ask for up to 5 extra snippets per result (appended to the snippet). @default true */
  extraSnippets?: boolean | undefined;
  /** `'web'` or `'news'`. @default 'web' */
  searchType?: 'web' | 'news' | undefined;
}

/**
 * Brave Search API: `GET {baseURL}/res/v1/{web|news}/search?q=&count=` with the key in `X-Subscription-Token`
 * (default `BRAVE_API_KEY`). Web results are read from `web.results`, news from `results`; a result's snippet is
 * its `description` followed by its `extra_snippets`, as Lagent joins them.
 *
 * @default baseURL 'https://api.search.brave.com'
 */
export class BraveSearcher extends BaseSearcher {
  readonly #options: BraveSearcherOptions;

  constructor(options: BraveSearcherOptions = {}) {
    super(options, {
      name: 'BraveSearch',
      defaultBaseURL: 'https://api.search.brave.com',
      keyEnv: 'BRAVE_API_KEY',
    });
    this.#options = options;
  }

  async search(
    query: string,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<HttpOutcome<SearchResult[]>> {
    const type = this.#options.searchType ?? 'web';
    const outcome = await this.http.json({
      path: `/res/v1/${type}/search`,
      query: {
        q: query,
        // The API allows at most 20 web results (50 news) per request.
        count: Math.min(type === 'web' ? 20 : 50, this.topK),
        country: this.#options.country,
        search_lang: this.#options.searchLang,
        extra_snippets: this.#options.extraSnippets ?? true,
      },
      headers: { 'X-Subscription-Token': this.http.apiKey ?? '', Accept: 'application/json' },
      signal: options.signal,
    });
    if (!outcome.ok) return outcome;
    const body = outcome.data;
    if (!isPlainObject(body)) {
      return httpError({
        kind: 'malformed',
        message: `${this.name}: the answer is not a Brave search response; check baseURL.`,
      });
    }
    const items = (type === 'web' ? arrayAt(body, 'web', 'results') : arrayAt(body, 'results')) ?? [];
    const raw = items.map((item) => {
      const extra = (arrayAt(item, 'extra_snippets') ?? []).filter(
        (text): text is string => typeof text === 'string',
      );
      return {
        url: stringField(item, 'url'),
        summ: [stringField(item, 'description'), ...extra].filter(Boolean).join(' '),
        title: stringField(item, 'title'),
      };
    });
    return { ...outcome, data: this.filter(raw) };
  }
}
