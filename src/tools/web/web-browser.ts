import { z } from 'zod';
import { AsyncBaseAction } from '../../actions/base-action';
import type { ApiDescription, ToolContext } from '../../actions/types';
import { ActionReturn } from '../../schema/action-return';
import { ConfigurationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { ActionStatusCode } from '../../schema/status';
import { BridgedTool } from '../bridged-tool';
import { checkToolCompat, describeToolkitAsLagent, type ToolCompatMode } from '../compat';
import { clip, listSome, MAX_TITLE_CHARS } from './clip';
import { DEFAULT_EXTRACT_TIMEOUT_MS, htmlToText, type PageText, tidy } from './html-text';
import { type HttpFailure, safeFetch } from './http';
import {
  createSearcher,
  SEARCHER_TYPES,
  type Searcher,
  type SearcherType,
  type SearchResult,
  searcherCredentialsFromEnv,
} from './searchers/index';

/** Options of {@link AsyncWebBrowser} and {@link WebBrowser}. */
export interface WebBrowserOptions {
  /** @default 'WebBrowser' */
  name?: string | undefined;
  /** What the toolkit does, for the model. */
  description?: string | undefined;
  /** The search engine, by Lagent's name. @default 'DuckDuckGoSearch' */
  searcherType?: SearcherType | undefined;
  /** The search engine's key; by default its usual environment variable (`BING_API_KEY`, `BRAVE_API_KEY`, ...). */
  apiKey?: string | undefined;
  /** The search engine's API root (trusted: not subject to the private-address check). */
  baseURL?: string | undefined;
  /** Results kept per query. @default 20 */
  topK?: number | undefined;
  /** Milliseconds one search request, or one page fetch (redirects included), may take. @default 20000 / 15000 */
  timeout?: number | undefined;
  /** Let `select` / `open_url` reach loopback, private, link-local and metadata addresses. @default false */
  allowPrivateNetwork?: boolean | undefined;
  /** Hosts `select` / `open_url` may reach even though they resolve to private addresses (an intranet wiki). */
  allowedHosts?: readonly string[] | undefined;
  /** Characters of page text returned per page; longer text is cut with a note. @default 8192 (Lagent's) */
  maxPageChars?: number | undefined;
  /**
   * Milliseconds the main text of one page may take to extract (in a worker thread); past it the thread is
   * stopped and the page's rough text is returned with a note. @default 5000
   */
  extractTimeout?: number | undefined;
  /** Bytes of a page read. @default 2097152 (2 MiB) */
  maxPageBytes?: number | undefined;
  /** Redirects followed per page. @default 5 */
  maxRedirects?: number | undefined;
  /** Pages one `select` fetches; further ids are left out with a note. @default 4 */
  maxSelect?: number | undefined;
  /** Queries one `search` sends (at the same time); further ones are left out with a note. @default 8 */
  maxQueries?: number | undefined;
  /** Pages cached per session (least recently used dropped first). @default 32 */
  cacheSize?: number | undefined;
  /** Sessions whose search results and pages are kept (least recently used dropped first). @default 256 */
  maxSessions?: number | undefined;
  /** Results whose URL contains one of these are dropped. @default youtube.com, bilibili.com, researchgate.net */
  blackList?: readonly string[] | undefined;
  /** Retries of a search answered 429 / 5xx. @default 2 */
  retries?: number | undefined;
  /**
   * The search engine's own options, e.g. `{ market: 'en-US' }` (Bing), `{ country, searchLang }` (Brave),
   * `{ region }` (DuckDuckGo), `{ secretId, secretKey }` (Tencent). Must be plain data (the sync twin clones it).
   */
  searcherOptions?: Record<string, unknown> | undefined;
  /**
   * `'lagent'`: the toolkit describes itself as Lagent's `WebBrowser` does (its description and each API's,
   * with Lagent's parameter types), so a prompt listing it is Lagent's byte for byte.
   */
  compat?: ToolCompatMode | undefined;
}

/** Lagent's WebBrowser, as its docstrings and signatures describe it (`tool_api`): for `compat: 'lagent'`. */
const LAGENT_DESCRIPTION = 'Wrapper around the Web Browser Tool.';
const LAGENT_APIS = [
  {
    name: 'search',
    description: 'BING search API',
    parameters: [{ name: 'query', type: 'STRING', description: 'list of search query strings' }],
    required: ['query'],
  },
  {
    name: 'select',
    description: 'get the detailed content on the selected pages.',
    parameters: [
      {
        name: 'select_ids',
        type: 'NUMBER',
        description: 'list of index to select. Max number of index to be selected is no more than 4.',
      },
    ],
    required: ['select_ids'],
  },
  {
    name: 'open_url',
    description: '',
    parameters: [{ name: 'url', type: 'STRING', description: '' }],
    required: ['url'],
  },
] as const satisfies readonly Omit<ApiDescription, 'parameter_description'>[];

const DESCRIPTION =
  'Searches the web and reads pages: search lists numbered results; select reads the chosen results of the last search; open_url reads one page.';

const searchParameters = z.object({
  query: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .describe('A search query, or a list of queries searched together'),
});
const selectParameters = z.object({
  select_ids: z
    .array(z.number().int().nonnegative())
    .min(1)
    .describe('The numbers of the results of the last search to read (at most 4)'),
});
const openUrlParameters = z.object({
  url: z.string().min(1).describe('The http(s) URL of the page'),
});

/** A map that forgets its least recently used entry beyond `limit`. */
class LruMap<K, V> {
  readonly #map = new Map<K, V>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get(key: K): V | undefined {
    const value = this.#map.get(key);
    if (value !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    while (this.#map.size > this.#limit) this.#map.delete(this.#map.keys().next().value as K);
  }

  get size(): number {
    return this.#map.size;
  }

  clear(): void {
    this.#map.clear();
  }
}

/** What a session remembers: its last search's numbered results, and the pages it read. */
interface SessionState {
  results: Map<number, SearchResult> | undefined;
  pages: LruMap<string, PageText>;
}

type PageOutcome = { ok: true; page: PageText } | { ok: false; failure: HttpFailure };

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigurationError({ message: `WebBrowser: ${name} must be a positive integer, got ${value}` });
  }
  return value;
}

/** `text` cut to `max` characters, with a note saying how much there was. */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[… truncated: ${max} of ${text.length} characters shown]`;
}

function textItem(content: string) {
  return { type: 'text', content };
}

/**
 * Lagent's web browser toolkit, `WebBrowser`:
 * - `search({ query })`: one query or several (searched concurrently); the results are merged by URL (the
 *   snippets of a URL found twice are joined) and numbered from 0, as Lagent numbers them: `{ "0": { url, summ,
 *   title }, ... }`. A session remembers its last search for `select`.
 * - `select({ select_ids })`: fetches the chosen results of the session's last search and returns their main
 *   text (Readability's article, else the page without scripts, navigation and markup), cut at `maxPageChars`
 *   with a note: `{ "2": { url, title, content }, ... }`.
 * - `open_url({ url })`: the main text of one page.
 *
 * Pages are fetched safely (see `safeFetch`): http(s) only, bounded in size, time and redirects, and with
 * `allowPrivateNetwork: false` never from loopback, private, link-local or metadata addresses (checked after DNS
 * resolution and on every redirect). Fetched pages are cached per session (LRU). Failures are `HTTP_ERROR` /
 * `API_ERROR` results with a sentence; nothing is thrown. Reading pages needs the optional peers
 * `@mozilla/readability` and `linkedom`.
 *
 * @example
 * const browser = new AsyncWebBrowser({ searcherType: 'BraveSearch', topK: 5 });
 * await browser.call({ query: ['lagent', 'lagent-ts'] }, 'search', { sessionId: 1 });
 * await browser.call({ select_ids: [0, 2] }, 'select', { sessionId: 1 });
 */
export class AsyncWebBrowser extends AsyncBaseAction {
  static override toolApis = {
    search: {
      description:
        'Searches the web. Gives numbered results (url, summ, title); several queries may be searched at once.',
      parameters: searchParameters,
    },
    select: {
      description:
        'Reads the chosen results of the last search: gives the main text of each page. Select at most 4.',
      parameters: selectParameters,
    },
    open_url: {
      description: 'Opens a web page and gives its main text.',
      parameters: openUrlParameters,
    },
  };

  readonly searcher: Searcher;
  readonly #options: WebBrowserOptions;
  /** By `String(sessionId)`, as agents key sessions: 1 and '1' are one session. */
  readonly #sessions: LruMap<string, SessionState>;
  readonly #maxPageChars: number;
  readonly #maxSelect: number;
  readonly #maxQueries: number;
  readonly #extractTimeout: number;
  readonly #cacheSize: number;

  constructor(options: WebBrowserOptions = {}) {
    const lagent = checkToolCompat('WebBrowser', options.compat);
    super({
      name: options.name ?? (lagent ? 'AsyncWebBrowser' : 'WebBrowser'),
      description: options.description ?? DESCRIPTION,
    });
    if (lagent) describeToolkitAsLagent(this, options.description ?? LAGENT_DESCRIPTION, LAGENT_APIS);
    const type = options.searcherType ?? 'DuckDuckGoSearch';
    if (!(SEARCHER_TYPES as readonly string[]).includes(type)) {
      throw new ConfigurationError({
        message: `WebBrowser: unknown searcherType ${JSON.stringify(type)} (one of ${SEARCHER_TYPES.join(', ')})`,
      });
    }
    this.#options = options;
    this.#maxPageChars = positive('maxPageChars', options.maxPageChars, 8192);
    this.#maxSelect = positive('maxSelect', options.maxSelect, 4);
    this.#maxQueries = positive('maxQueries', options.maxQueries, 8);
    this.#extractTimeout = positive('extractTimeout', options.extractTimeout, DEFAULT_EXTRACT_TIMEOUT_MS);
    this.#cacheSize = positive('cacheSize', options.cacheSize, 32);
    this.#sessions = new LruMap(positive('maxSessions', options.maxSessions, 256));
    const common = {
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      topK: positive('topK', options.topK, 20),
      timeout: options.timeout,
      blackList: options.blackList,
      retries: options.retries,
    };
    // Options left undefined here do not hide the same ones given in searcherOptions.
    const given = Object.fromEntries(Object.entries(common).filter(([, value]) => value !== undefined));
    this.searcher = createSearcher(type, { ...options.searcherOptions, ...given });
  }

  #session(sessionId: SessionId): SessionState {
    let state = this.#sessions.get(String(sessionId));
    if (!state) {
      state = { results: undefined, pages: new LruMap(this.#cacheSize) };
      this.#sessions.set(String(sessionId), state);
    }
    return state;
  }

  /**
   * Searches the queries (at most `maxQueries`, the rest left out with a note) concurrently and numbers the
   * merged results; the session keeps them for `select`.
   */
  async search({ query }: z.output<typeof searchParameters>, context: ToolContext): Promise<ActionReturn> {
    const asked = [...new Set(Array.isArray(query) ? query : [query])];
    const queries = asked.slice(0, this.#maxQueries);
    const leftOut = asked.length - queries.length;
    const outcomes = await Promise.all(
      queries.map((q) => this.searcher.search(q, { signal: context.signal })),
    );
    const merged = new Map<string, SearchResult>();
    const failures: { query: string; failure: HttpFailure }[] = [];
    outcomes.forEach((outcome, index) => {
      if (!outcome.ok) {
        failures.push({ query: queries[index]!, failure: outcome.failure });
        return;
      }
      for (const result of outcome.data) {
        const seen = merged.get(result.url);
        if (seen) seen.summ = seen.summ ? `${seen.summ}\n${result.summ}` : result.summ;
        else merged.set(result.url, { ...result });
      }
    });
    if (failures.length === queries.length) {
      const first = failures[0]!.failure;
      const message =
        failures.length === 1
          ? first.message
          : failures.map(({ query: q, failure }) => `"${q}": ${failure.message}`).join(' ');
      return new ActionReturn({ errmsg: message, state: first.state });
    }
    const numbered = new Map([...merged.values()].map((result, index) => [index, result]));
    this.#session(context.sessionId).results = numbered;
    const notes = failures.map(({ query: q, failure }) => `The query "${q}" failed: ${failure.message}`);
    if (leftOut > 0) {
      const first = JSON.stringify(clip(asked[queries.length]!, 100));
      notes.push(
        `At most ${this.#maxQueries} queries are searched per call; ${leftOut} more were left out, from ${first} on; search them in another call if they are needed.`,
      );
    }
    if (numbered.size === 0) {
      const searched = queries.map((q) => JSON.stringify(q)).join(', ');
      return new ActionReturn({
        result: [textItem(`No results for ${searched}; try other words.`), ...notes.map(textItem)],
      });
    }
    return new ActionReturn({
      result: [textItem(JSON.stringify(Object.fromEntries(numbered))), ...notes.map(textItem)],
    });
  }

  /** Reads the chosen results of the session's last search. */
  async select(
    { select_ids }: z.output<typeof selectParameters>,
    context: ToolContext,
  ): Promise<ActionReturn> {
    // Reading does not make a session: a select without a search must not push another session out.
    const state = this.#sessions.get(String(context.sessionId));
    const results = state?.results;
    if (!state || !results) {
      return new ActionReturn({
        errmsg: `${this.name}.select: there are no search results to select from; call ${this.name}.search first.`,
        state: ActionStatusCode.API_ERROR,
      });
    }
    const ids = [...new Set(select_ids)];
    const known = ids.filter((id) => results.has(id));
    const unknown = ids.filter((id) => !results.has(id));
    const chosen = known.slice(0, this.#maxSelect);
    const notes: string[] = [];
    if (unknown.length > 0) {
      const range = results.size > 0 ? `0 to ${results.size - 1}` : 'none';
      notes.push(`No result numbered ${listSome(unknown, 10)} in the last search (its results: ${range}).`);
    }
    if (known.length > chosen.length) {
      notes.push(
        `At most ${this.#maxSelect} page(s) are read per select; left out: ${listSome(known.slice(this.#maxSelect), 10)}.`,
      );
    }
    if (chosen.length === 0) {
      return new ActionReturn({
        errmsg: `${this.name}.select: ${notes.join(' ')}`,
        state: ActionStatusCode.API_ERROR,
      });
    }
    const pages = await Promise.all(
      chosen.map((id) => this.#readPage(results.get(id)!.url, state, context, `${this.name}.select`)),
    );
    const read: Record<string, { url: string; title: string; content: string }> = {};
    const failures: HttpFailure[] = [];
    chosen.forEach((id, index) => {
      const result = results.get(id)!;
      const outcome = pages[index]!;
      if (outcome.ok) {
        read[id] = {
          url: result.url,
          title: clip(outcome.page.title || result.title, MAX_TITLE_CHARS),
          content: truncate(outcome.page.text, this.#maxPageChars),
        };
      } else {
        failures.push(outcome.failure);
        notes.push(`Result ${id} could not be read: ${outcome.failure.message}`);
      }
    });
    if (Object.keys(read).length === 0) {
      return new ActionReturn({
        errmsg: notes.join(' '),
        state: failures[0]?.state ?? ActionStatusCode.API_ERROR,
      });
    }
    return new ActionReturn({ result: [textItem(JSON.stringify(read)), ...notes.map(textItem)] });
  }

  /** Reads one page. */
  async open_url({ url }: z.output<typeof openUrlParameters>, context: ToolContext): Promise<ActionReturn> {
    const state = this.#session(context.sessionId);
    const outcome = await this.#readPage(url.trim(), state, context, `${this.name}.open_url`);
    if (!outcome.ok) return outcome.failure.toActionReturn();
    const title = clip(outcome.page.title, MAX_TITLE_CHARS);
    const body = truncate(outcome.page.text, this.#maxPageChars);
    return new ActionReturn({ result: [textItem(title ? `${title}\n${body}` : body)] });
  }

  /** A page's text, from the session's cache or fetched safely. */
  async #readPage(
    url: string,
    state: SessionState,
    context: ToolContext,
    service: string,
  ): Promise<PageOutcome> {
    const cached = state.pages.get(url);
    if (cached) return { ok: true, page: cached };
    const fetched = await safeFetch(url, {
      service,
      allowPrivateNetwork: this.#options.allowPrivateNetwork,
      allowedHosts: this.#options.allowedHosts,
      timeout: this.#options.timeout,
      maxBytes: this.#options.maxPageBytes,
      maxRedirects: this.#options.maxRedirects,
      signal: context.signal,
    });
    if (!fetched.ok) return fetched;
    const { contentType, text } = fetched.data;
    const page = /html/.test(contentType)
      ? await htmlToText(text, { timeoutMs: this.#extractTimeout, signal: context.signal })
      : { title: '', text: tidy(text) };
    state.pages.set(url, page);
    return { ok: true, page };
  }

  /** Forgets every session's search results and cached pages. */
  close(): void {
    this.#sessions.clear();
  }
}

/**
 * `options` with the searcher's credentials from this thread's environment filled in where none are given: the
 * bridge's worker thread does not see environment changes made after it started.
 */
function withEnvironmentCredentials(options: WebBrowserOptions): Record<string, unknown> {
  const type = options.searcherType ?? 'DuckDuckGoSearch';
  if (!(SEARCHER_TYPES as readonly string[]).includes(type)) return { ...options };
  const { apiKey, ...others } = searcherCredentialsFromEnv(type);
  const given = options.searcherOptions ?? {};
  // Explicit options win: apiKey (Tencent's "id:key" too), then the searcher's own options.
  const fromEnvironment = options.apiKey === undefined ? others : {};
  return {
    ...options,
    ...(options.apiKey === undefined && apiKey !== undefined ? { apiKey } : {}),
    searcherOptions: { ...fromEnvironment, ...given },
  };
}

/**
 * The synchronous `WebBrowser`: {@link AsyncWebBrowser} run in the sync bridge's worker thread; each call
 * blocks this thread until it answers. Use {@link AsyncWebBrowser} inside servers.
 *
 * @example
 * const browser = new WebBrowser({ searcherType: 'BingSearch' }); // BING_API_KEY from the environment
 * browser.call({ query: 'InternLM lagent' }, 'search').toText();
 * browser.close();
 */
export class WebBrowser extends BridgedTool {
  constructor(options: WebBrowserOptions = {}) {
    const attempts = (options.retries ?? 2) + 1;
    const searchBudget = (options.timeout ?? 20_000) * attempts + (attempts - 1) * 10_000;
    // A select's pages are fetched together, then extracted two at a time.
    const pageBudget =
      (options.timeout ?? 15_000) +
      Math.ceil((options.maxSelect ?? 4) / 2) * (options.extractTimeout ?? DEFAULT_EXTRACT_TIMEOUT_MS);
    super({
      exportName: 'AsyncWebBrowser',
      apis: AsyncWebBrowser.toolApis,
      options: withEnvironmentCredentials(options),
      callTimeout: Math.max(searchBudget, pageBudget) + 10_000,
      name: options.name ?? 'WebBrowser',
      description: options.description ?? DESCRIPTION,
    });
    if (checkToolCompat('WebBrowser', options.compat)) {
      describeToolkitAsLagent(this, options.description ?? LAGENT_DESCRIPTION, LAGENT_APIS);
    }
  }
}
