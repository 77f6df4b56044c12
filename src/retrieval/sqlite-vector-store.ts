import { ConfigurationError, StoreError } from '../schema/errors';
import type { SqliteDatabase, SqliteStatement } from '../stores/sqlite-schema';
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

/** Options of {@link SQLiteVectorStore}. */
export interface SQLiteVectorStoreOptions {
  /** The database file (created when missing; it may be the session store's file), or `':memory:'`. */
  path: string;
  /** The length of every vector; a file that holds vectors of another length is refused. */
  dimensions: number;
  /** Metadata fields filters may name; a field not in the file yet is added (and filled from the metadata). */
  fields?: FieldTypes | undefined;
  /**
   * Name of the store's table (its vector index is `<table>_vec`), so several stores share one file: letters,
   * digits and `_`.
   * @default 'lagent_vectors'
   */
  table?: string | undefined;
  /** How long a write waits for another connection's transaction, in ms. @default 5000 */
  busyTimeoutMs?: number | undefined;
}

type Driver = new (path: string, options: { timeout: number }) => SqliteDatabase;
type SqliteVec = { load(db: unknown): void };

const FEATURE = 'SQLiteVectorStore';
const PEERS = ['better-sqlite3', 'sqlite-vec'];

const column = (field: string) => `"f_${field}"`;
const SQL_TYPES = { string: 'TEXT', number: 'REAL', boolean: 'INTEGER' } as const;

/** A filter value as SQLite stores it (booleans are 0 and 1). */
function sqlValue(value: unknown): unknown {
  if (value === true) return 1;
  if (value === false) return 0;
  return value ?? null;
}

/**
 * Vectors in an SQLite file with the `sqlite-vec` extension (install `better-sqlite3` and `sqlite-vec`): the
 * records (id, namespace, metadata, one column per declared field) in `<table>`, the vectors in a `vec0`
 * index `<table>_vec` partitioned by namespace. A query is an exact search of its namespace, restricted to the
 * rows a filter selects before the nearest are taken. Each upsert or delete is one transaction; several
 * processes may share the file (WAL mode).
 *
 * @example
 * const store = new SQLiteVectorStore({ path: './memory.db', dimensions: 384, fields: { source: 'string' } });
 */
export class SQLiteVectorStore implements VectorStore {
  readonly dimensions: number;
  readonly fields: FieldTypes;
  readonly #db: SqliteDatabase;
  readonly #table: string;
  readonly #vec: string;
  readonly #statements = new Map<string, SqliteStatement>();
  #closed = false;

  constructor(options: SQLiteVectorStoreOptions) {
    this.dimensions = checkDimensions(options?.dimensions, FEATURE);
    this.fields = checkFields(options.fields, FEATURE);
    const table = options.table ?? 'lagent_vectors';
    if (typeof table !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,59}$/.test(table)) {
      throw new ConfigurationError({
        message: `${FEATURE}: table must be letters, digits and _ (not starting with a digit, at most 60), got ${JSON.stringify(table)}`,
      });
    }
    if (typeof options.path !== 'string' || options.path === '') {
      throw new ConfigurationError({ message: `${FEATURE} needs a path (a file, or ':memory:')` });
    }
    this.#table = `"${table}"`;
    this.#vec = `"${table}_vec"`;
    const Database = requirePeer<Driver>('better-sqlite3', PEERS, FEATURE);
    const sqliteVec = requirePeer<SqliteVec>('sqlite-vec', PEERS, FEATURE);
    const db = new Database(options.path, { timeout: options.busyTimeoutMs ?? 5000 });
    try {
      sqliteVec.load(db);
      if (options.path !== ':memory:') db.pragma('journal_mode = WAL');
      this.#migrate(db, table);
    } catch (error) {
      db.close();
      if (error instanceof ConfigurationError) throw error;
      throw new StoreError({
        message: `${FEATURE}: could not open ${options.path}: ${errorMessage(error)}`,
        store: FEATURE,
        operation: 'open',
        cause: error,
      });
    }
    this.#db = db;
  }

  /**
   * Creates the tables, checks the file's dimensions and adds the declared fields it lacks, holding the write
   * lock from the start: another process opening the file at once reads what this one wrote, not before it.
   */
  #migrate(db: SqliteDatabase, table: string): void {
    db.transaction(() => {
      db.exec(`CREATE TABLE IF NOT EXISTS "${table}_config" (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
      const stored = db.prepare(`SELECT value FROM "${table}_config" WHERE key = 'dimensions'`).get() as
        | { value: string }
        | undefined;
      if (stored !== undefined && Number(stored.value) !== this.dimensions) {
        throw new ConfigurationError({
          message: `${FEATURE}: the table ${table} holds vectors of ${stored.value} dimensions, not ${this.dimensions}; use another table or file`,
        });
      }
      if (stored === undefined) {
        db.prepare(`INSERT INTO "${table}_config" (key, value) VALUES ('dimensions', ?)`).run(
          String(this.dimensions),
        );
        db.exec(
          `CREATE TABLE IF NOT EXISTS ${this.#table} (rowid INTEGER PRIMARY KEY, namespace TEXT NOT NULL, id TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (namespace, id))`,
        );
        db.exec(
          `CREATE VIRTUAL TABLE IF NOT EXISTS ${this.#vec} USING vec0(namespace TEXT PARTITION KEY, embedding float[${this.dimensions}] distance_metric=cosine)`,
        );
      }
      const columns = new Set(
        (db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[]).map(
          (row) => row.name,
        ),
      );
      for (const [field, type] of Object.entries(this.fields)) {
        if (columns.has(`f_${field}`)) continue;
        db.exec(`ALTER TABLE ${this.#table} ADD COLUMN ${column(field)} ${SQL_TYPES[type]}`);
        const jsonType =
          type === 'string' ? "('text')" : type === 'number' ? "('integer', 'real')" : "('true', 'false')";
        db.exec(
          `UPDATE ${this.#table} SET ${column(field)} = json_extract(metadata, '$.${field}') WHERE json_type(metadata, '$.${field}') IN ${jsonType}`,
        );
        db.exec(
          `CREATE INDEX IF NOT EXISTS "${table}_f_${field}" ON ${this.#table} (namespace, ${column(field)})`,
        );
      }
    }).immediate();
  }

  #statement(sql: string): SqliteStatement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #open(): void {
    if (this.#closed) throw closedError(FEATURE);
  }

  #fail(operation: string, error: unknown): never {
    throw new StoreError({
      message: `${FEATURE} ${operation} failed: ${errorMessage(error)}`,
      store: FEATURE,
      operation,
      cause: error,
    });
  }

  async upsert(records: readonly VectorRecord[], options?: NamespaceOptions): Promise<void> {
    this.#open();
    const namespace = namespaceOf(options);
    const prepared = prepareRecords(records, this.dimensions, this.fields);
    if (prepared.length === 0) return;
    const fields = Object.keys(this.fields);
    const find = this.#statement(`SELECT rowid FROM ${this.#table} WHERE namespace = ? AND id = ?`);
    const insert = this.#statement(
      `INSERT INTO ${this.#table} (namespace, id, metadata${fields.map((field) => `, ${column(field)}`).join('')}) VALUES (?, ?, ?${', ?'.repeat(fields.length)})`,
    );
    const update = this.#statement(
      `UPDATE ${this.#table} SET metadata = ?${fields.map((field) => `, ${column(field)} = ?`).join('')} WHERE rowid = ?`,
    );
    const removeVector = this.#statement(`DELETE FROM ${this.#vec} WHERE rowid = ?`);
    const insertVector = this.#statement(
      `INSERT INTO ${this.#vec} (rowid, namespace, embedding) VALUES (?, ?, ?)`,
    );
    try {
      this.#db
        .transaction(() => {
          for (const record of prepared) {
            const values = fields.map((field) => sqlValue(record.metadata[field]));
            const existing = find.get(namespace, record.id) as { rowid: number } | undefined;
            let rowid: bigint;
            if (existing === undefined) {
              rowid = BigInt(
                (
                  insert.run(namespace, record.id, record.json, ...values) as unknown as {
                    lastInsertRowid: number | bigint;
                  }
                ).lastInsertRowid,
              );
            } else {
              rowid = BigInt(existing.rowid);
              update.run(record.json, ...values, rowid);
              removeVector.run(rowid);
            }
            insertVector.run(rowid, namespace, record.vector);
          }
        })
        .immediate();
    } catch (error) {
      this.#fail('upsert', error);
    }
  }

  /** ` AND rowid IN (rows of the namespace matching the filter)`, and its parameters. */
  #restriction(namespace: string, filter: readonly [string, FieldValue][]): [string, unknown[]] {
    if (filter.length === 0) return ['', []];
    const conditions = filter.map(([field]) => ` AND ${column(field)} = ?`).join('');
    return [
      ` AND rowid IN (SELECT rowid FROM ${this.#table} WHERE namespace = ?${conditions})`,
      [namespace, ...filter.map(([, value]) => sqlValue(value))],
    ];
  }

  async query(vector: readonly number[] | Float32Array, options: QueryOptions): Promise<VectorMatch[]> {
    this.#open();
    const namespace = namespaceOf(options);
    const k = Math.min(checkTopK(options?.topK), 4096);
    const filter = checkFilter(options.filter, this.fields);
    const unit = unitVector(vector, this.dimensions, 'vector');
    const [restriction, parameters] = this.#restriction(namespace, filter);
    const sql =
      `SELECT r.id AS id, r.metadata AS metadata, knn.distance AS distance FROM (SELECT rowid, distance FROM ${this.#vec} ` +
      `WHERE embedding MATCH ? AND k = ? AND namespace = ?${restriction}) knn JOIN ${this.#table} r ON r.rowid = knn.rowid ORDER BY knn.distance, r.rowid`;
    let rows: { id: string; metadata: string; distance: number }[];
    try {
      rows = this.#statement(sql).all(unit, k, namespace, ...parameters) as typeof rows;
    } catch (error) {
      this.#fail('query', error);
    }
    return rows.map((row) => ({
      id: row.id,
      score: Math.max(-1, Math.min(1, 1 - row.distance)),
      metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    }));
  }

  async delete(target: DeleteTarget, options?: NamespaceOptions): Promise<number> {
    this.#open();
    const namespace = namespaceOf(options);
    const checked = checkDeleteTarget(target, this.fields);
    const find = this.#statement(`SELECT rowid FROM ${this.#table} WHERE namespace = ? AND id = ?`);
    const removeRecord = this.#statement(`DELETE FROM ${this.#table} WHERE rowid = ?`);
    const removeVector = this.#statement(`DELETE FROM ${this.#vec} WHERE rowid = ?`);
    try {
      return this.#db
        .transaction(() => {
          let rowids: number[];
          if ('ids' in checked) {
            rowids = [];
            for (const id of checked.ids) {
              const row = find.get(namespace, id) as { rowid: number } | undefined;
              if (row !== undefined) rowids.push(row.rowid);
            }
          } else {
            const conditions = checked.filter.map(([field]) => ` AND ${column(field)} = ?`).join('');
            rowids = (
              this.#statement(`SELECT rowid FROM ${this.#table} WHERE namespace = ?${conditions}`).all(
                namespace,
                ...checked.filter.map(([, value]) => sqlValue(value)),
              ) as { rowid: number }[]
            ).map((row) => row.rowid);
          }
          for (const rowid of rowids) {
            removeRecord.run(rowid);
            removeVector.run(BigInt(rowid));
          }
          return rowids.length;
        })
        .immediate();
    } catch (error) {
      this.#fail('delete', error);
    }
  }

  async count(options?: CountOptions): Promise<number> {
    this.#open();
    const namespace = namespaceOf(options);
    const filter = checkFilter(options?.filter, this.fields);
    const conditions = filter.map(([field]) => ` AND ${column(field)} = ?`).join('');
    const row = this.#statement(
      `SELECT count(*) AS count FROM ${this.#table} WHERE namespace = ?${conditions}`,
    ).get(namespace, ...filter.map(([, value]) => sqlValue(value))) as { count: number };
    return row.count;
  }

  async namespaces(): Promise<string[]> {
    this.#open();
    return (
      this.#statement(`SELECT DISTINCT namespace FROM ${this.#table} ORDER BY namespace`).all() as {
        namespace: string;
      }[]
    ).map((row) => row.namespace);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#statements.clear();
    this.#db.close();
  }
}
