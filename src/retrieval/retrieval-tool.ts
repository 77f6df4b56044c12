import { z } from 'zod';
import { type AsyncTool, asyncTool } from '../actions/tool';
import type { ToolContext } from '../actions/types';
import { ConfigurationError } from '../schema/errors';
import type { Embedder, MetadataFilter, VectorMatch, VectorStore } from './types';

/** Options of {@link retrievalTool}. */
export interface RetrievalToolOptions {
  embedder: Embedder;
  store: VectorStore;
  /** Passages per search. @default 5 */
  topK?: number | undefined;
  /** The namespace searched, or a function of the call (e.g. one namespace per session or user). */
  namespace?: string | ((context: ToolContext) => string) | undefined;
  /** Only chunks whose declared fields equal these values. */
  filter?: MetadataFilter | undefined;
  /** @default 'search_documents' */
  name?: string | undefined;
  /** What the model is told the tool searches. @default 'Searches the documents for passages relevant to a query.' */
  description?: string | undefined;
  /** The longest passage text shown, in characters (longer ones are cut with `…`). @default 2000 */
  maxPassageCharacters?: number | undefined;
}

const parameters = z.object({
  query: z.string().trim().min(1).max(2000).describe('What to look for, in a sentence or a few key words'),
});

/** How one match reads to the model: a number to cite it by, its source and place, and its text. */
function passage(match: VectorMatch, position: number, max: number): string {
  const metadata = match.metadata;
  const source = typeof metadata.source === 'string' ? metadata.source : match.id;
  const place = typeof metadata.chunk === 'number' ? `, chunk ${metadata.chunk}` : '';
  const raw = typeof metadata.text === 'string' ? metadata.text : '';
  const text = raw.length > max ? `${raw.slice(0, max)}…` : raw;
  return `[${position + 1}] ${source}${place} (score ${match.score.toFixed(2)})\n${text}`;
}

/**
 * A tool the model calls to search documents ingested with {@link ingest}: it embeds the model's query, takes
 * the `topK` nearest chunks from the store, and answers with each passage numbered and labelled with its
 * source, so the model can cite them (`[2] manual.pdf, chunk 14`).
 *
 * @example
 * const agent = new AsyncFunctionCallingAgent({ llm, tools: [retrievalTool({ embedder, store, topK: 4 })] });
 */
export function retrievalTool(options: RetrievalToolOptions): AsyncTool<typeof parameters> {
  const { embedder, store } = options ?? ({} as RetrievalToolOptions);
  if (typeof embedder?.embed !== 'function' || typeof store?.query !== 'function') {
    throw new ConfigurationError({ message: 'retrievalTool needs an embedder and a store' });
  }
  if (embedder.dimensions !== store.dimensions) {
    throw new ConfigurationError({
      message: `retrievalTool: the embedder gives vectors of ${embedder.dimensions} dimensions, but the store holds ${store.dimensions}`,
    });
  }
  const topK = options.topK ?? 5;
  const max = options.maxPassageCharacters ?? 2000;
  return asyncTool({
    name: options.name ?? 'search_documents',
    description:
      options.description ??
      'Searches the documents for passages relevant to a query. Cite the passages you use by their number and source.',
    parameters,
    retrySafe: true,
    run: async ({ query }, context) => {
      const [vector] = await embedder.embed([query], { signal: context.signal });
      const namespace =
        typeof options.namespace === 'function' ? options.namespace(context) : options.namespace;
      const matches = await store.query(vector!, { topK, filter: options.filter, namespace });
      if (matches.length === 0) return `No passages found for "${query}".`;
      return matches.map((match, position) => passage(match, position, max)).join('\n\n');
    },
  });
}
