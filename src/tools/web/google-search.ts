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

/** Options of {@link AsyncGoogleSearch} and {@link GoogleSearch}. */
export interface GoogleSearchOptions extends ServiceToolOptions {
  /** Serper's API key. @default process.env.SERPER_API_KEY */
  apiKey?: string | undefined;
  /** @default 'https://google.serper.dev' */
  baseURL?: string | undefined;
  /** How many organic results are read. @default 3 */
  topK?: number | undefined;
}

const SETUP = {
  service: 'GoogleSearch',
  defaultBaseURL: 'https://google.serper.dev',
  environmentVariable: 'SERPER_API_KEY',
};
const DESCRIPTION =
  'Searches Google (through Serper) and returns short snippets; use it to find brief, direct answers to a specific question.';
const NO_RESULT = 'No good Google Search Result was found';
/** Serper returns ten organic results unless asked for more (which costs more). */
const SERPER_PAGE = 10;

const runParameters = z.object({ query: z.string().min(1).describe('The search query') });

/**
 * The snippets Lagent takes from a Serper answer: an answer box's answer alone when there is one; otherwise
 * the knowledge graph's facts followed by the first `topK` organic snippets and their attributes.
 */
export function parseSerperResults(results: Record<string, unknown>, topK: number): string[] {
  const answerBox = results.answerBox;
  if (isPlainObject(answerBox)) {
    const answer = stringOf(answerBox.answer);
    if (answer) return [answer];
    const snippet = stringOf(answerBox.snippet);
    if (snippet) return [snippet.replaceAll('\n', ' ')];
    const highlighted = arrayOf(answerBox.snippetHighlighted).filter((item) => typeof item === 'string');
    if (highlighted.length > 0) return highlighted;
  }
  const snippets: string[] = [];
  const graph = results.knowledgeGraph;
  if (isPlainObject(graph)) {
    const title = stringOf(graph.title) ?? '';
    const type = stringOf(graph.type);
    if (type) snippets.push(`${title}: ${type}.`);
    const description = stringOf(graph.description);
    if (description) snippets.push(description);
    if (isPlainObject(graph.attributes)) {
      for (const [attribute, value] of Object.entries(graph.attributes)) {
        snippets.push(`${title} ${attribute}: ${String(value)}.`);
      }
    }
  }
  for (const result of arrayOf(results.organic).slice(0, topK)) {
    if (!isPlainObject(result)) continue;
    const snippet = stringOf(result.snippet);
    if (snippet !== undefined) snippets.push(snippet);
    if (isPlainObject(result.attributes)) {
      for (const [attribute, value] of Object.entries(result.attributes))
        snippets.push(`${attribute}: ${String(value)}.`);
    }
  }
  return snippets.length > 0 ? snippets : [NO_RESULT];
}

/**
 * Lagent's GoogleSearch: a Google web search through Serper (`POST /search` with an `X-API-KEY` header). The
 * result is a JSON list of snippets, read as Lagent reads them (see {@link parseSerperResults}). Failures —
 * no key, a rejected key, rate limits, timeouts, an unreadable answer — come back as `HTTP_ERROR` /
 * `API_ERROR` with a sentence; 429 and 5xx are retried first, honouring `Retry-After`.
 *
 * @example
 * const search = new AsyncGoogleSearch({ apiKey: process.env.SERPER_API_KEY });
 * (await search.call({ query: 'capital of France' })).formatResult(); // '["Paris"]'
 */
export class AsyncGoogleSearch extends AsyncBaseAction {
  static override toolApis = {
    run: { description: DESCRIPTION, parameters: runParameters },
  };

  /** How many organic results are read. */
  readonly topK: number;
  readonly #client: HttpClient;

  constructor(options: GoogleSearchOptions = {}) {
    super({ name: options.name ?? 'GoogleSearch', description: options.description ?? DESCRIPTION });
    this.topK = options.topK ?? 3;
    this.#client = serviceClient(options, SETUP);
  }

  async run({ query }: z.output<typeof runParameters>, context: ToolContext): Promise<ActionReturn> {
    const client = this.#client;
    const outcome = await client.json({
      method: 'POST',
      path: '/search',
      headers: { 'X-API-KEY': client.apiKey ?? '' },
      json: this.topK > SERPER_PAGE ? { q: query, num: this.topK } : { q: query },
      signal: context.signal,
    });
    if (!outcome.ok) return outcome.failure.toActionReturn();
    const body = outcome.data;
    if (!isPlainObject(body) || (body.organic !== undefined && !Array.isArray(body.organic))) {
      return answerFailure(
        'malformed',
        `${this.name}: the answer does not look like Serper's search results; check baseURL.`,
      );
    }
    return new ActionReturn({
      result: [{ type: 'text', content: JSON.stringify(parseSerperResults(body, this.topK)) }],
    });
  }

  /** Nothing to release (each call is one request); present so the sync twin can close it. */
  close(): void {}
}

/**
 * The sync twin of {@link AsyncGoogleSearch}: the same API and results; each call blocks its thread (use the
 * async class inside servers).
 */
export class GoogleSearch extends BridgedTool {
  constructor(options: GoogleSearchOptions = {}) {
    super({
      exportName: 'AsyncGoogleSearch',
      apis: AsyncGoogleSearch.toolApis,
      options: bridgedOptions(options, SETUP.environmentVariable),
      callTimeout: bridgedCallTimeout(options),
      name: options.name ?? 'GoogleSearch',
      description: options.description ?? DESCRIPTION,
    });
  }
}
