import { ConfigurationError, ValidationError } from '../schema/errors';
import { isPlainObject } from '../utils/is';
import { type SplitTextOptions, splitText } from './split-text';
import type { Embedder, EmbeddingUsage, VectorMetadata, VectorRecord, VectorStore } from './types';

/** A document to ingest: `id` names it in the store (ingesting the same id again replaces it). */
export interface IngestDocument {
  id: string;
  text: string;
  /** Kept with each of its chunks; `source` is what a retrieval cites (by default the id). */
  metadata?: VectorMetadata | undefined;
}

/** Options of {@link ingest}. */
export interface IngestOptions extends Partial<Omit<SplitTextOptions, 'chunkTokens'>> {
  embedder: Embedder;
  store: VectorStore;
  /** @default 400 */
  chunkTokens?: number | undefined;
  /** @default 50, or an eighth of `chunkTokens` when that is less */
  overlapTokens?: number | undefined;
  namespace?: string | undefined;
  /**
   * Documents are embedded and written together until they hold this many chunks (a longer document is
   * written whole, in one upsert). @default 256
   */
  batchSize?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Told the usage of each embedding request. */
  onUsage?: ((usage: EmbeddingUsage) => void) | undefined;
}

/** What {@link ingest} did. */
export interface IngestResult {
  documents: number;
  chunks: number;
  /** Embedding tokens used. */
  tokens: number;
  /** Chunks of earlier versions of the documents that were removed. */
  removed: number;
}

/** The metadata ingest gives each chunk, besides the document's own. */
export interface ChunkMetadata {
  documentId: string;
  source: string;
  /** The chunk's position in its document, from 0. */
  chunk: number;
  /** Where the chunk lies in the document's text. */
  start: number;
  end: number;
  text: string;
}

/** The store id of a document's chunk. */
export function chunkId(documentId: string, chunk: number): string {
  return `${documentId}#${chunk}`;
}

function checkDocuments(documents: unknown): IngestDocument[] {
  if (!Array.isArray(documents))
    throw new ValidationError({ message: 'ingest takes an array of documents', field: 'documents' });
  const seen = new Set<string>();
  for (const [index, document] of (documents as unknown[]).entries()) {
    const where = `documents[${index}]`;
    if (!isPlainObject(document))
      throw new ValidationError({ message: `${where} must be an object`, field: where });
    const { id, text, metadata } = document as Partial<IngestDocument>;
    if (typeof id !== 'string' || id === '' || id.length > 400) {
      throw new ValidationError({
        message: `${where}.id must be a string of 1 to 400 characters`,
        field: `${where}.id`,
      });
    }
    if (seen.has(id))
      throw new ValidationError({
        message: `${where}.id ${JSON.stringify(id)} appears twice`,
        field: `${where}.id`,
      });
    seen.add(id);
    if (typeof text !== 'string' || text.trim() === '') {
      throw new ValidationError({
        message: `${where}.text must be a non-empty string`,
        field: `${where}.text`,
      });
    }
    if (metadata !== undefined && !isPlainObject(metadata)) {
      throw new ValidationError({
        message: `${where}.metadata must be a plain object`,
        field: `${where}.metadata`,
      });
    }
  }
  return documents as IngestDocument[];
}

/**
 * Splits documents into chunks ({@link splitText}), embeds them in batches and upserts them into the store,
 * each chunk with the document's metadata, its text, `source` (the document's `metadata.source`, else its id),
 * `documentId` and its place (`chunk`, `start`, `end`); ids are `<document id>#<chunk>`. Ingesting a document
 * again replaces its chunks, and then removes those of the old version beyond the new one's last. Every
 * document is checked and split before anything is embedded, and each is written whole in one upsert: a
 * failure leaves a document as it was or with all its new chunks (at worst, after a crash right after the
 * upsert, with its old version's last chunks still there until it is ingested again).
 *
 * @example
 * await ingest([{ id: 'manual', text, metadata: { source: 'manual.pdf' } }], { embedder, store });
 */
export async function ingest(
  documents: readonly IngestDocument[],
  options: IngestOptions,
): Promise<IngestResult> {
  const { embedder, store } = options ?? ({} as IngestOptions);
  if (typeof embedder?.embed !== 'function' || typeof store?.upsert !== 'function') {
    throw new ConfigurationError({ message: 'ingest needs an embedder and a store' });
  }
  if (embedder.dimensions !== store.dimensions) {
    throw new ConfigurationError({
      message: `ingest: the embedder gives vectors of ${embedder.dimensions} dimensions, but the store holds ${store.dimensions}`,
    });
  }
  const checked = checkDocuments(documents);
  const chunkTokens = options.chunkTokens ?? 400;
  const split = {
    chunkTokens,
    overlapTokens: options.overlapTokens ?? Math.min(50, Math.floor(chunkTokens / 8)),
    separators: options.separators,
    countTokens: options.countTokens,
  };
  const batchSize = options.batchSize ?? 256;
  const namespace = options.namespace === undefined ? undefined : { namespace: options.namespace };
  // Split everything first: a document that cannot be split stops the ingestion before anything is written.
  const chunked = checked.map((document) => ({ document, chunks: splitText(document.text, split) }));
  const result: IngestResult = { documents: checked.length, chunks: 0, tokens: 0, removed: 0 };
  // Whole documents are embedded, then written in one upsert (which every store applies all or nothing):
  // a failure leaves each document as it was or wholly replaced, never its chunks of two versions mixed.
  let pending: { record: Omit<VectorRecord, 'vector'>; text: string }[] = [];
  let pendingDocuments: { id: string; chunks: number }[] = [];
  const flush = async () => {
    if (pendingDocuments.length === 0) return;
    const batch = pending;
    const written = pendingDocuments;
    pending = [];
    pendingDocuments = [];
    options.signal?.throwIfAborted();
    if (batch.length > 0) {
      const vectors = await embedder.embed(
        batch.map((item) => item.text),
        {
          signal: options.signal,
          onUsage: (usage) => {
            result.tokens += usage.tokens;
            options.onUsage?.(usage);
          },
        },
      );
      await store.upsert(
        batch.map((item, index) => ({ ...item.record, vector: vectors[index]! })),
        namespace,
      );
      result.chunks += batch.length;
    }
    for (const document of written) {
      result.removed += await removeStale(store, document.id, document.chunks, namespace);
    }
  };
  for (const { document, chunks } of chunked) {
    const source = typeof document.metadata?.source === 'string' ? document.metadata.source : document.id;
    for (const [index, chunk] of chunks.entries()) {
      const metadata: ChunkMetadata = {
        documentId: document.id,
        source,
        chunk: index,
        start: chunk.start,
        end: chunk.end,
        text: chunk.text,
      };
      pending.push({
        record: { id: chunkId(document.id, index), metadata: { ...document.metadata, ...metadata } },
        text: chunk.text,
      });
    }
    pendingDocuments.push({ id: document.id, chunks: chunks.length });
    if (pending.length >= batchSize) await flush();
  }
  await flush();
  return result;
}

/** Removes the chunks of an earlier, longer version of a document: ids `<id>#<count>` onward, which are contiguous. */
async function removeStale(
  store: VectorStore,
  documentId: string,
  count: number,
  namespace: { namespace: string } | undefined,
): Promise<number> {
  const step = 64;
  let removed = 0;
  for (let from = count; ; from += step) {
    const ids = Array.from({ length: step }, (_, offset) => chunkId(documentId, from + offset));
    const deleted = await store.delete(ids, namespace);
    removed += deleted;
    if (deleted < step) return removed;
  }
}
