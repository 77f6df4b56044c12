// Web and search tools: WebBrowser and its searchers, ArxivSearch, GoogleSearch, GoogleScholar, BINGMap.
// The HTTP plumbing under them (HttpClient, the checked fetch) is internal.
export {
  type ArxivArticle,
  ArxivSearch,
  type ArxivSearchOptions,
  AsyncArxivSearch,
  parseArxivFeed,
} from './arxiv-search';
// What a searcher's search() answers (the Searcher contract): a success, or a failure the model can read.
export {
  type HttpError,
  HttpFailure,
  type HttpFailureInit,
  type HttpFailureKind,
  type HttpOutcome,
  type HttpSuccess,
  httpError,
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
  type SearcherHttp,
  type SearcherOptions,
  type SearcherType,
  type SearchResult,
  SearxngSearcher,
  type SearxngSearcherOptions,
  searcherCredentialsFromEnv,
  TencentSearcher,
  type TencentSearcherOptions,
} from './searchers/index';
export {
  AsyncBINGMap,
  AsyncGoogleScholar,
  AsyncGoogleSearch,
  BINGMap,
  type BINGMapOptions,
  GoogleScholar,
  type GoogleScholarOptions,
  GoogleSearch,
  type GoogleSearchOptions,
  parseSerperResults,
  type ServiceToolOptions,
} from './services';
export { AsyncWebBrowser, WebBrowser, type WebBrowserOptions } from './web-browser';
