/**
 * The contracts of lagent-ts/retrieval: what an embedder and a vector store promise, so that the document
 * tools here (and the memory features that build on them) work over any of them.
 */

/** Tokens an embedding request used, as the server reported it (else estimated: about four characters a token). */
export interface EmbeddingUsage {
  tokens: number;
}

/** Options of one {@link Embedder.embed} call. */
export interface EmbedOptions {
  /** Cancels the call: pending requests are aborted and the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Told the usage of each request as it completes (a call of many texts sends several requests), e.g. to
   * count embeddings against a budget.
   */
  onUsage?: ((usage: EmbeddingUsage) => void) | undefined;
}

/**
 * Turns texts into vectors of `dimensions` numbers, one per text and in the same order; texts that mean the
 * same are near each other. Implementations batch large inputs, retry what can be retried, and refuse empty
 * texts with a `ValidationError` before sending anything.
 *
 * @example
 * const [vector] = await embedder.embed(['What is the capital of France?']);
 */
export interface Embedder {
  /** The length of every vector `embed` returns. */
  readonly dimensions: number;
  embed(texts: readonly string[], options?: EmbedOptions): Promise<number[][]>;
}

/** A metadata value a filter can match: text, a number or a boolean. */
export type FieldValue = string | number | boolean;

/**
 * The type of a metadata field a store can filter on. Values of other fields are kept and returned, but a
 * filter may only name declared fields.
 */
export type FieldType = 'string' | 'number' | 'boolean';

/** Metadata fields a store filters on, by name, e.g. `{ source: 'string', page: 'number' }`. */
export type FieldTypes = Readonly<Record<string, FieldType>>;

/** A JSON object kept with a vector. */
export type VectorMetadata = Record<string, unknown>;

/** One vector to store: `id` is unique in its namespace, and upserting it again replaces it. */
export interface VectorRecord {
  id: string;
  vector: readonly number[] | Float32Array;
  metadata?: VectorMetadata | undefined;
}

/** One result of {@link VectorStore.query}. */
export interface VectorMatch {
  id: string;
  /** Cosine similarity to the query, from -1 to 1: higher is nearer. */
  score: number;
  metadata: VectorMetadata;
}

/** Equality on declared metadata fields: every field given must equal its value. */
export type MetadataFilter = Readonly<Record<string, FieldValue>>;

/** Where an operation applies. */
export interface NamespaceOptions {
  /**
   * The namespace, e.g. one per user: records of different namespaces never meet. Letters, digits and
   * `_ - . : @`, at most 128 characters.
   * @default 'default'
   */
  namespace?: string | undefined;
}

/** Options of {@link VectorStore.query}. */
export interface QueryOptions extends NamespaceOptions {
  /** How many matches at most. */
  topK: number;
  /** Only records whose declared fields equal these values. */
  filter?: MetadataFilter | undefined;
}

/** Options of {@link VectorStore.count}. */
export interface CountOptions extends NamespaceOptions {
  filter?: MetadataFilter | undefined;
}

/** What {@link VectorStore.delete} removes: records by id, or every record matching a filter. */
export type DeleteTarget = readonly string[] | { filter: MetadataFilter };

/**
 * Vectors with metadata, searched by cosine similarity. Every implementation checks its input before writing
 * anything: a vector of another length than `dimensions`, a number that is not finite, an id that is not a
 * non-empty string, a declared field of the wrong type, or a filter on an undeclared field is a
 * `ValidationError`, and the whole batch is refused.
 *
 * @example
 * await store.upsert([{ id: 'a', vector, metadata: { source: 'manual.pdf' } }], { namespace: 'user-1' });
 * const matches = await store.query(queryVector, { topK: 5, filter: { source: 'manual.pdf' }, namespace: 'user-1' });
 */
export interface VectorStore {
  /** The length of every vector the store holds. */
  readonly dimensions: number;
  /** The metadata fields filters may name, with their types. */
  readonly fields: FieldTypes;
  /** Inserts the records, or replaces those whose id is already in the namespace. All or nothing. */
  upsert(records: readonly VectorRecord[], options?: NamespaceOptions): Promise<void>;
  /** The `topK` records nearest `vector`, nearest first. */
  query(vector: readonly number[] | Float32Array, options: QueryOptions): Promise<VectorMatch[]>;
  /** Removes records by id (ids not there are ignored) or by filter; resolves to how many were removed. */
  delete(target: DeleteTarget, options?: NamespaceOptions): Promise<number>;
  /** How many records the namespace holds (matching `filter`, when given). */
  count(options?: CountOptions): Promise<number>;
  /** The namespaces that hold at least one record. */
  namespaces(): Promise<string[]>;
  /** Releases the store's resources; further calls fail. */
  close(): Promise<void>;
}
