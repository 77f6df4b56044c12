import { ConfigurationError } from '../../../schema/errors';
import { isPlainObject } from '../../../utils/is';
import { type HttpOutcome, httpError } from '../http';
import { arrayAt, BaseSearcher, type SearcherOptions, type SearchResult, stringField } from './base';

/** Options of {@link SearxngSearcher}. */
export interface SearxngSearcherOptions extends SearcherOptions {
  /**
   * The SearXNG instance, e.g. `'http://127.0.0.1:8888'` (Lagent's form with `/search` at the end works too).
   * Required: given here or in `SEARXNG_URL`.
   */
  baseURL?: string | undefined;
  /** A key for an instance behind an authenticating proxy, sent in the `authHeader` header. No key: no header. */
  apiKey?: string | undefined;
  /** The header the key goes in (Lagent's `auth_name`). @default 'searxng' */
  authHeader?: string | undefined;
  /** `categories`, e.g. `'general'`, `'news'`, `'science'`. @default 'general' */
  categories?: string | undefined;
  /** `language`, e.g. `'en'`, `'zh'`. Left to the instance when absent. */
  language?: string | undefined;
  /** `time_range`: `'day'`, `'month'` or `'year'`. */
  timeRange?: 'day' | 'month' | 'year' | undefined;
  /** `safesearch`: 0 (off), 1 (moderate) or 2 (strict). Left to the instance when absent. */
  safeSearch?: 0 | 1 | 2 | undefined;
}

/** The instance root of a configured URL: Lagent's `SEARXNG_URL` names the `/search` endpoint itself. */
function instanceRoot(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/search$/, '');
}

/**
 * A self-hosted [SearXNG](https://docs.searxng.org/) metasearch instance, no API key needed:
 * `GET {baseURL}/search?q=&format=json&categories=` (the instance must allow the JSON format: `json` under
 * `search.formats` in its `settings.yml`). Results are read from `results` (`url`, `title`, `content`), one
 * page of them (about 10 per engine mix), filtered like every searcher's. `baseURL` is trusted: it is the
 * instance you configured, so a private address is fine.
 *
 * @example
 * const searxng = new SearxngSearcher({ baseURL: 'http://127.0.0.1:8888', language: 'en' });
 * const browser = new AsyncWebBrowser({ searcherType: 'SearxngSearch' }); // SEARXNG_URL from the environment
 */
export class SearxngSearcher extends BaseSearcher {
  readonly #options: SearxngSearcherOptions;

  constructor(options: SearxngSearcherOptions = {}) {
    const configured = options.baseURL || process.env.SEARXNG_URL || undefined;
    if (configured === undefined) {
      throw new ConfigurationError({
        message:
          'SearxngSearch needs the address of a SearXNG instance: pass baseURL (e.g. http://127.0.0.1:8888) or set SEARXNG_URL',
      });
    }
    super({ ...options, baseURL: instanceRoot(configured) }, { name: 'SearxngSearch', defaultBaseURL: '' });
    this.#options = options;
  }

  async search(
    query: string,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<HttpOutcome<SearchResult[]>> {
    const key = this.#options.apiKey;
    const outcome = await this.http.json({
      path: '/search',
      query: {
        q: query,
        format: 'json',
        categories: this.#options.categories ?? 'general',
        language: this.#options.language,
        time_range: this.#options.timeRange,
        safesearch: this.#options.safeSearch,
      },
      headers: {
        Accept: 'application/json',
        ...(key ? { [this.#options.authHeader ?? 'searxng']: key } : {}),
      },
      signal: options.signal,
    });
    if (!outcome.ok) {
      if (outcome.failure.status === 403 && !key) {
        return httpError({
          kind: 'status',
          status: 403,
          message: `${this.name}: the instance refused its JSON API (HTTP 403); allow it with \`json\` under \`search.formats\` in the instance's settings.yml.`,
          attempts: outcome.failure.attempts,
          body: outcome.failure.body,
        });
      }
      return outcome;
    }
    const body = outcome.data;
    const results = isPlainObject(body) ? arrayAt(body, 'results') : undefined;
    if (results === undefined) {
      return httpError({
        kind: 'malformed',
        message: `${this.name}: the answer is not a SearXNG search response; check baseURL.`,
        attempts: outcome.attempts,
      });
    }
    const raw = results.map((item) => ({
      url: stringField(item, 'url'),
      summ: stringField(item, 'content'),
      title: stringField(item, 'title'),
    }));
    return { ...outcome, data: this.filter(raw.filter((result) => result.url !== '')) };
  }
}
