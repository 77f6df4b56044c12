import type { Searcher, SearcherOptions } from './base';
import { BingSearcher } from './bing';
import { BraveSearcher } from './brave';
import { DuckDuckGoSearcher } from './duckduckgo';
import { GoogleSearcher } from './google';
import { TencentSearcher } from './tencent';

export {
  BaseSearcher,
  DEFAULT_BLACK_LIST,
  type Searcher,
  type SearcherOptions,
  type SearchResult,
} from './base';
export { BingSearcher, type BingSearcherOptions } from './bing';
export { BraveSearcher, type BraveSearcherOptions } from './brave';
export { DuckDuckGoSearcher, type DuckDuckGoSearcherOptions } from './duckduckgo';
export { GoogleSearcher, type GoogleSearcherOptions } from './google';
export { TencentSearcher, type TencentSearcherOptions } from './tencent';

/** The searchers a `WebBrowser` can use, by Lagent's names. */
export const SEARCHER_TYPES = [
  'DuckDuckGoSearch',
  'BingSearch',
  'BraveSearch',
  'GoogleSearch',
  'TencentSearch',
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
  }
}
