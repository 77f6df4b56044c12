import { z } from 'zod';
import { AsyncBaseAction } from '../../actions/base-action';
import type { ToolContext } from '../../actions/types';
import { ActionReturn } from '../../schema/action-return';
import { missingPeer } from '../../schema/errors';
import { BridgedTool } from '../bridged-tool';
import { HttpClient, HttpFailure } from './http';

/** Options of {@link AsyncArxivSearch} and {@link ArxivSearch}. */
export interface ArxivSearchOptions {
  /** @default 'ArxivSearch' */
  name?: string | undefined;
  description?: string | undefined;
  /** Articles returned per query. @default 3 */
  topK?: number | undefined;
  /** Characters of the query sent; the rest is cut. @default 300 */
  maxQueryLength?: number | undefined;
  /** Characters of each summary returned. @default 1500 */
  docContentMaxLength?: number | undefined;
  /** The arXiv API's root. @default 'https://export.arxiv.org' */
  baseURL?: string | undefined;
  /** Milliseconds one attempt may take. @default 20000 */
  timeout?: number | undefined;
  /** Retries of 429 / 5xx answers. @default 2 */
  retries?: number | undefined;
}

const DESCRIPTION =
  'Searches arXiv.org: useful for questions about physics, mathematics, computer science, quantitative biology, quantitative finance, statistics, electrical engineering and economics, answered from scientific articles.';
const NO_RESULT = 'No good Arxiv Result was found';

const searchParameters = z.object({ query: z.string().min(1).describe('The search query') });

interface XmlParser {
  parse(xml: string): unknown;
}
let parserModule: Promise<new (options: Record<string, unknown>) => XmlParser> | undefined;

/** `fast-xml-parser`, an optional peer loaded on first use; missing, a `ConfigurationError` saying so. */
function loadXmlParser(): Promise<new (options: Record<string, unknown>) => XmlParser> {
  parserModule ??= import('fast-xml-parser').then(
    (module) => module.XMLParser as unknown as new (options: Record<string, unknown>) => XmlParser,
    (error: unknown) => {
      parserModule = undefined;
      throw missingPeer(['fast-xml-parser'], 'ArxivSearch', error);
    },
  );
  return parserModule;
}

/** Elements of an Atom feed that may repeat (read as arrays even when there is one). */
const REPEATED = new Set(['entry', 'author', 'link', 'category']);

/** One article of the feed, as Lagent reports it. */
export interface ArxivArticle {
  published: string;
  title: string;
  authors: string[];
  summary: string;
}

function text(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (typeof value === 'object' && value !== null && '#text' in value)
    return text((value as { '#text': unknown })['#text']);
  return '';
}

const oneLine = (value: string) => value.replace(/\s+/g, ' ').trim();

/**
 * Reads an arXiv Atom feed: each entry's published date (YYYY-MM-DD), title, authors and summary. An arXiv
 * error (an entry whose id is under `/api/errors`) comes back as `{ error }`; a document that is not an Atom
 * feed as `undefined`.
 */
export async function parseArxivFeed(
  xml: string,
): Promise<{ articles: ArxivArticle[] } | { error: string } | undefined> {
  const Parser = await loadXmlParser();
  let document: unknown;
  try {
    document = new Parser({
      ignoreAttributes: false,
      attributeNamePrefix: '@_',
      removeNSPrefix: true,
      parseTagValue: false,
      isArray: (name: string) => REPEATED.has(name),
    }).parse(xml);
  } catch {
    return undefined;
  }
  const feed = (document as { feed?: unknown } | null)?.feed;
  if (typeof feed !== 'object' || feed === null) return undefined;
  const entries = ((feed as { entry?: unknown }).entry ?? []) as Record<string, unknown>[];
  const articles: ArxivArticle[] = [];
  for (const entry of entries) {
    if (text(entry.id).includes('/api/errors')) return { error: oneLine(text(entry.summary)) };
    const authors = ((entry.author ?? []) as Record<string, unknown>[]).map((author) =>
      oneLine(text(author.name)),
    );
    articles.push({
      published: text(entry.published).slice(0, 10),
      title: oneLine(text(entry.title)),
      authors: authors.filter(Boolean),
      summary: oneLine(text(entry.summary)),
    });
  }
  return { articles };
}

/**
 * Lagent's ArxivSearch: `get_arxiv_article_information({ query })` asks the arXiv API
 * (`GET {baseURL}/api/query?search_query=...&max_results=topK`, Atom) and answers, per article,
 * `Published: <date>\nTitle: ...\nAuthors: ...\nSummary: ...` (the summary cut at `docContentMaxLength`), the
 * articles separated by a blank line, or "No good Arxiv Result was found". Failures are `HTTP_ERROR` /
 * `API_ERROR` with a sentence. Needs the optional peer `fast-xml-parser`.
 *
 * @example
 * const arxiv = new AsyncArxivSearch({ topK: 2 });
 * (await arxiv.call({ query: 'large language model agents' }, 'get_arxiv_article_information')).formatResult();
 */
export class AsyncArxivSearch extends AsyncBaseAction {
  static override toolApis = {
    get_arxiv_article_information: {
      description:
        'Searches arXiv and gives the published date, title, authors and summary of the top articles.',
      parameters: searchParameters,
    },
  };

  readonly topK: number;
  readonly maxQueryLength: number;
  readonly docContentMaxLength: number;
  readonly #client: HttpClient;

  constructor(options: ArxivSearchOptions = {}) {
    super({ name: options.name ?? 'ArxivSearch', description: options.description ?? DESCRIPTION });
    this.topK = options.topK ?? 3;
    this.maxQueryLength = options.maxQueryLength ?? 300;
    this.docContentMaxLength = options.docContentMaxLength ?? 1500;
    this.#client = new HttpClient({
      service: this.name,
      baseURL: options.baseURL ?? 'https://export.arxiv.org',
      timeout: options.timeout,
      retries: options.retries,
    });
  }

  async get_arxiv_article_information(
    { query }: z.output<typeof searchParameters>,
    context: ToolContext,
  ): Promise<ActionReturn> {
    const outcome = await this.#client.text({
      path: '/api/query',
      query: {
        search_query: query.slice(0, this.maxQueryLength),
        start: 0,
        max_results: this.topK,
        sortBy: 'relevance',
        sortOrder: 'descending',
      },
      signal: context.signal,
    });
    if (!outcome.ok) {
      // arXiv answers a bad query with HTTP 400 and an Atom error entry saying what is wrong.
      const { failure } = outcome;
      const explained =
        failure.status === 400 && failure.body ? await parseArxivFeed(failure.body) : undefined;
      if (explained && 'error' in explained) return this.#refused(explained.error);
      return failure.toActionReturn();
    }
    const feed = await parseArxivFeed(outcome.data);
    if (!feed) {
      return new HttpFailure({
        kind: 'malformed',
        message: `${this.name}: the answer is not an arXiv Atom feed; check baseURL, or try again later.`,
      }).toActionReturn();
    }
    if ('error' in feed) return this.#refused(feed.error);
    const docs = feed.articles.map(
      (article) =>
        `Published: ${article.published}\nTitle: ${article.title}\nAuthors: ${article.authors.join(', ')}\n` +
        `Summary: ${article.summary.slice(0, this.docContentMaxLength)}`,
    );
    return new ActionReturn({
      result: [{ type: 'text', content: docs.length > 0 ? docs.join('\n\n') : NO_RESULT }],
    });
  }

  #refused(error: string): ActionReturn {
    return new HttpFailure({
      kind: 'service-error',
      message: `${this.name}: arXiv refused the query (${error}); rephrase it.`,
    }).toActionReturn();
  }

  /** Nothing to release (each call is one request); present so the sync twin can close it. */
  close(): void {}
}

/** The sync twin of {@link AsyncArxivSearch}; each call blocks its thread (use the async class in servers). */
export class ArxivSearch extends BridgedTool {
  constructor(options: ArxivSearchOptions = {}) {
    const attempts = (options.retries ?? 2) + 1;
    super({
      exportName: 'AsyncArxivSearch',
      apis: AsyncArxivSearch.toolApis,
      options: { ...options },
      callTimeout: (options.timeout ?? 20_000) * attempts + (attempts - 1) * 10_000 + 5_000,
      name: options.name ?? 'ArxivSearch',
      description: options.description ?? DESCRIPTION,
    });
  }
}
