import { isPlainObject } from '../../../utils/is';
import { type HttpOutcome, httpError } from '../http';
import { arrayAt, BaseSearcher, type SearcherOptions, type SearchResult, stringField } from './base';

/** Options of {@link GoogleSearcher}. */
export interface GoogleSearcherOptions extends SearcherOptions {
  /** Serper's search type: `'search'` (organic results) or `'news'`. @default 'search' */
  searchType?: 'search' | 'news' | undefined;
}

/** `attribute: value` pairs of a Serper result, joined as Lagent does. */
function attributesText(value: unknown): string {
  if (!isPlainObject(value)) return '';
  return Object.entries(value)
    .map(([name, text]) => `${name}: ${String(text)}`)
    .join('. ');
}

/** Lagent's reading of a Serper answer: the answer box, the knowledge graph, then the results. */
export function parseSerper(body: Record<string, unknown>, resultKey: string, topK: number): SearchResult[] {
  const results: SearchResult[] = [];
  const box = body.answerBox;
  if (isPlainObject(box)) {
    const answer =
      stringField(box, 'answer') || stringField(box, 'snippet') || stringField(box, 'snippetHighlighted');
    if (answer)
      results.push({ url: stringField(box, 'link'), summ: answer, title: stringField(box, 'title') });
  }
  const graph = body.knowledgeGraph;
  if (isPlainObject(graph)) {
    const description = stringField(graph, 'description');
    const attributes = attributesText(graph.attributes);
    results.push({
      url: stringField(graph, 'descriptionLink'),
      summ: attributes ? `${description}. ${attributes}` : description,
      title: `${stringField(graph, 'title')}: ${stringField(graph, 'type')}.`,
    });
  }
  for (const item of (arrayAt(body, resultKey) ?? []).slice(0, topK)) {
    const snippet = stringField(item, 'snippet');
    const attributes = attributesText(isPlainObject(item) ? item.attributes : undefined);
    results.push({
      url: stringField(item, 'link'),
      summ: attributes ? `${snippet}. ${attributes}` : snippet,
      title: stringField(item, 'title'),
    });
  }
  return results;
}

/**
 * Google results through Serper: `POST {baseURL}/{search|news}` with `{ q, num }` and the key in `X-API-KEY`
 * (default `SERPER_API_KEY`). The answer box, knowledge graph and `organic` (or `news`) results are read as
 * Lagent reads them.
 *
 * @default baseURL 'https://google.serper.dev'
 */
export class GoogleSearcher extends BaseSearcher {
  readonly #type: 'search' | 'news';

  constructor(options: GoogleSearcherOptions = {}) {
    super(options, {
      name: 'GoogleSearch',
      defaultBaseURL: 'https://google.serper.dev',
      keyEnv: 'SERPER_API_KEY',
    });
    this.#type = options.searchType ?? 'search';
  }

  async search(
    query: string,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<HttpOutcome<SearchResult[]>> {
    const outcome = await this.http.json({
      method: 'POST',
      path: `/${this.#type}`,
      json: { q: query, num: this.topK },
      headers: { 'X-API-KEY': this.http.apiKey ?? '' },
      signal: options.signal,
    });
    if (!outcome.ok) return outcome;
    const body = outcome.data;
    if (!isPlainObject(body)) {
      return httpError({
        kind: 'malformed',
        message: `${this.name}: the answer is not a Serper search response; check baseURL.`,
      });
    }
    const key = this.#type === 'news' ? 'news' : 'organic';
    return { ...outcome, data: this.filter(parseSerper(body, key, this.topK)) };
  }
}
