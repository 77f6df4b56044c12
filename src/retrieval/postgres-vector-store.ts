import type { Pool } from 'pg';
import { ConfigurationError, missingPeer, StoreError } from '../schema/errors';
import { errorMessage } from '../utils/text';
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

/** Options of {@link PostgresVectorStore}: a server to connect to, or a pool the caller owns. */
export type PostgresVectorStoreOptions = {
  /** The length of every vector; a table of vectors of another length is refused. */
  dimensions: number;
  /** Metadata fields filters may name; a field the table lacks is added (and filled from the metadata). */
  fields?: FieldTypes | undefined;
  /** The table's name (letters, digits and `_`). @default 'lagent_vectors' */
  table?: string | undefined;
} & (
  | { /** e.g. `postgres://user:password@host:5432/db` */ connectionString: string; pool?: undefined }
  | { /** A `pg` Pool the caller owns: `close()` leaves it open. */ pool: Pool; connectionString?: undefined }
);

const FEATURE = 'PostgresVectorStore';
const SQL_TYPES = { string: 'text', number: 'double precision', boolean: 'boolean' } as const;
const ARRAY_TYPES = { string: 'text[]', number: 'float8[]', boolean: 'boolean[]' } as const;
const column = (field: string) => `"f_${field}"`;

/** What to do when the server has no pgvector, said the same way wherever it is noticed. */
function missingExtension(cause: unknown): ConfigurationError {
  return new ConfigurationError({
    message: `${FEATURE} needs the pgvector extension, which this PostgreSQL server does not have (${errorMessage(cause)}): install it on the server (Debian and Ubuntu: apt install postgresql-<version>-pgvector from the PostgreSQL apt repository; elsewhere see https://github.com/pgvector/pgvector#installation), then run CREATE EXTENSION vector as a user allowed to`,
    cause,
  });
}

/**
 * Vectors in PostgreSQL with the pgvector extension (install `pg`; the server needs pgvector): one table with
 * the namespace, id, a `vector(dimensions)` column, the metadata as `jsonb` and a column per declared field.
 * Queries are exact (`ORDER BY embedding <=> query`) until {@link PostgresVectorStore.createIndex} builds an
 * HNSW index. Each upsert (one `INSERT ... ON CONFLICT` statement) and delete is atomic. On a server without
 * pgvector the first call fails with a `ConfigurationError` saying what to install.
 *
 * @example
 * const store = new PostgresVectorStore({ connectionString: process.env.DATABASE_URL!, dimensions: 1536 });
 */
export class PostgresVectorStore implements VectorStore {
  readonly dimensions: number;
  readonly fields: FieldTypes;
  readonly #table: string;
  readonly #tableName: string;
  readonly #options: PostgresVectorStoreOptions;
  #pool: Pool | undefined;
  #ready: Promise<Pool> | undefined;
  #closed = false;

  constructor(options: PostgresVectorStoreOptions) {
    this.dimensions = checkDimensions(options?.dimensions, FEATURE);
    this.fields = checkFields(options.fields, FEATURE);
    const table = options.table ?? 'lagent_vectors';
    if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,50}$/.test(table)) {
      throw new ConfigurationError({
        message: `${FEATURE}: table must be letters, digits and _ (not starting with a digit, at most 50), got ${JSON.stringify(table)}`,
      });
    }
    if (options.pool === undefined && typeof options.connectionString !== 'string') {
      throw new ConfigurationError({ message: `${FEATURE} needs a connectionString or a pool` });
    }
    this.#tableName = table.toLowerCase();
    this.#table = `"${this.#tableName}"`;
    this.#options = options;
  }

  #open(): Promise<Pool> {
    if (this.#closed) return Promise.reject(closedError(FEATURE));
    this.#ready ??= this.#connect().catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  async #connect(): Promise<Pool> {
    let pool = this.#options.pool;
    if (pool === undefined) {
      let pg: typeof import('pg');
      try {
        pg = await import('pg');
      } catch (error) {
        throw missingPeer(['pg'], FEATURE, error);
      }
      const Pool = pg.Pool ?? (pg as unknown as { default: typeof import('pg') }).default.Pool;
      pool = new Pool({ connectionString: this.#options.connectionString });
      pool.on('error', () => {});
      this.#pool = pool;
    }
    try {
      await this.#migrate(pool);
    } catch (error) {
      if (error instanceof ConfigurationError) throw error;
      throw this.#error('open', error);
    }
    return pool;
  }

  async #migrate(pool: Pool): Promise<void> {
    const installed = await pool.query(`SELECT 1 FROM pg_extension WHERE extname = 'vector'`);
    if (installed.rowCount === 0) {
      try {
        await pool.query('CREATE EXTENSION IF NOT EXISTS vector');
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        // 0A000 / 58P01: the server has no such extension; 42501: not allowed to create it.
        if (code === '0A000' || code === '58P01' || /extension "vector"/.test(errorMessage(error))) {
          throw missingExtension(error);
        }
        if (code === '42501') {
          throw new ConfigurationError({
            message: `${FEATURE}: this user may not create the pgvector extension; ask an administrator to run CREATE EXTENSION vector in this database`,
            cause: error,
          });
        }
        throw error;
      }
    }
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${this.#table} (namespace text NOT NULL, id text NOT NULL, embedding vector(${this.dimensions}) NOT NULL, metadata jsonb NOT NULL, PRIMARY KEY (namespace, id))`,
    );
    const columns = await pool.query<{ name: string; typmod: number }>(
      `SELECT attname AS name, atttypmod AS typmod FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
      [this.#table],
    );
    const embedding = columns.rows.find((row) => row.name === 'embedding');
    if (embedding?.typmod !== this.dimensions) {
      throw new ConfigurationError({
        message: `${FEATURE}: the table ${this.#tableName} holds vectors of ${embedding?.typmod} dimensions, not ${this.dimensions}; use another table`,
      });
    }
    const present = new Set(columns.rows.map((row) => row.name));
    for (const [field, type] of Object.entries(this.fields)) {
      if (present.has(`f_${field}`)) continue;
      const jsonType = type === 'string' ? 'string' : type;
      await pool.query(
        `ALTER TABLE ${this.#table} ADD COLUMN IF NOT EXISTS ${column(field)} ${SQL_TYPES[type]}; ` +
          `UPDATE ${this.#table} SET ${column(field)} = (metadata ->> '${field}')::${SQL_TYPES[type]} WHERE jsonb_typeof(metadata -> '${field}') = '${jsonType}'; ` +
          `CREATE INDEX IF NOT EXISTS "${this.#tableName}_f_${field}" ON ${this.#table} (namespace, ${column(field)})`,
      );
    }
  }

  #error(operation: string, error: unknown): StoreError {
    return new StoreError({
      message: `${FEATURE} ${operation} failed: ${errorMessage(error)}`,
      store: FEATURE,
      operation,
      cause: error,
    });
  }

  async upsert(records: readonly VectorRecord[], options?: NamespaceOptions): Promise<void> {
    const namespace = namespaceOf(options);
    const prepared = prepareRecords(records, this.dimensions, this.fields);
    if (prepared.length === 0) return;
    const pool = await this.#open();
    const fields = Object.entries(this.fields);
    const names = fields.map(([field]) => column(field));
    const parameters: unknown[] = [
      namespace,
      prepared.map((record) => record.id),
      prepared.map((record) => `[${Array.from(record.vector).join(',')}]`),
      prepared.map((record) => record.json),
      ...fields.map(([field]) => prepared.map((record) => record.metadata[field] ?? null)),
    ];
    const unnest = [
      '$2::text[]',
      '$3::text[]',
      '$4::text[]',
      ...fields.map(([, type], index) => `$${5 + index}::${ARRAY_TYPES[type]}`),
    ];
    const aliases = ['id', 'embedding', 'metadata', ...fields.map((_, index) => `f${index}`)];
    const sql =
      `INSERT INTO ${this.#table} (namespace, id, embedding, metadata${names.map((name) => `, ${name}`).join('')}) ` +
      `SELECT $1, u.id, u.embedding::vector, u.metadata::jsonb${fields.map((_, index) => `, u.f${index}`).join('')} ` +
      `FROM unnest(${unnest.join(', ')}) AS u(${aliases.join(', ')}) ` +
      `ON CONFLICT (namespace, id) DO UPDATE SET embedding = EXCLUDED.embedding, metadata = EXCLUDED.metadata${names.map((name) => `, ${name} = EXCLUDED.${name}`).join('')}`;
    try {
      await pool.query(sql, parameters);
    } catch (error) {
      throw this.#error('upsert', error);
    }
  }

  /** ` AND "f_x" = $n ...` for a checked filter, its parameters numbered from `first`. */
  #conditions(filter: readonly [string, FieldValue][], first: number): string {
    return filter.map(([field], index) => ` AND ${column(field)} = $${first + index}`).join('');
  }

  async query(vector: readonly number[] | Float32Array, options: QueryOptions): Promise<VectorMatch[]> {
    const namespace = namespaceOf(options);
    const k = checkTopK(options?.topK);
    const filter = checkFilter(options.filter, this.fields);
    const unit = unitVector(vector, this.dimensions, 'vector');
    const pool = await this.#open();
    const sql =
      `SELECT id, metadata, embedding <=> $1::vector AS distance FROM ${this.#table} ` +
      `WHERE namespace = $2${this.#conditions(filter, 4)} ORDER BY embedding <=> $1::vector LIMIT $3`;
    try {
      const result = await pool.query<{ id: string; metadata: Record<string, unknown>; distance: number }>(
        sql,
        [`[${Array.from(unit).join(',')}]`, namespace, k, ...filter.map(([, value]) => value)],
      );
      return result.rows.map((row) => ({
        id: row.id,
        score: Math.max(-1, Math.min(1, 1 - Number(row.distance))),
        metadata: row.metadata,
      }));
    } catch (error) {
      throw this.#error('query', error);
    }
  }

  async delete(target: DeleteTarget, options?: NamespaceOptions): Promise<number> {
    const namespace = namespaceOf(options);
    const checked = checkDeleteTarget(target, this.fields);
    const pool = await this.#open();
    try {
      const result =
        'ids' in checked
          ? await pool.query(`DELETE FROM ${this.#table} WHERE namespace = $1 AND id = ANY($2::text[])`, [
              namespace,
              checked.ids,
            ])
          : await pool.query(
              `DELETE FROM ${this.#table} WHERE namespace = $1${this.#conditions(checked.filter, 2)}`,
              [namespace, ...checked.filter.map(([, value]) => value)],
            );
      return result.rowCount ?? 0;
    } catch (error) {
      throw this.#error('delete', error);
    }
  }

  async count(options?: CountOptions): Promise<number> {
    const namespace = namespaceOf(options);
    const filter = checkFilter(options?.filter, this.fields);
    const pool = await this.#open();
    try {
      const result = await pool.query<{ count: string }>(
        `SELECT count(*) AS count FROM ${this.#table} WHERE namespace = $1${this.#conditions(filter, 2)}`,
        [namespace, ...filter.map(([, value]) => value)],
      );
      return Number(result.rows[0]?.count ?? 0);
    } catch (error) {
      throw this.#error('count', error);
    }
  }

  async namespaces(): Promise<string[]> {
    const pool = await this.#open();
    try {
      const result = await pool.query<{ namespace: string }>(`SELECT DISTINCT namespace FROM ${this.#table}`);
      return result.rows.map((row) => row.namespace).sort();
    } catch (error) {
      throw this.#error('namespaces', error);
    }
  }

  /**
   * Builds an HNSW index on the vectors (cosine): queries then walk the graph instead of comparing every
   * vector. A filtered query over the index may find fewer than `topK` matches unless the server runs
   * pgvector 0.8 or later with iterative scans on (`ALTER DATABASE db SET hnsw.iterative_scan = relaxed_order`).
   */
  async createIndex(): Promise<void> {
    const pool = await this.#open();
    try {
      await pool.query(
        `CREATE INDEX IF NOT EXISTS "${this.#tableName}_embedding" ON ${this.#table} USING hnsw (embedding vector_cosine_ops)`,
      );
    } catch (error) {
      throw this.#error('createIndex', error);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const pool = this.#pool;
    this.#pool = undefined;
    this.#ready = undefined;
    await pool?.end();
  }
}
