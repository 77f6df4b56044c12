import { StoreError } from '../schema/errors';

/*
 * SQLiteStore's tables and their migrations. Keys (namespace, session id, call id) are BLOBs holding the
 * key's UTF-16 code units big-endian: SQLite compares BLOBs bytewise, so sessions list in JavaScript's string
 * order, and every string (lone surrogates too) is stored exactly.
 *
 * The schema version lives in the `<prefix>meta` table, not in `PRAGMA user_version`: several prefixes (apps)
 * may share one file, and a database the caller passes in may use `user_version` for its own schema.
 */

/** The slice of a better-sqlite3 statement the store uses. */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** A better-sqlite3 transaction function: BEGIN (DEFERRED by default, or IMMEDIATE) ... COMMIT / ROLLBACK. */
export interface SqliteTransaction<A extends unknown[], R> {
  (...args: A): R;
  deferred(...args: A): R;
  immediate(...args: A): R;
}

/** The slice of a better-sqlite3 `Database` the store uses. */
export interface SqliteDatabase {
  readonly name: string;
  readonly open: boolean;
  prepare(sql: string): SqliteStatement;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  exec(source: string): unknown;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): SqliteTransaction<A, R>;
  close(): unknown;
}

/** The schema version this code writes; a database at a newer one is refused. */
export const SQLITE_SCHEMA_VERSION = 4;

/** Table names of one prefix. */
export interface SqliteTables {
  meta: string;
  sessions: string;
  bases: string;
  turns: string;
  journals: string;
  entries: string;
  runs: string;
  runEvents: string;
}

export function sqliteTables(prefix: string): SqliteTables {
  return {
    meta: `"${prefix}meta"`,
    sessions: `"${prefix}sessions"`,
    bases: `"${prefix}bases"`,
    turns: `"${prefix}turns"`,
    journals: `"${prefix}journals"`,
    entries: `"${prefix}journal_entries"`,
    runs: `"${prefix}runs"`,
    runEvents: `"${prefix}run_events"`,
  };
}

/** Migration `i` takes the schema from version `i` to `i + 1`. Append only: never edit a shipped one. */
const MIGRATIONS: ((db: SqliteDatabase, t: SqliteTables, prefix: string) => void)[] = [
  (db, t, prefix) => {
    // A session: its version, expiry and lease (a small row, rewritten by every lease and commit), and the
    // version of its base state, which the turns after it fold onto.
    db.exec(`CREATE TABLE ${t.sessions} (
      namespace BLOB NOT NULL,
      session_id BLOB NOT NULL,
      version INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      expires_at INTEGER,
      lease_owner TEXT,
      lease_until INTEGER NOT NULL,
      base_version INTEGER NOT NULL,
      PRIMARY KEY (namespace, session_id)
    ) WITHOUT ROWID`);
    db.exec(
      `CREATE INDEX "${prefix}sessions_expiry" ON ${t.sessions} (expires_at) WHERE expires_at IS NOT NULL`,
    );
    // The base state (JSON), in a table of its own: rewritten only when turns are folded into it. None for
    // a session whose base is empty (version 0).
    db.exec(`CREATE TABLE ${t.bases} (
      namespace BLOB NOT NULL,
      session_id BLOB NOT NULL,
      state TEXT NOT NULL,
      PRIMARY KEY (namespace, session_id)
    )`);
    // The turns committed since the base, each the JSON of its SessionTurn.
    db.exec(`CREATE TABLE ${t.turns} (
      namespace BLOB NOT NULL,
      session_id BLOB NOT NULL,
      version INTEGER NOT NULL,
      turn TEXT NOT NULL,
      PRIMARY KEY (namespace, session_id, version)
    ) WITHOUT ROWID`);
    // Journals in creation order (id), and their entries.
    db.exec(`CREATE TABLE ${t.journals} (
      id INTEGER PRIMARY KEY,
      namespace BLOB NOT NULL,
      call_id BLOB NOT NULL,
      session_id BLOB NOT NULL,
      entries INTEGER NOT NULL,
      finished INTEGER NOT NULL,
      UNIQUE (namespace, call_id)
    )`);
    db.exec(`CREATE INDEX "${prefix}journals_session" ON ${t.journals} (namespace, session_id, id)`);
    db.exec(`CREATE TABLE ${t.entries} (
      journal_id INTEGER NOT NULL,
      seq INTEGER NOT NULL,
      data TEXT NOT NULL,
      PRIMARY KEY (journal_id, seq)
    ) WITHOUT ROWID`);
  },
  (db, t, prefix) => {
    // A new durable call looks up its session's unfinished journals: found without reading the finished ones.
    db.exec(
      `CREATE INDEX "${prefix}journals_unfinished" ON ${t.journals} (namespace, session_id, id) WHERE finished = 0`,
    );
  },
  (db, t, prefix) => {
    // The turn id of a session's last commit: a commit tried again after its answer was lost writes nothing.
    db.exec(`ALTER TABLE ${t.sessions} ADD COLUMN last_turn_id TEXT`);
    // When a finished journal's retention ends (NULL: kept), found in order to prune.
    db.exec(`ALTER TABLE ${t.journals} ADD COLUMN expires_at INTEGER`);
    db.exec(
      `CREATE INDEX "${prefix}journals_expiry" ON ${t.journals} (namespace, expires_at) WHERE expires_at IS NOT NULL`,
    );
    // A namespace's unfinished calls across sessions (what a process recovers when it starts).
    db.exec(
      `CREATE INDEX "${prefix}journals_unfinished_calls" ON ${t.journals} (namespace, call_id) WHERE finished = 0`,
    );
  },
  (db, t, prefix) => {
    // Run logs: a run in creation order (id), its status and outcome, and its events numbered from 1.
    db.exec(`CREATE TABLE ${t.runs} (
      id INTEGER PRIMARY KEY,
      namespace BLOB NOT NULL,
      run_id BLOB NOT NULL,
      session_id BLOB NOT NULL,
      status TEXT NOT NULL,
      last_seq INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      result TEXT,
      cancel_requested INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      UNIQUE (namespace, run_id)
    )`);
    db.exec(`CREATE INDEX "${prefix}runs_session" ON ${t.runs} (namespace, session_id, id)`);
    db.exec(`CREATE INDEX "${prefix}runs_expiry" ON ${t.runs} (namespace, expires_at)`);
    db.exec(`CREATE TABLE ${t.runEvents} (
      run INTEGER NOT NULL,
      seq INTEGER NOT NULL,
      type TEXT NOT NULL,
      data TEXT NOT NULL,
      PRIMARY KEY (run, seq)
    ) WITHOUT ROWID`);
  },
];

/**
 * Creates or upgrades the tables of `prefix` (in one IMMEDIATE transaction, so two processes opening a new
 * file do it once), or throws a `StoreError` when the database was written by a newer schema. Tables already
 * at this version are only read: opening takes no write lock, so a process that holds one (a process frozen
 * in a write transaction) does not keep others from opening the file.
 */
export function migrateSqlite(db: SqliteDatabase, prefix: string, description: string): void {
  const t = sqliteTables(prefix);
  const versionOf = (): number => {
    const table = db
      .prepare(`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?`)
      .get(`${prefix}meta`);
    if (table === undefined) return 0;
    const row = db.prepare(`SELECT value FROM ${t.meta} WHERE key = 'schema_version'`).get() as
      | { value: number }
      | undefined;
    return row?.value ?? 0;
  };
  const refuseNewer = (version: number) => {
    if (version > SQLITE_SCHEMA_VERSION) {
      throw new StoreError({
        message: `${description}: the database's tables (prefix ${JSON.stringify(prefix)}) are at schema version ${version}, written by a newer lagent-ts; this one reads up to version ${SQLITE_SCHEMA_VERSION}: upgrade lagent-ts`,
        store: description,
        operation: 'open',
      });
    }
  };
  const current = versionOf();
  refuseNewer(current);
  if (current === SQLITE_SCHEMA_VERSION) return;
  const migrate = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS ${t.meta} (key TEXT PRIMARY KEY, value INTEGER NOT NULL)`);
    const version = versionOf();
    refuseNewer(version);
    for (let from = version; from < SQLITE_SCHEMA_VERSION; from++) MIGRATIONS[from]!(db, t, prefix);
    if (version !== SQLITE_SCHEMA_VERSION) {
      db.prepare(
        `INSERT INTO ${t.meta} (key, value) VALUES ('schema_version', ?)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      ).run(SQLITE_SCHEMA_VERSION);
    }
  });
  migrate.immediate();
}

/**
 * The database's clock in epoch ms (SQLite's `'now'`, the operating system's time read by the SQL engine), the
 * same for every process on the machine whatever each one's JavaScript clock says. Read inside a write
 * transaction, it is the writer's time.
 */
export const SQLITE_NOW = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)`;

/** A key as stored: its UTF-16 code units, big-endian (bytewise order is JavaScript's string order). */
export function sqliteKey(key: string): Buffer {
  return Buffer.from(key, 'utf16le').swap16();
}

/** A stored key back as the string. */
export function fromSqliteKey(stored: Uint8Array): string {
  return Buffer.from(stored).swap16().toString('utf16le');
}
