import { clip, MAX_TITLE_CHARS } from '../clip';
import { HttpClient, type HttpClientOptions, type HttpOutcome } from '../http';

/** One search hit, in Lagent's shape: the page's URL, a snippet (`summ`) and its title. */
export interface SearchResult {
  url: string;
  summ: string;
  title: string;
}

/** A search engine a {@link WebBrowser} can use. */
export interface Searcher {
  /** The engine's name, which starts its failure messages, e.g. `'BingSearch'`. */
  readonly name: string;
  /** Searches once; the results are filtered (blacklist, PDFs) and at most `topK`. Never throws. */
  search(query: string, options?: { signal?: AbortSignal | undefined }): Promise<HttpOutcome<SearchResult[]>>;
}

/** Options every searcher takes. */
export interface SearcherOptions {
  /** The service's key; each searcher defaults it from its usual environment variable, read at construction. */
  apiKey?: string | undefined;
  /** The service's API root, e.g. for a self-hosted mirror or a test fake. Trusted (no address check). */
  baseURL?: string | undefined;
  /** Results kept per query. @default 20 */
  topK?: number | undefined;
  /** Milliseconds one request may take. @default 20000 */
  timeout?: number | undefined;
  /** Results whose URL contains one of these strings are dropped. @default Lagent's: youtube.com, bilibili.com, researchgate.net */
  blackList?: readonly string[] | undefined;
  /** Retries of 429 / 5xx answers. @default 2 */
  retries?: number | undefined;
  /** First backoff delay in ms. @default 500 */
  minDelayMs?: number | undefined;
  /** The longest `Retry-After` waited for, in ms. @default 10000 */
  maxRetryAfterMs?: number | undefined;
}

/** Lagent's default blacklist (video sites and a paywalled one, whose pages have no readable text). */
export const DEFAULT_BLACK_LIST: readonly string[] = ['youtube.com', 'bilibili.com', 'researchgate.net'];

/** What the shared HTTP client of a searcher is built from. */
export interface SearcherHttp {
  name: string;
  defaultBaseURL: string;
  /** The environment variable of the key, for the default and for messages. */
  keyEnv?: string | undefined;
  /** Whether the service needs a key. @default true when `keyEnv` is given */
  requireKey?: boolean | undefined;
}

/**
 * What the built-in searchers share: the options, an HTTP client for the service, and Lagent's filtering of
 * raw hits (blacklisted domains and PDFs dropped, at most `topK` kept). A searcher of your own implements
 * {@link Searcher}; the HTTP layer under this class is internal.
 */
export abstract class BaseSearcher implements Searcher {
  readonly name: string;
  readonly topK: number;
  readonly blackList: readonly string[];
  /** @internal */
  protected readonly http: HttpClient;

  /** @internal */
  constructor(options: SearcherOptions, http: SearcherHttp, extra: Partial<HttpClientOptions> = {}) {
    this.name = http.name;
    this.topK = options.topK ?? 20;
    this.blackList = options.blackList ?? DEFAULT_BLACK_LIST;
    const apiKey = options.apiKey ?? (http.keyEnv ? process.env[http.keyEnv] : undefined);
    this.http = new HttpClient({
      service: http.name,
      baseURL: options.baseURL ?? http.defaultBaseURL,
      apiKey,
      requireKey: http.requireKey ?? http.keyEnv !== undefined,
      keyHint: http.keyEnv ? `set ${http.keyEnv} or pass apiKey` : 'pass apiKey',
      timeout: options.timeout,
      retries: options.retries,
      minDelayMs: options.minDelayMs,
      maxRetryAfterMs: options.maxRetryAfterMs,
      ...extra,
    });
  }

  abstract search(
    query: string,
    options?: { signal?: AbortSignal | undefined },
  ): Promise<HttpOutcome<SearchResult[]>>;

  /** Lagent's filter: drop blacklisted URLs and PDFs, keep at most `topK`, in order; titles are cut. */
  protected filter(raw: readonly SearchResult[]): SearchResult[] {
    const kept: SearchResult[] = [];
    for (const result of raw) {
      if (this.blackList.some((domain) => result.url.includes(domain))) continue;
      if (/\.pdf$/i.test(result.url)) continue;
      kept.push({
        url: result.url,
        summ: cleanSnippet(result.summ),
        title: clip(cleanSnippet(result.title), MAX_TITLE_CHARS),
      });
      if (kept.length >= this.topK) break;
    }
    return kept;
  }
}

/** A snippet on one line, without the markup some engines put around matched words. */
export function cleanSnippet(text: string | undefined | null): string {
  if (!text) return '';
  return decodeEntities(text.replace(/<[^>]*>/g, ''))
    .replace(/\s+/g, ' ')
    .trim();
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Decodes the HTML entities that appear in snippets: named basics and numeric ones. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (match, entity: string) => {
    if (entity[0] === '#') {
      const code =
        entity[1] === 'x' || entity[1] === 'X'
          ? Number.parseInt(entity.slice(2), 16)
          : Number(entity.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : match;
    }
    return ENTITIES[entity.toLowerCase()] ?? match;
  });
}

/** The value at `path` of a parsed JSON body when it is an array; `undefined` otherwise. */
export function arrayAt(value: unknown, ...path: string[]): unknown[] | undefined {
  let current: unknown = value;
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return Array.isArray(current) ? current : undefined;
}

/** A string field of a JSON object, or `''`. */
export function stringField(value: unknown, key: string): string {
  if (typeof value !== 'object' || value === null) return '';
  const field = (value as Record<string, unknown>)[key];
  return typeof field === 'string' ? field : '';
}
