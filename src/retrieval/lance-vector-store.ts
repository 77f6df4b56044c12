import { ConfigurationError, StoreError } from '../schema/errors';
import { errorMessage } from '../utils/text';
import { requirePeer } from './load-peer';
import type {
  CountOptions,
  DeleteTarget,
  FieldTypes,
  FieldValue,
  NamespaceOptions,
  QueryOptions,
  VectorMatch,
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
  namespaceOf,
  prepareRecords,
  unitVector,
} from './vectors';

/** Options of {@link LanceVectorStore}. */
export interface LanceVectorStoreOptions {
  /** The database directory (created when missing). */
  path: string;
  /** The length of every vector; a table that holds vectors of another length is refused. */
  dimensions: number;
  /** Metadata fields filters may name; an existing table must have been created with the same ones. */
  fields?: FieldTypes | undefined;
  /** The table's name: letters, digits and `_`. @default 'lagent_vectors' */
  table?: string | undefined;
}

/** Options of {@link LanceVectorStore.createIndex}. */
export interface LanceIndexOptions {
  /** IVF partitions. @default the square root of the row count */
  partitions?: number | undefined;
  /** PQ sub-vectors (must divide the dimensions). @default dimensions / 8 when that divides, else dimensions / 4 */
  subVectors?: number | undefined;
  /** k-means iterations while training. @default 20 */
  maxIterations?: number | undefined;
  /** Training vectors per partition. @default 64 */
  sampleRate?: number | undefined;
}

/** The slices of `@lancedb/lancedb` and `apache-arrow` the store uses. */
interface LanceTable {
  schema(): Promise<{ fields: { name: string; type: { listSize?: number } }[] }>;
  countRows(filter?: string): Promise<number>;
  delete(predicate: string): Promise<{ numDeletedRows: number }>;
  mergeInsert(on: string | string[]): {
    whenMatchedUpdateAll(): { whenNotMatchedInsertAll(): { execute(data: unknown): Promise<unknown> } };
  };
  vectorSearch(vector: number[]): LanceQuery;
  query(): LanceQuery;
  createIndex(column: string, options: { config: unknown; replace?: boolean }): Promise<void>;
  checkoutLatest(): Promise<void>;
  close(): void;
}
interface LanceQuery {
  distanceType(type: string): LanceQuery;
  where(predicate: string): LanceQuery;
  select(columns: string[]): LanceQuery;
  limit(limit: number): LanceQuery;
  nprobes(count: number): LanceQuery;
  refineFactor(factor: number): LanceQuery;
  toArray(): Promise<Record<string, unknown>[]>;
}
interface LanceConnection {
  tableNames(): Promise<string[]>;
  openTable(name: string): Promise<LanceTable>;
  createEmptyTable(name: string, schema: unknown, options?: { existOk?: boolean }): Promise<LanceTable>;
  close(): void;
}
interface LanceModule {
  connect(uri: string): Promise<LanceConnection>;
  makeArrowTable(rows: Record<string, unknown>[], options: { schema: unknown }): unknown;
  Index: { ivfPq(options: Record<string, unknown>): unknown };
}
type ArrowType = object;
interface ArrowModule {
  Schema: new (fields: unknown[]) => unknown;
  Field: new (name: string, type: ArrowType, nullable: boolean) => unknown;
  Utf8: new () => ArrowType;
  Float64: new () => ArrowType;
  Float32: new () => ArrowType;
  Int8: new () => ArrowType;
  FixedSizeList: new (size: number, child: unknown) => ArrowType;
}

/** The open table, its schema (rows are converted with it: a column of nulls has no type of its own) and the module. */
interface OpenTable {
  connection: LanceConnection;
  table: LanceTable;
  schema: unknown;
  lance: LanceModule;
}

const FEATURE = 'LanceVectorStore';
const PEERS = ['@lancedb/lancedb', 'apache-arrow'];

const column = (field: string) => `f_${field}`;

/** A value as a LanceDB SQL literal (strings quoted, quotes doubled). */
function literal(value: FieldValue): string {
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
  if (typeof value === 'boolean') return value ? '1' : '0';
  return String(value);
}

function predicate(namespace: string, filter: readonly [string, FieldValue][]): string {
  return [
    `namespace = ${literal(namespace)}`,
    ...filter.map(([name, value]) => `\`${column(name)}\` = ${literal(value)}`),
  ].join(' AND ');
}

/**
 * Vectors on disk with LanceDB (install `@lancedb/lancedb` and `apache-arrow`): a columnar table in a
 * directory that holds millions of vectors without loading them, with the records' metadata and declared
 * fields as columns. Queries are exact scans restricted by the namespace and filter first, until
 * {@link LanceVectorStore.createIndex} builds an IVF-PQ index (approximate, refined with exact distances);
 * rows added after it are still searched exactly. Each upsert (a merge on namespace and id) and delete is one
 * atomic commit of a new table version, so a crash leaves the table as it was before or after it, and
 * several processes may read and write the directory.
 *
 * @example
 * const store = new LanceVectorStore({ path: './vectors.lance', dimensions: 384, fields: { source: 'string' } });
 */
export class LanceVectorStore implements VectorStore {
  readonly dimensions: number;
  readonly fields: FieldTypes;
  readonly path: string;
  readonly #tableName: string;
  #opening: Promise<OpenTable> | undefined;
  #closed = false;

  constructor(options: LanceVectorStoreOptions) {
    this.dimensions = checkDimensions(options?.dimensions, FEATURE);
    this.fields = checkFields(options.fields, FEATURE);
    if (typeof options.path !== 'string' || options.path === '') {
      throw new ConfigurationError({ message: `${FEATURE} needs a path (a directory)` });
    }
    const table = options.table ?? 'lagent_vectors';
    if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(table)) {
      throw new ConfigurationError({
        message: `${FEATURE}: table must be letters, digits and _ (not starting with a digit, at most 64), got ${JSON.stringify(table)}`,
      });
    }
    this.path = options.path;
    this.#tableName = table;
    // The peers are loaded now, so a missing one is said at once rather than at the first call.
    requirePeer<LanceModule>('@lancedb/lancedb', PEERS, FEATURE);
    requirePeer<ArrowModule>('apache-arrow', PEERS, FEATURE);
  }

  #table(): Promise<OpenTable> {
    if (this.#closed) return Promise.reject(closedError(FEATURE));
    this.#opening ??= this.#open().catch((error: unknown) => {
      this.#opening = undefined;
      throw error;
    });
    return this.#opening;
  }

  async #open(): Promise<OpenTable> {
    const lance = requirePeer<LanceModule>('@lancedb/lancedb', PEERS, FEATURE);
    const arrow = requirePeer<ArrowModule>('apache-arrow', PEERS, FEATURE);
    let connection: LanceConnection;
    let table: LanceTable;
    try {
      connection = await lance.connect(this.path);
      const schema = new arrow.Schema([
        new arrow.Field('namespace', new arrow.Utf8(), false),
        new arrow.Field('id', new arrow.Utf8(), false),
        new arrow.Field(
          'vector',
          new arrow.FixedSizeList(this.dimensions, new arrow.Field('item', new arrow.Float32(), true)),
          false,
        ),
        new arrow.Field('metadata', new arrow.Utf8(), false),
        ...Object.entries(this.fields).map(
          ([name, type]) =>
            new arrow.Field(
              column(name),
              // Booleans are kept as 0 and 1: apache-arrow cannot build a boolean column holding nulls.
              type === 'string'
                ? new arrow.Utf8()
                : type === 'number'
                  ? new arrow.Float64()
                  : new arrow.Int8(),
              true,
            ),
        ),
      ]);
      table = (await connection.tableNames()).includes(this.#tableName)
        ? await connection.openTable(this.#tableName)
        : await connection.createEmptyTable(this.#tableName, schema, { existOk: true });
    } catch (error) {
      throw this.#error('open', error);
    }
    const tableSchema = await table.schema();
    const existing = tableSchema.fields;
    const vector = existing.find((field) => field.name === 'vector');
    if (vector?.type.listSize !== this.dimensions) {
      table.close();
      throw new ConfigurationError({
        message: `${FEATURE}: the table ${this.#tableName} in ${this.path} holds vectors of ${vector?.type.listSize} dimensions, not ${this.dimensions}; use another table or directory`,
      });
    }
    const stored = existing
      .filter((field) => field.name.startsWith('f_'))
      .map((field) => field.name.slice(2));
    const declared = Object.keys(this.fields);
    if (stored.length !== declared.length || declared.some((name) => !stored.includes(name))) {
      table.close();
      throw new ConfigurationError({
        message: `${FEATURE}: the table ${this.#tableName} in ${this.path} was created with the fields [${stored.join(', ')}], not [${declared.join(', ')}]; open it with the same fields, or use another table`,
      });
    }
    return { connection, table, schema: tableSchema, lance };
  }

  #error(operation: string, error: unknown): StoreError {
    return new StoreError({
      message: `${FEATURE} ${operation} failed (${this.path}): ${errorMessage(error)}`,
      store: FEATURE,
      operation,
      cause: error,
    });
  }

  async upsert(records: readonly VectorRecord[], options?: NamespaceOptions): Promise<void> {
    const namespace = namespaceOf(options);
    const prepared = prepareRecords(records, this.dimensions, this.fields);
    if (prepared.length === 0) return;
    const { table, schema, lance } = await this.#table();
    const rows = prepared.map((record) => {
      const row: Record<string, unknown> = {
        namespace,
        id: record.id,
        vector: Array.from(record.vector),
        metadata: record.json,
      };
      for (const name of Object.keys(this.fields)) {
        const value = record.metadata[name] ?? null;
        row[column(name)] = typeof value === 'boolean' ? Number(value) : value;
      }
      return row;
    });
    try {
      await table
        .mergeInsert(['namespace', 'id'])
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute(lance.makeArrowTable(rows, { schema }));
    } catch (error) {
      throw this.#error('upsert', error);
    }
  }

  async query(vector: readonly number[] | Float32Array, options: QueryOptions): Promise<VectorMatch[]> {
    const namespace = namespaceOf(options);
    const k = checkTopK(options?.topK);
    const filter = checkFilter(options.filter, this.fields);
    const unit = unitVector(vector, this.dimensions, 'vector');
    const { table } = await this.#table();
    let rows: Record<string, unknown>[];
    try {
      await table.checkoutLatest();
      // With an index: look at 20 partitions and re-rank 10 × topK candidates exactly (no effect on a scan).
      rows = await table
        .vectorSearch(Array.from(unit))
        .distanceType('cosine')
        .where(predicate(namespace, filter))
        .select(['id', 'metadata', '_distance'])
        .limit(k)
        .nprobes(20)
        .refineFactor(10)
        .toArray();
    } catch (error) {
      throw this.#error('query', error);
    }
    return rows.map((row) => ({
      id: String(row.id),
      score: Math.max(-1, Math.min(1, 1 - Number(row._distance))),
      metadata: JSON.parse(String(row.metadata)) as Record<string, unknown>,
    }));
  }

  async delete(target: DeleteTarget, options?: NamespaceOptions): Promise<number> {
    const namespace = namespaceOf(options);
    const checked = checkDeleteTarget(target, this.fields);
    if ('ids' in checked && checked.ids.length === 0) return 0;
    const { table } = await this.#table();
    const where =
      'ids' in checked
        ? `${predicate(namespace, [])} AND id IN (${checked.ids.map(literal).join(', ')})`
        : predicate(namespace, checked.filter);
    try {
      return (await table.delete(where)).numDeletedRows;
    } catch (error) {
      throw this.#error('delete', error);
    }
  }

  async count(options?: CountOptions): Promise<number> {
    const namespace = namespaceOf(options);
    const filter = checkFilter(options?.filter, this.fields);
    const { table } = await this.#table();
    try {
      await table.checkoutLatest();
      return await table.countRows(predicate(namespace, filter));
    } catch (error) {
      throw this.#error('count', error);
    }
  }

  async namespaces(): Promise<string[]> {
    const { table } = await this.#table();
    try {
      await table.checkoutLatest();
      const rows = await table.query().select(['namespace']).toArray();
      return [...new Set(rows.map((row) => String(row.namespace)))].sort();
    } catch (error) {
      throw this.#error('namespaces', error);
    }
  }

  /**
   * Builds an IVF-PQ index on the vectors (replacing an earlier one): queries then look at the partitions
   * nearest the query and refine the candidates with exact distances, instead of scanning every vector. Build
   * it once a table holds many vectors (tens of thousands or more); it needs at least 256 rows.
   */
  async createIndex(options: LanceIndexOptions = {}): Promise<void> {
    const { table, lance } = await this.#table();
    const rows = await table.countRows();
    const subVectors =
      options.subVectors ??
      (this.dimensions % 8 === 0 ? this.dimensions / 8 : this.dimensions % 4 === 0 ? this.dimensions / 4 : 1);
    try {
      await table.createIndex('vector', {
        config: lance.Index.ivfPq({
          distanceType: 'cosine',
          numPartitions: options.partitions ?? Math.max(1, Math.round(Math.sqrt(rows))),
          numSubVectors: subVectors,
          maxIterations: options.maxIterations ?? 20,
          sampleRate: options.sampleRate ?? 64,
        }),
        replace: true,
      });
    } catch (error) {
      throw this.#error('createIndex', error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const opening = this.#opening;
    this.#opening = undefined;
    if (opening === undefined) return;
    try {
      const { connection, table } = await opening;
      table.close();
      connection.close();
    } catch {
      // It never opened: nothing to release.
    }
  }
}
