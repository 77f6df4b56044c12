import type { Searcher, SearcherOptions } from './base';
import { BingSearcher } from './bing';
import { BraveSearcher } from './brave';
import { DuckDuckGoSearcher } from './duckduckgo';
import { GoogleSearcher } from './google';
import { SearxngSearcher } from './searxng';
import { TencentSearcher } from './tencent';

export {
  BaseSearcher,
  DEFAULT_BLACK_LIST,
  type Searcher,
  type SearcherHttp,
  type SearcherOptions,
  type SearchResult,
} from './base';
export { BingSearcher, type BingSearcherOptions } from './bing';
export { BraveSearcher, type BraveSearcherOptions } from './brave';
export { DuckDuckGoSearcher, type DuckDuckGoSearcherOptions } from './duckduckgo';
export { GoogleSearcher, type GoogleSearcherOptions } from './google';
export { SearxngSearcher, type SearxngSearcherOptions } from './searxng';
export { TencentSearcher, type TencentSearcherOptions } from './tencent';

/** The searchers a `WebBrowser` can use, by Lagent's names. */
export const SEARCHER_TYPES = [
  'DuckDuckGoSearch',
  'BingSearch',
  'BraveSearch',
  'GoogleSearch',
  'TencentSearch',
  'SearxngSearch',
] as const;
/** One of {@link SEARCHER_TYPES}. */
export type SearcherType = (typeof SEARCHER_TYPES)[number];

/**
 * The searcher of `type` (Lagent's name), built with `options` plus the searcher's own options.
 *
 * @example
 * const bing = createSearcher('BingSearch', { apiKey: 'key', topK: 5, market: 'en-US' });
 */
export function createSearcher(
  type: SearcherType,
  options: SearcherOptions & Record<string, unknown> = {},
): Searcher {
  switch (type) {
    case 'DuckDuckGoSearch':
      return new DuckDuckGoSearcher(options);
    case 'BingSearch':
      return new BingSearcher(options);
    case 'BraveSearch':
      return new BraveSearcher(options);
    case 'GoogleSearch':
      return new GoogleSearcher(options);
    case 'TencentSearch':
      return new TencentSearcher(options);
    case 'SearxngSearch':
      return new SearxngSearcher(options);
  }
}

/** The environment variables each searcher reads its credentials (SearXNG: its address) from, by the option they fill. */
const CREDENTIALS: Record<SearcherType, Record<string, string>> = {
  DuckDuckGoSearch: {},
  BingSearch: { apiKey: 'BING_API_KEY' },
  BraveSearch: { apiKey: 'BRAVE_API_KEY' },
  GoogleSearch: { apiKey: 'SERPER_API_KEY' },
  TencentSearch: {
    secretId: 'TENCENTCLOUD_SECRET_ID',
    secretKey: 'TENCENTCLOUD_SECRET_KEY',
    token: 'TENCENTCLOUD_SESSION_TOKEN',
  },
  SearxngSearch: { baseURL: 'SEARXNG_URL' },
};

/**
 * The credentials the searcher of `type` would read from this thread's environment, as options (`apiKey`,
 * Tencent's `secretId` / `secretKey` / `token`, or SearXNG's `baseURL`); only the variables that are set. A sync twin sends them to its
 * worker thread, which does not see environment changes made after it started.
 */
export function searcherCredentialsFromEnv(type: SearcherType): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [option, variable] of Object.entries(CREDENTIALS[type] ?? {})) {
    const value = process.env[variable];
    if (value !== undefined) found[option] = value;
  }
  return found;
}
