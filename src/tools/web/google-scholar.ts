import { z } from 'zod';
import { AsyncBaseAction } from '../../actions/base-action';
import type { ToolContext } from '../../actions/types';
import { ActionReturn } from '../../schema/action-return';
import { isPlainObject } from '../../utils/is';
import { BridgedTool } from '../bridged-tool';
import type { HttpClient } from './http';
import {
  answerFailure,
  arrayOf,
  bridgedCallTimeout,
  bridgedOptions,
  type ServiceToolOptions,
  serviceClient,
  stringOf,
} from './service-tool';

/** Options of {@link AsyncGoogleScholar} and {@link GoogleScholar}. */
export interface GoogleScholarOptions extends ServiceToolOptions {
  /** SerpApi's API key. @default process.env.SERPAPI_API_KEY */
  apiKey?: string | undefined;
  /** @default 'https://serpapi.com' */
  baseURL?: string | undefined;
  /** How many articles a search or an author's page reports (Lagent reports three). @default 3 */
  topK?: number | undefined;
}

const SETUP = {
  service: 'GoogleScholar',
  defaultBaseURL: 'https://serpapi.com',
  environmentVariable: 'SERPAPI_API_KEY',
};
const DESCRIPTION = 'Searches Google Scholar (through SerpApi) for articles, authors and citation formats.';

const searchParameters = z.object({
  query: z.string().min(1).describe('The query to search for'),
  cites: z
    .string()
    .optional()
    .describe('The ID of an article, to search the articles citing it ("Cited by")'),
  as_ylo: z.number().int().optional().describe('Only results from this year on'),
  as_yhi: z.number().int().optional().describe('Only results up to this year'),
  scisbd: z
    .number()
    .int()
    .optional()
    .describe('Articles added in the last year, newest first: 1 for abstracts only, 2 for everything'),
  cluster: z.string().optional().describe('The ID of an article, to list all its versions'),
  hl: z.string().optional().describe('The language of the interface, a two-letter code such as en'),
  lr: z.string().optional().describe('Languages to limit the search to, e.g. lang_fr|lang_de'),
  start: z.number().int().optional().describe('The result offset, for pages: 0, 10, 20, ...'),
  num: z.number().int().optional().describe('How many results to fetch, at most 20'),
  as_sdt: z.string().optional().describe('A search type or filter, e.g. 7 to include patents'),
  safe: z.string().optional().describe('Adult content filtering: active or off'),
  filter: z
    .string()
    .optional()
    .describe("'1' keeps the 'Similar results' and 'Omitted results' filters on, '0' off"),
  as_vis: z.string().optional().describe("'1' leaves citations out, '0' includes them"),
});
const authorParameters = z.object({
  author_id: z.string().min(1).describe('The ID of an author, as get_author_id gives it'),
  hl: z.string().optional().describe('The language, a two-letter code such as en'),
  view_op: z.string().optional().describe('A part of the page to view: view_citation or list_colleagues'),
  sort: z.string().optional().describe('How articles are sorted: title or pubdate (default: by citations)'),
  citation_id: z.string().optional().describe('An article of the author, with view_op view_citation'),
  start: z.number().int().optional().describe('The article offset, for pages'),
  num: z.number().int().optional().describe('How many articles to fetch'),
  no_cache: z.boolean().optional().describe('Fetch fresh results instead of cached ones'),
});
const citationParameters = z.object({
  q: z.string().min(1).describe('The ID of a search result (an organic_id from search_google_scholar)'),
  no_cache: z.boolean().optional().describe('Fetch fresh results instead of cached ones'),
});
const authorIdParameters = z.object({
  mauthors: z.string().min(1).describe('The name of the author to look for'),
  hl: z.string().optional().describe('The language, a two-letter code such as en (default en)'),
  after_author: z.string().optional().describe('The token of the next page of profiles'),
  before_author: z.string().optional().describe('The token of the previous page of profiles'),
  no_cache: z.boolean().optional().describe('Fetch fresh results instead of cached ones'),
});

type Query = Record<string, string | number | boolean | undefined>;

/** What one SerpApi engine call gave: its JSON body, or the `ActionReturn` saying why there is none. */
type EngineOutcome = { body: Record<string, unknown> } | { empty: true } | { failure: ActionReturn };

/**
 * Lagent's GoogleScholar toolkit on SerpApi (`GET /search.json` with `engine=google_scholar`,
 * `google_scholar_author`, `google_scholar_cite` or `google_scholar_profiles`, and `api_key`):
 *
 * - `search_google_scholar({ query, ... })`: titles, citation counts, result IDs, snippets and publication
 *   lines of the first `topK` articles;
 * - `get_author_information({ author_id, ... })`: name, affiliations, website and `topK` articles;
 * - `get_citation_format({ q })`: the MLA citation of a search result;
 * - `get_author_id({ mauthors, ... })`: the ID of the first matching author profile.
 *
 * A search that finds nothing answers with a sentence saying so; every failure is an `HTTP_ERROR` /
 * `API_ERROR` with a sentence (SerpApi's own `error` message included), nothing is thrown.
 *
 * @example
 * const scholar = new AsyncGoogleScholar({ apiKey: process.env.SERPAPI_API_KEY });
 * await scholar.call({ query: 'large language model agents' }, 'search_google_scholar');
 */
export class AsyncGoogleScholar extends AsyncBaseAction {
  static override toolApis = {
    search_google_scholar: {
      description: 'Searches Google Scholar for articles matching a query.',
      parameters: searchParameters,
    },
    get_author_information: {
      description:
        "Gets an author's name, affiliations, website and main articles from the author's ID (see get_author_id).",
      parameters: authorParameters,
    },
    get_citation_format: {
      description:
        'Gets the MLA citation of a search result from its ID (an organic_id of search_google_scholar).',
      parameters: citationParameters,
    },
    get_author_id: {
      description: "Finds an author's ID from the author's name.",
      parameters: authorIdParameters,
    },
  };

  /** How many articles a search or an author's page reports. */
  readonly topK: number;
  readonly #client: HttpClient;

  constructor(options: GoogleScholarOptions = {}) {
    super({ name: options.name ?? 'GoogleScholar', description: options.description ?? DESCRIPTION });
    this.topK = options.topK ?? 3;
    this.#client = serviceClient(options, SETUP);
  }

  async search_google_scholar(
    { query, ...rest }: z.output<typeof searchParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | Record<string, unknown>> {
    const outcome = await this.#engine('google_scholar', { q: query, ...rest }, 'organic_results', context);
    if ('failure' in outcome) return outcome.failure;
    if ('empty' in outcome) return this.#nothing(`no articles were found for ${JSON.stringify(query)}`);
    const articles = arrayOf(outcome.body.organic_results).filter(isPlainObject).slice(0, this.topK);
    if (articles.length === 0) return this.#nothing(`no articles were found for ${JSON.stringify(query)}`);
    const citedBy = (article: Record<string, unknown>) => {
      const links = isPlainObject(article.inline_links) ? article.inline_links : {};
      const cited = isPlainObject(links.cited_by) ? links.cited_by.total : undefined;
      return typeof cited === 'number' || typeof cited === 'string' ? cited : '';
    };
    return {
      title: articles.map((article) => stringOf(article.title) ?? ''),
      cited_by: articles.map(citedBy),
      organic_id: articles.map((article) => stringOf(article.result_id) ?? ''),
      snippets: articles.map((article) => stringOf(article.snippet) ?? ''),
      pub_info: articles.map((article) =>
        isPlainObject(article.publication_info) ? (stringOf(article.publication_info.summary) ?? '') : '',
      ),
    };
  }

  async get_author_information(
    { author_id, ...rest }: z.output<typeof authorParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | Record<string, unknown>> {
    const outcome = await this.#engine('google_scholar_author', { author_id, ...rest }, 'author', context);
    if ('failure' in outcome) return outcome.failure;
    const author = 'body' in outcome ? outcome.body.author : undefined;
    if (!isPlainObject(author)) return this.#nothing(`no author has the ID ${JSON.stringify(author_id)}`);
    return {
      name: stringOf(author.name) ?? '',
      affiliations: stringOf(author.affiliations) ?? '',
      website: stringOf(author.website) ?? '',
      articles: arrayOf('body' in outcome ? outcome.body.articles : undefined)
        .filter(isPlainObject)
        .slice(0, this.topK)
        .map((article) => ({
          title: stringOf(article.title) ?? '',
          authors: stringOf(article.authors) ?? '',
        })),
    };
  }

  async get_citation_format(
    { q, no_cache }: z.output<typeof citationParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | string> {
    const outcome = await this.#engine('google_scholar_cite', { q, no_cache }, 'citations', context);
    if ('failure' in outcome) return outcome.failure;
    const citations = 'body' in outcome ? arrayOf(outcome.body.citations).filter(isPlainObject) : [];
    // Lagent gives the first format, which SerpApi lists as MLA; the title is checked in case the order changes.
    const mla = citations.find((citation) => citation.title === 'MLA') ?? citations[0];
    const snippet = mla && stringOf(mla.snippet);
    if (!snippet) return this.#nothing(`no citation formats were found for the result ${JSON.stringify(q)}`);
    return snippet;
  }

  async get_author_id(
    { mauthors, hl = 'en', ...rest }: z.output<typeof authorIdParameters>,
    context: ToolContext,
  ): Promise<ActionReturn | Record<string, unknown>> {
    const outcome = await this.#engine(
      'google_scholar_profiles',
      { mauthors, hl, ...rest },
      'profiles',
      context,
    );
    if ('failure' in outcome) return outcome.failure;
    const profiles = 'body' in outcome ? arrayOf(outcome.body.profiles).filter(isPlainObject) : [];
    const authorId = profiles.map((profile) => stringOf(profile.author_id)).find((id) => id);
    if (!authorId) return this.#nothing(`no author profile matches ${JSON.stringify(mauthors)}`);
    return { author_id: authorId };
  }

  /** Nothing to release (each call is one request); present so the sync twin can close it. */
  close(): void {}

  /**
   * One SerpApi request. A body without `key` is an empty result when SerpApi says the search found
   * nothing (its `error` then says so, and the search status is still Success), a service error when it
   * reports another error, and malformed otherwise.
   */
  async #engine(engine: string, query: Query, key: string, context: ToolContext): Promise<EngineOutcome> {
    const client = this.#client;
    const outcome = await client.json({
      path: '/search.json',
      query: { engine, ...query, api_key: client.apiKey },
      signal: context.signal,
    });
    if (!outcome.ok) return { failure: outcome.failure.toActionReturn() };
    const body = outcome.data;
    if (!isPlainObject(body)) {
      return {
        failure: answerFailure(
          'malformed',
          `${this.name}: the answer is not a SerpApi result; check baseURL.`,
        ),
      };
    }
    if (body[key] !== undefined) {
      const wellFormed = key === 'author' ? isPlainObject(body[key]) : Array.isArray(body[key]);
      if (wellFormed) return { body };
      return {
        failure: answerFailure('malformed', `${this.name}: SerpApi's "${key}" has an unexpected shape.`),
      };
    }
    const status = isPlainObject(body.search_metadata) ? body.search_metadata.status : undefined;
    const error = stringOf(body.error);
    if (
      status !== 'Error' &&
      (error === undefined || /returned any results|no results|fully empty/i.test(error))
    ) {
      return error === undefined && status === undefined
        ? { failure: answerFailure('malformed', `${this.name}: the answer has no "${key}"; check baseURL.`) }
        : { empty: true };
    }
    const detail = error ? ` SerpApi said: ${error}` : '';
    return {
      failure: answerFailure('service-error', `${this.name}: the search failed; try again later.${detail}`),
    };
  }

  /** A search that worked and found nothing: a sentence the model can act on. */
  #nothing(what: string): ActionReturn {
    return new ActionReturn({
      result: [{ type: 'text', content: `${this.name}: ${what}; try other words.` }],
    });
  }
}

/**
 * The sync twin of {@link AsyncGoogleScholar}: the same APIs and results; each call blocks its thread (use the
 * async class inside servers).
 */
export class GoogleScholar extends BridgedTool {
  constructor(options: GoogleScholarOptions = {}) {
    super({
      exportName: 'AsyncGoogleScholar',
      apis: AsyncGoogleScholar.toolApis,
      options: bridgedOptions(options, SETUP.environmentVariable),
      callTimeout: bridgedCallTimeout(options),
      name: options.name ?? 'GoogleScholar',
      description: options.description ?? DESCRIPTION,
    });
  }
}
