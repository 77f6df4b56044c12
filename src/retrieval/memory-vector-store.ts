import { StoreError } from '../schema/errors';
import { type DotKernel, dotKernel, wasmMemory } from './dot-kernel';
import { topK } from './top-k';
import type {
  CountOptions,
  DeleteTarget,
  FieldTypes,
  FieldValue,
  NamespaceOptions,
  QueryOptions,
  VectorMatch,
  VectorMetadata,
  VectorRecord,
  VectorStore,
} from './types';
import {
  checkDeleteTarget,
  checkDimensions,
  checkFields,
  checkFilter,
  checkTopK,
  closedError,
  matches,
  namespaceOf,
  type PreparedRecord,
  prepareRecords,
  unitVector,
} from './vectors';

/** Options of {@link MemoryVectorStore}. */
export interface MemoryVectorStoreOptions {
  /** The length of every vector. */
  dimensions: number;
  /** Metadata fields filters may name, with their types, e.g. `{ source: 'string' }`. */
  fields?: FieldTypes | undefined;
}

const PAGE = 65_536;

/**
 * One namespace's vectors: unit-length rows of float32, padded to a multiple of four, in a WebAssembly
 * memory the dot-product kernel reads. The query is written at offset 0, the rows follow, and a query's
 * scratch (row indices, scores) lies past the last row. A deleted row is replaced by the last one, so the
 * rows stay contiguous.
 */
class Matrix {
  readonly #memory = wasmMemory();
  readonly #kernel: DotKernel;
  readonly #dims4: number;
  readonly #rowFloats: number;
  readonly #rowBytes: number;
  #floats: Float32Array;
  ids: string[] = [];
  metadata: VectorMetadata[] = [];
  readonly rowOf = new Map<string, number>();

  constructor(dimensions: number) {
    this.#dims4 = Math.ceil(dimensions / 4);
    this.#rowFloats = this.#dims4 * 4;
    this.#rowBytes = this.#rowFloats * 4;
    this.#kernel = dotKernel(this.#memory);
    this.#floats = new Float32Array(this.#memory.buffer);
  }

  get count(): number {
    return this.ids.length;
  }

  /** Grows the memory to at least `bytes`; nothing else changes, so a failure here leaves the rows as they were. */
  #reserve(bytes: number, namespace: string): void {
    const missing = bytes - this.#memory.buffer.byteLength;
    if (missing <= 0) return;
    // Grow by at least half again, so appends cost amortized constant time.
    const pages = Math.max(Math.ceil(missing / PAGE), Math.ceil(this.#memory.buffer.byteLength / PAGE / 2));
    try {
      this.#memory.grow(pages);
    } catch {
      try {
        this.#memory.grow(Math.ceil(missing / PAGE));
      } catch (error) {
        throw new StoreError({
          message: `MemoryVectorStore: namespace ${namespace} cannot hold ${Math.floor(bytes / this.#rowBytes)} vectors in memory (a WebAssembly memory holds at most 4 GiB); use an on-disk store`,
          store: 'MemoryVectorStore',
          operation: 'upsert',
          cause: error,
        });
      }
    }
    this.#floats = new Float32Array(this.#memory.buffer);
  }

  upsert(records: readonly PreparedRecord[], namespace: string): void {
    let added = 0;
    for (const record of records) if (!this.rowOf.has(record.id)) added++;
    this.#reserve((1 + this.count + added) * this.#rowBytes, namespace);
    for (const record of records) {
      let row = this.rowOf.get(record.id);
      if (row === undefined) {
        row = this.ids.length;
        this.ids.push(record.id);
        this.metadata.push(record.metadata);
        this.rowOf.set(record.id, row);
      } else this.metadata[row] = record.metadata;
      const start = (1 + row) * this.#rowFloats;
      this.#floats.set(record.vector, start);
      this.#floats.fill(0, start + record.vector.length, start + this.#rowFloats);
    }
  }

  remove(id: string): boolean {
    const row = this.rowOf.get(id);
    if (row === undefined) return false;
    const last = this.ids.length - 1;
    if (row !== last) {
      const lastId = this.ids[last]!;
      this.#floats.copyWithin(
        (1 + row) * this.#rowFloats,
        (1 + last) * this.#rowFloats,
        (2 + last) * this.#rowFloats,
      );
      this.ids[row] = lastId;
      this.metadata[row] = this.metadata[last]!;
      this.rowOf.set(lastId, row);
    }
    this.ids.pop();
    this.metadata.pop();
    this.rowOf.delete(id);
    return true;
  }

  /** The rows matching the filter (all rows for none). */
  rowsMatching(filter: readonly [string, FieldValue][]): number[] | undefined {
    if (filter.length === 0) return undefined;
    const rows: number[] = [];
    for (let row = 0; row < this.metadata.length; row++)
      if (matches(this.metadata[row]!, filter)) rows.push(row);
    return rows;
  }

  query(vector: Float32Array, k: number, filter: readonly [string, FieldValue][], namespace: string) {
    const rows = this.rowsMatching(filter);
    const count = rows === undefined ? this.count : rows.length;
    if (count === 0) return [];
    const rowsEnd = (1 + this.count) * this.#rowBytes;
    this.#reserve(rowsEnd + count * 8, namespace);
    this.#floats.set(vector, 0);
    this.#floats.fill(0, vector.length, this.#rowFloats);
    const out = rowsEnd;
    if (rows === undefined) this.#kernel.scores(0, this.#rowBytes, count, this.#dims4, out);
    else {
      const indices = out + count * 4;
      new Uint32Array(this.#memory.buffer, indices, count).set(rows);
      this.#kernel.scoresAt(0, this.#rowBytes, indices, count, this.#dims4, out);
    }
    const scores = new Float32Array(this.#memory.buffer, out, count);
    const result: VectorMatch[] = [];
    for (const position of topK(scores, count, k)) {
      const row = rows === undefined ? position : rows[position]!;
      result.push({
        id: this.ids[row]!,
        score: Math.max(-1, Math.min(1, scores[position]!)),
        metadata: structuredClone(this.metadata[row]!),
      });
    }
    return result;
  }
}

/**
 * Vectors in this process's memory, searched exactly (every vector compared, with a WebAssembly SIMD kernel:
 * a few milliseconds for 100,000 vectors of 384 dimensions). Each namespace holds up to 4 GiB of vectors.
 * Nothing is kept when the process ends: for that, use `SQLiteVectorStore` or `LanceVectorStore`.
 *
 * @example
 * const store = new MemoryVectorStore({ dimensions: 384, fields: { source: 'string' } });
 * await store.upsert([{ id: 'a', vector, metadata: { source: 'faq.md' } }]);
 * await store.query(vector, { topK: 3 }); // [{ id: 'a', score: 1, metadata: { source: 'faq.md' } }]
 */
export class MemoryVectorStore implements VectorStore {
  readonly dimensions: number;
  readonly fields: FieldTypes;
  readonly #namespaces = new Map<string, Matrix>();
  #closed = false;

  constructor(options: MemoryVectorStoreOptions) {
    this.dimensions = checkDimensions(options?.dimensions, 'MemoryVectorStore');
    this.fields = checkFields(options.fields, 'MemoryVectorStore');
  }

  #open(): void {
    if (this.#closed) throw closedError('MemoryVectorStore');
  }

  async upsert(records: readonly VectorRecord[], options?: NamespaceOptions): Promise<void> {
    this.#open();
    const namespace = namespaceOf(options);
    const prepared = prepareRecords(records, this.dimensions, this.fields);
    if (prepared.length === 0) return;
    let matrix = this.#namespaces.get(namespace);
    const created = matrix === undefined;
    matrix ??= new Matrix(this.dimensions);
    matrix.upsert(prepared, namespace);
    if (created) this.#namespaces.set(namespace, matrix);
  }

  async query(vector: readonly number[] | Float32Array, options: QueryOptions): Promise<VectorMatch[]> {
    this.#open();
    const namespace = namespaceOf(options);
    const k = checkTopK(options?.topK);
    const filter = checkFilter(options.filter, this.fields);
    const unit = unitVector(vector, this.dimensions, 'vector');
    return this.#namespaces.get(namespace)?.query(unit, k, filter, namespace) ?? [];
  }

  async delete(target: DeleteTarget, options?: NamespaceOptions): Promise<number> {
    this.#open();
    const namespace = namespaceOf(options);
    const checked = checkDeleteTarget(target, this.fields);
    const matrix = this.#namespaces.get(namespace);
    if (matrix === undefined) return 0;
    const ids =
      'ids' in checked
        ? checked.ids
        : (matrix.rowsMatching(checked.filter)?.map((row) => matrix.ids[row]!) ?? [...matrix.ids]);
    let removed = 0;
    for (const id of ids) if (matrix.remove(id)) removed++;
    // A WebAssembly memory cannot shrink: an emptied namespace gives its memory back by going away.
    if (matrix.count === 0) this.#namespaces.delete(namespace);
    return removed;
  }

  async count(options?: CountOptions): Promise<number> {
    this.#open();
    const namespace = namespaceOf(options);
    const filter = checkFilter(options?.filter, this.fields);
    const matrix = this.#namespaces.get(namespace);
    if (matrix === undefined) return 0;
    return matrix.rowsMatching(filter)?.length ?? matrix.count;
  }

  async namespaces(): Promise<string[]> {
    this.#open();
    return [...this.#namespaces.keys()].sort();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#namespaces.clear();
  }
}
