// lagent-ts/retrieval: embeddings, vector stores and retrieval over documents. The stores' engines are
// optional peers, loaded when a store is made: sqlite-vec with better-sqlite3 (SQLiteVectorStore),
// @lancedb/lancedb with apache-arrow (LanceVectorStore), pg (PostgresVectorStore). The entry imports zod (for
// retrievalTool's parameters), as lagent-ts/tools does.
// HashEmbedder, the deterministic embedder for tests, is in lagent-ts/testing.

export { AISDKEmbedder, type AISDKEmbedderOptions, type AISDKEmbeddingModel } from './ai-sdk-embedder';
export {
  type ChunkMetadata,
  chunkId,
  type IngestDocument,
  type IngestOptions,
  type IngestResult,
  ingest,
} from './ingest';
export { type LanceIndexOptions, LanceVectorStore, type LanceVectorStoreOptions } from './lance-vector-store';
export { MemoryVectorStore, type MemoryVectorStoreOptions } from './memory-vector-store';
export { OpenAIEmbedder, type OpenAIEmbedderOptions } from './openai-embedder';
export { PostgresVectorStore, type PostgresVectorStoreOptions } from './postgres-vector-store';
export { type RetrievalToolOptions, retrievalTool } from './retrieval-tool';
export { type SplitTextOptions, splitText, type TextChunk } from './split-text';
export { SQLiteVectorStore, type SQLiteVectorStoreOptions } from './sqlite-vector-store';
export type {
  CountOptions,
  DeleteTarget,
  Embedder,
  EmbeddingUsage,
  EmbedOptions,
  FieldType,
  FieldTypes,
  FieldValue,
  MetadataFilter,
  NamespaceOptions,
  QueryOptions,
  VectorMatch,
  VectorMetadata,
  VectorRecord,
  VectorStore,
} from './types';
