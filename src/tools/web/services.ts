// Search-service tools (Lagent's GoogleSearch, GoogleScholar, BINGMap), each with its async twin.
export { AsyncBINGMap, BINGMap, type BINGMapOptions } from './bing-map';
export { AsyncGoogleScholar, GoogleScholar, type GoogleScholarOptions } from './google-scholar';
export {
  AsyncGoogleSearch,
  GoogleSearch,
  type GoogleSearchOptions,
  parseSerperResults,
} from './google-search';
export type { ServiceToolOptions } from './service-tool';
