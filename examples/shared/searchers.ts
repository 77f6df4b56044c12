/** Which real search engine the examples use, when the environment holds a key for one. */
import type { SearcherType } from 'lagent-ts/tools';

/** Real searchers by the environment variables that enable them, in order of preference. */
const REAL_SEARCHERS: readonly [SearcherType, readonly string[]][] = [
  ['BingSearch', ['BING_API_KEY']],
  ['BraveSearch', ['BRAVE_API_KEY']],
  ['GoogleSearch', ['SERPER_API_KEY']],
  ['TencentSearch', ['TENCENTCLOUD_SECRET_ID', 'TENCENTCLOUD_SECRET_KEY']],
];

/** The real searcher the environment asks for (`LAGENT_SEARCHER`, else the first with its keys set), if any. */
export function realSearcher(): SearcherType | undefined {
  const named = process.env.LAGENT_SEARCHER;
  if (named) return named as SearcherType;
  return REAL_SEARCHERS.find(([, variables]) => variables.every((name) => process.env[name]))?.[0];
}
