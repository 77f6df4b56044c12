// Web and search tools (issue 10): WebBrowser and its searchers, ArxivSearch, GoogleSearch, GoogleScholar, BINGMap
export {
  type ArxivArticle,
  ArxivSearch,
  type ArxivSearchOptions,
  AsyncArxivSearch,
  parseArxivFeed,
} from './arxiv-search';
export {
  blockedAddressReason,
  type FetchedDocument,
  HttpClient,
  type HttpClientOptions,
  type HttpError,
  HttpFailure,
  type HttpFailureInit,
  type HttpFailureKind,
  type HttpOutcome,
  type HttpRequestOptions,
  type HttpSuccess,
  httpError,
  parseRetryAfter,
  type SafeFetchOptions,
  safeFetch,
} from './http';
export {
  BaseSearcher,
  BingSearcher,
  type BingSearcherOptions,
  BraveSearcher,
  type BraveSearcherOptions,
  createSearcher,
  DEFAULT_BLACK_LIST,
  DuckDuckGoSearcher,
  type DuckDuckGoSearcherOptions,
  GoogleSearcher,
  type GoogleSearcherOptions,
  SEARCHER_TYPES,
  type Searcher,
  type SearcherOptions,
  type SearcherType,
  type SearchResult,
  searcherCredentialsFromEnv,
  TencentSearcher,
  type TencentSearcherOptions,
} from './searchers/index';
export * from './services';
export { AsyncWebBrowser, WebBrowser, type WebBrowserOptions } from './web-browser';
