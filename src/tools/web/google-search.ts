import { z } from 'zod';
import { AsyncBaseAction } from '../../actions/base-action';
import type { ToolContext } from '../../actions/types';
import { ActionReturn } from '../../schema/action-return';
import { isPlainObject } from '../../utils/is';
import { BridgedTool } from '../bridged-tool';
import { checkToolCompat } from '../compat';
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
  /** How many organic results are read when a call gives no `k`. @default 10 (Lagent's) */
  topK?: number | undefined;
  /**
   * `'lagent'`: the tool describes itself in Lagent's words (its Chinese description, `query` and `k`), so a
   * prompt listing it is Lagent's byte for byte.
   */
  compat?: 'lagent' | undefined;
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

const runParameters = z.object({
  query: z.string().min(1).describe('The search query'),
  k: z.number().int().min(1).max(100).optional().describe('How many results to read (default 10)'),
});

/** Lagent's GoogleSearch.run, as its docstring and signature describe it. */
const LAGENT_DESCRIPTION =
  '一个可以从谷歌搜索结果的API。当你需要对于一个特定问题找到简短明了的回答时，可以使用它。输入应该是一个搜索查询。';
const lagentParameters = z.object({
  query: z.string().min(1).describe('the search content'),
  k: z
    .number()
    .int()
    .min(1)
    .max(100)
    .optional()
    .describe('select first k results in the search results as response'),
});

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
    const lagent = checkToolCompat('GoogleSearch', options.compat);
    super({
      name: options.name ?? (lagent ? 'AsyncGoogleSearch' : 'GoogleSearch'),
      description: options.description ?? (lagent ? LAGENT_DESCRIPTION : DESCRIPTION),
      apis: lagent
        ? {
            run: {
              description: options.description ?? LAGENT_DESCRIPTION,
              parameters: lagentParameters,
              run: (args: z.output<typeof lagentParameters>, context: ToolContext) =>
                this!.run(args, context),
            },
          }
        : undefined,
    });
    this.topK = options.topK ?? 10;
    this.#client = serviceClient(options, SETUP);
  }

  async run({ query, k }: z.output<typeof runParameters>, context: ToolContext): Promise<ActionReturn> {
    const client = this.#client;
    const topK = k ?? this.topK;
    const outcome = await client.json({
      method: 'POST',
      path: '/search',
      headers: { 'X-API-KEY': client.apiKey ?? '' },
      json: topK > SERPER_PAGE ? { q: query, num: topK } : { q: query },
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
      result: [{ type: 'text', content: JSON.stringify(parseSerperResults(body, topK)) }],
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
    const lagent = checkToolCompat('GoogleSearch', options.compat);
    const description = options.description ?? (lagent ? LAGENT_DESCRIPTION : DESCRIPTION);
    super({
      exportName: 'AsyncGoogleSearch',
      apis: lagent ? { run: { description, parameters: lagentParameters } } : AsyncGoogleSearch.toolApis,
      options: bridgedOptions(options, SETUP.environmentVariable),
      callTimeout: bridgedCallTimeout(options),
      name: options.name ?? 'GoogleSearch',
      description,
    });
  }
}
