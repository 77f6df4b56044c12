/*
 * PostgresStore's tables and statements. Every statement is one round trip and atomic on its own; the names
 * are the store's tables (its schema and prefix), so several stores may share one database and one pool.
 */

/** The schema version this code writes; a database at a newer one is refused. */
export const POSTGRES_SCHEMA_VERSION = 4;

/** The table names of one store (schema-qualified and quoted). */
export interface PostgresTables {
  meta: string;
  sessions: string;
  turns: string;
  journals: string;
  entries: string;
  runs: string;
  runEvents: string;
}

/** The store's tables for a prefix and an optional schema (both already checked to be plain identifiers). */
export function postgresTables(prefix: string, schema: string | undefined): PostgresTables {
  const name = (table: string) =>
    schema === undefined ? `"${prefix}${table}"` : `"${schema}"."${prefix}${table}"`;
  return {
    meta: name('meta'),
    sessions: name('sessions'),
    turns: name('turns'),
    journals: name('journals'),
    entries: name('journal_entries'),
    runs: name('runs'),
    runEvents: name('run_events'),
  };
}

/**
 * The migrations, in order: `MIGRATIONS[n]` takes the tables from version n to n + 1. Keys sort by code
 * point (`COLLATE "C"`), so listing pages follow one stable order.
 */
export function postgresMigrations(t: PostgresTables): string[][] {
  return [
    [
      `CREATE TABLE ${t.sessions} (
        namespace text COLLATE "C" NOT NULL,
        session_id text COLLATE "C" NOT NULL,
        version integer NOT NULL,
        base text NOT NULL,
        base_version integer NOT NULL,
        updated_at bigint NOT NULL,
        expires_at bigint,
        lease_owner text,
        lease_until bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (namespace, session_id))`,
      `CREATE INDEX ON ${t.sessions} (expires_at) WHERE expires_at IS NOT NULL`,
      `CREATE TABLE ${t.turns} (
        namespace text COLLATE "C" NOT NULL,
        session_id text COLLATE "C" NOT NULL,
        version integer NOT NULL,
        turn text NOT NULL,
        PRIMARY KEY (namespace, session_id, version),
        FOREIGN KEY (namespace, session_id) REFERENCES ${t.sessions} ON DELETE CASCADE)`,
      `CREATE TABLE ${t.journals} (
        id bigserial NOT NULL,
        namespace text COLLATE "C" NOT NULL,
        call_id text COLLATE "C" NOT NULL,
        session_id text COLLATE "C" NOT NULL,
        finished boolean NOT NULL DEFAULT false,
        next_seq integer NOT NULL,
        PRIMARY KEY (namespace, call_id))`,
      `CREATE INDEX ON ${t.journals} (namespace, session_id, id)`,
      `CREATE TABLE ${t.entries} (
        namespace text COLLATE "C" NOT NULL,
        call_id text COLLATE "C" NOT NULL,
        seq integer NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (namespace, call_id, seq),
        FOREIGN KEY (namespace, call_id) REFERENCES ${t.journals} ON DELETE CASCADE)`,
    ],
    // A new durable call looks up its session's unfinished journals: found without reading the finished ones.
    [`CREATE INDEX ON ${t.journals} (namespace, session_id, id) WHERE NOT finished`],
    [
      // The turn id of a session's last commit: a commit tried again after its answer was lost writes nothing.
      `ALTER TABLE ${t.sessions} ADD COLUMN last_turn_id text`,
      // When a finished journal's retention ends (NULL: kept), found in order to prune.
      `ALTER TABLE ${t.journals} ADD COLUMN expires_at bigint`,
      `CREATE INDEX ON ${t.journals} (namespace, expires_at) WHERE expires_at IS NOT NULL`,
      // A namespace's unfinished calls across sessions (what a process recovers when it starts).
      `CREATE INDEX ON ${t.journals} (namespace, call_id) WHERE NOT finished`,
    ],
    [
      // Run logs: a run (id: creation order), its status and outcome, and its events numbered from 1.
      `CREATE TABLE ${t.runs} (
        id bigserial NOT NULL,
        namespace text COLLATE "C" NOT NULL,
        run_id text COLLATE "C" NOT NULL,
        session_id text COLLATE "C" NOT NULL,
        status text NOT NULL,
        last_seq integer NOT NULL,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        result text,
        cancel_requested boolean NOT NULL DEFAULT false,
        expires_at bigint NOT NULL,
        PRIMARY KEY (namespace, run_id))`,
      `CREATE INDEX ON ${t.runs} (namespace, session_id, id)`,
      `CREATE INDEX ON ${t.runs} (namespace, expires_at)`,
      `CREATE TABLE ${t.runEvents} (
        namespace text COLLATE "C" NOT NULL,
        run_id text COLLATE "C" NOT NULL,
        seq integer NOT NULL,
        type text NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (namespace, run_id, seq),
        FOREIGN KEY (namespace, run_id) REFERENCES ${t.runs} ON DELETE CASCADE)`,
    ],
  ];
}

/** The server's clock in epoch ms, constant within a statement: every process shares one clock. */
const NOW = `floor(extract(epoch from statement_timestamp()) * 1000)::bigint`;
const LIVE = `(expires_at IS NULL OR expires_at > ${NOW})`;
/** Finished journals past their retention that one finish prunes, at most. */
const PRUNE = 16;
/** A run's columns, as run statements return them. */
const RUN_COLUMNS =
  'run_id, session_id, status, last_seq, created_at, updated_at, result, cancel_requested, expires_at';

/** The statements of one store, by name. */
export function postgresStatements(t: PostgresTables) {
  const turnsOf = (alias: string) =>
    `ARRAY(SELECT t.turn FROM ${t.turns} t WHERE t.namespace = $1 AND t.session_id = $2
      AND t.version > ${alias}.base_version AND t.version <= ${alias}.version ORDER BY t.version)`;
  return {
    // $1 namespace, $2 session, $3 owner, $4 leaseMs, $5 knownVersion (or null). No row: busy or expired.
    acquire: `WITH a AS (
        INSERT INTO ${t.sessions} AS s
          (namespace, session_id, version, base, base_version, updated_at, expires_at, lease_owner, lease_until)
        VALUES ($1, $2, 0, '{}', 0, ${NOW}, NULL, $3, ${NOW} + $4::bigint)
        ON CONFLICT (namespace, session_id) DO UPDATE SET lease_owner = $3, lease_until = ${NOW} + $4::bigint
        WHERE (s.lease_owner IS NULL OR s.lease_owner = $3 OR s.lease_until <= ${NOW})
          AND (s.expires_at IS NULL OR s.expires_at > ${NOW})
        RETURNING s.version, s.base_version, s.base)
      SELECT a.version, a.base_version,
        CASE WHEN a.version IS DISTINCT FROM $5::integer THEN a.base END AS base,
        CASE WHEN a.version IS DISTINCT FROM $5::integer THEN ${turnsOf('a')} END AS turns
      FROM a`,
    // Why a session could not be acquired or committed.
    lease: `SELECT version, lease_owner, lease_until, expires_at, last_turn_id, ${NOW} AS now
      FROM ${t.sessions} WHERE namespace = $1 AND session_id = $2`,
    dropExpired: `WITH s AS (
        DELETE FROM ${t.sessions} WHERE namespace = $1 AND session_id = $2 AND expires_at <= ${NOW} RETURNING 1)
      DELETE FROM ${t.journals} WHERE namespace = $1 AND session_id = $2 AND EXISTS (SELECT 1 FROM s)`,
    // A lease that ran out with nobody taking it is renewed.
    renew: `UPDATE ${t.sessions} SET lease_until = ${NOW} + $4::bigint
      WHERE namespace = $1 AND session_id = $2 AND lease_owner = $3 AND ${LIVE}
      RETURNING 1`,
    release: `WITH d AS (
        DELETE FROM ${t.sessions} WHERE namespace = $1 AND session_id = $2 AND lease_owner = $3 AND version = 0)
      UPDATE ${t.sessions} SET lease_owner = NULL, lease_until = 0
      WHERE namespace = $1 AND session_id = $2 AND lease_owner = $3 AND version > 0`,
    // $4 version, $5 release, $6 ttlMs (or null), $7 the turn's JSON, $8 its id (or null). No row: a conflict
    // (or the turn committed already: see `lease`). A lease that ran out with nobody taking it still commits.
    commit: `WITH u AS (
        UPDATE ${t.sessions} SET version = version + 1, updated_at = ${NOW}, expires_at = ${NOW} + $6::bigint,
          last_turn_id = $8::text,
          lease_owner = CASE WHEN $5::boolean THEN NULL ELSE lease_owner END,
          lease_until = CASE WHEN $5::boolean THEN 0 ELSE lease_until END
        WHERE namespace = $1 AND session_id = $2 AND lease_owner = $3
          AND version = $4::integer AND ${LIVE}
        RETURNING version, base_version),
      i AS (INSERT INTO ${t.turns} (namespace, session_id, version, turn) SELECT $1, $2, u.version, $7 FROM u)
      SELECT version, base_version FROM u`,
    // $3 the folded state's JSON at version $4, folded from the base at version $5.
    fold: `WITH u AS (
        UPDATE ${t.sessions} SET base = $3, base_version = $4::integer
        WHERE namespace = $1 AND session_id = $2 AND base_version = $5::integer AND version >= $4::integer
        RETURNING 1)
      DELETE FROM ${t.turns} WHERE namespace = $1 AND session_id = $2 AND version <= $4::integer
        AND EXISTS (SELECT 1 FROM u)`,
    read: `SELECT s.version, s.base_version, s.base, s.updated_at, s.expires_at, ${turnsOf('s')} AS turns
      FROM ${t.sessions} s WHERE s.namespace = $1 AND s.session_id = $2 AND s.version > 0 AND ${LIVE}`,
    // $2 after (or null), $3 limit + 1.
    list: `SELECT session_id, version, updated_at, expires_at FROM ${t.sessions}
      WHERE namespace = $1 AND version > 0 AND ${LIVE} AND ($2::text IS NULL OR session_id > $2)
      ORDER BY session_id LIMIT $3::integer`,
    delete: `WITH s AS (
        DELETE FROM ${t.sessions} WHERE namespace = $1 AND session_id = $2 RETURNING version, expires_at),
      j AS (DELETE FROM ${t.journals} WHERE namespace = $1 AND session_id = $2)
      SELECT version > 0 AND (expires_at IS NULL OR expires_at > ${NOW}) AS existed FROM s`,
    purge: `WITH s AS (
        DELETE FROM ${t.sessions} WHERE expires_at <= ${NOW} AND ($1::text IS NULL OR namespace = $1)
        RETURNING namespace, session_id),
      j AS (DELETE FROM ${t.journals} j USING s WHERE j.namespace = s.namespace AND j.session_id = s.session_id)
      SELECT count(*)::integer AS purged FROM s`,
    // $1 namespace, $2 session, $3 call, $4 the entry's JSON, $5 the fence's owner and $6 lease ms (or null).
    // Fenced: written only while $5 holds the session's lease (extended by the same statement, whose row lock
    // orders it with any acquisition). An entry after the finish reopens the journal. seq null with leased
    // true: the call is another session's, or its journal is past its retention (see `journalOf`).
    appendJournal: `WITH l AS (
        UPDATE ${t.sessions} SET lease_until = ${NOW} + $6::bigint
        WHERE $5::text IS NOT NULL AND namespace = $1 AND session_id = $2 AND lease_owner = $5 AND ${LIVE}
        RETURNING 1),
      ok AS (SELECT 1 AS one WHERE $5::text IS NULL OR EXISTS (SELECT 1 FROM l)),
      j AS (
        INSERT INTO ${t.journals} AS j0 (namespace, call_id, session_id, next_seq) SELECT $1, $3, $2, 1 FROM ok
        ON CONFLICT (namespace, call_id) DO UPDATE
          SET next_seq = j0.next_seq + 1, finished = false, expires_at = NULL
          WHERE j0.session_id = $2 AND (j0.expires_at IS NULL OR j0.expires_at > ${NOW})
        RETURNING next_seq - 1 AS seq),
      e AS (INSERT INTO ${t.entries} (namespace, call_id, seq, data) SELECT $1, $3, j.seq, $4 FROM j RETURNING seq)
      SELECT (SELECT seq FROM e) AS seq, EXISTS (SELECT 1 FROM ok) AS leased`,
    journalOf: `SELECT session_id, expires_at IS NOT NULL AND expires_at <= ${NOW} AS gone
      FROM ${t.journals} WHERE namespace = $1 AND call_id = $2`,
    deleteGone: `DELETE FROM ${t.journals} WHERE namespace = $1 AND call_id = $2 AND expires_at <= ${NOW}`,
    readJournal: `SELECT j.session_id, j.finished,
        ARRAY(SELECT e.data FROM ${t.entries} e WHERE e.namespace = $1 AND e.call_id = $2 ORDER BY e.seq) AS entries
      FROM ${t.journals} j WHERE j.namespace = $1 AND j.call_id = $2
        AND (j.expires_at IS NULL OR j.expires_at > ${NOW})`,
    // $3 the last entry's JSON (or null), $4 retention ms (or null), $5 the fence's owner and $6 lease ms (or
    // null). Prunes a few journals past their retention. found: the journal is there; done: it was finished
    // (false when found: the fence no longer holds the lease).
    finishJournal: `WITH jr AS (
        SELECT session_id FROM ${t.journals} WHERE namespace = $1 AND call_id = $2
          AND (expires_at IS NULL OR expires_at > ${NOW})),
      l AS (
        UPDATE ${t.sessions} s SET lease_until = ${NOW} + $6::bigint FROM jr
        WHERE $5::text IS NOT NULL AND s.namespace = $1 AND s.session_id = jr.session_id AND s.lease_owner = $5
          AND (s.expires_at IS NULL OR s.expires_at > ${NOW})
        RETURNING 1),
      ok AS (SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM jr) AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM l))),
      j AS (
        UPDATE ${t.journals} SET finished = true, expires_at = ${NOW} + $4::bigint,
          next_seq = next_seq + CASE WHEN $3::text IS NULL THEN 0 ELSE 1 END
        WHERE namespace = $1 AND call_id = $2 AND EXISTS (SELECT 1 FROM ok)
        RETURNING next_seq),
      e AS (INSERT INTO ${t.entries} (namespace, call_id, seq, data)
        SELECT $1, $2, j.next_seq - 1, $3 FROM j WHERE $3::text IS NOT NULL),
      p AS (DELETE FROM ${t.journals} WHERE (namespace, call_id) IN (
        SELECT namespace, call_id FROM ${t.journals}
        WHERE namespace = $1 AND expires_at <= ${NOW} AND call_id <> $2 LIMIT ${PRUNE}))
      SELECT EXISTS (SELECT 1 FROM jr) AS found, EXISTS (SELECT 1 FROM ok) AS done,
        (SELECT session_id FROM jr) AS session_id`,
    listJournals: `SELECT call_id FROM ${t.journals}
      WHERE namespace = $1 AND session_id = $2 AND (NOT $3::boolean OR NOT finished)
        AND (expires_at IS NULL OR expires_at > ${NOW}) ORDER BY id`,
    // $2 after (or null), $3 limit + 1.
    unfinishedCalls: `SELECT call_id, session_id FROM ${t.journals}
      WHERE namespace = $1 AND NOT finished AND ($2::text IS NULL OR call_id > $2)
      ORDER BY call_id LIMIT $3::integer`,
    deleteJournal: `DELETE FROM ${t.journals} WHERE namespace = $1 AND call_id = $2
      RETURNING expires_at IS NULL OR expires_at > ${NOW} AS existed`,
    pruneJournals: `DELETE FROM ${t.journals} WHERE expires_at <= ${NOW} AND ($1::text IS NULL OR namespace = $1)`,
    // $1 namespace, $2 run: drops it when past its time to live, and a few other runs past theirs.
    runDropExpired: `WITH d AS (DELETE FROM ${t.runs} WHERE namespace = $1 AND run_id = $2 AND expires_at <= ${NOW})
      DELETE FROM ${t.runs} WHERE (namespace, run_id) IN (
        SELECT namespace, run_id FROM ${t.runs} WHERE namespace = $1 AND expires_at <= ${NOW} AND run_id <> $2
        LIMIT ${PRUNE})`,
    // $3 session, $4 status, $5 ttl ms, $6 the channel, $7 the notice. No row: a run of that id is there.
    runCreate: `WITH i AS (
        INSERT INTO ${t.runs} (namespace, run_id, session_id, status, last_seq, created_at, updated_at, expires_at)
        VALUES ($1, $2, $3, $4, 0, ${NOW}, ${NOW}, ${NOW} + $5::bigint)
        ON CONFLICT (namespace, run_id) DO NOTHING
        RETURNING ${RUN_COLUMNS})
      SELECT i.*, pg_notify($6, $7) IS NULL AS told FROM i`,
    runRead: `SELECT ${RUN_COLUMNS} FROM ${t.runs} WHERE namespace = $1 AND run_id = $2 AND expires_at > ${NOW}`,
    // $3 after, $4 limit: the run and its events after, read in one snapshot.
    runEvents: `SELECT ${RUN_COLUMNS},
        ARRAY(SELECT e.type FROM ${t.runEvents} e WHERE e.namespace = $1 AND e.run_id = $2 AND e.seq > $3::integer
          ORDER BY e.seq LIMIT $4::integer) AS types,
        ARRAY(SELECT e.data FROM ${t.runEvents} e WHERE e.namespace = $1 AND e.run_id = $2 AND e.seq > $3::integer
          ORDER BY e.seq LIMIT $4::integer) AS data
      FROM ${t.runs} WHERE namespace = $1 AND run_id = $2 AND expires_at > ${NOW}`,
    // $3 types, $4 ttl ms, $5 status (or null: unchanged), $6 result, $7 data, $8 the channel, $9 the notice.
    // No row: the run is gone. The row's lock orders writers of one run.
    runAppend: `WITH r AS (
        UPDATE ${t.runs} SET last_seq = last_seq + cardinality($3::text[]), updated_at = ${NOW},
          expires_at = ${NOW} + $4::bigint,
          status = COALESCE($5::text, status),
          result = CASE WHEN $5::text IS NULL THEN result ELSE $6::text END
        WHERE namespace = $1 AND run_id = $2 AND expires_at > ${NOW}
        RETURNING last_seq, cancel_requested),
      e AS (INSERT INTO ${t.runEvents} (namespace, run_id, seq, type, data)
        SELECT $1, $2, r.last_seq - cardinality($3::text[]) + t.ord::integer, t.type, t.data
        FROM r, unnest($3::text[], $7::text[]) WITH ORDINALITY AS t(type, data, ord))
      SELECT last_seq, cancel_requested, pg_notify($8, $9) IS NULL AS told FROM r`,
    // $2 session, $3 after (a run id, or null), $4 limit + 1.
    runsAfter: `SELECT ${RUN_COLUMNS} FROM ${t.runs}
      WHERE namespace = $1 AND session_id = $2 AND expires_at > ${NOW}
        AND id > COALESCE((SELECT id FROM ${t.runs} WHERE namespace = $1 AND run_id = $3::text), 0)
      ORDER BY id LIMIT $4::integer`,
    runsBefore: `SELECT ${RUN_COLUMNS} FROM ${t.runs}
      WHERE namespace = $1 AND session_id = $2 AND expires_at > ${NOW}
        AND id < COALESCE((SELECT id FROM ${t.runs} WHERE namespace = $1 AND run_id = $3::text), 9223372036854775807)
      ORDER BY id DESC LIMIT $4::integer`,
    // $3 the channel, $4 the notice. No row: no such run.
    runCancel: `UPDATE ${t.runs} SET
        cancel_requested = cancel_requested OR status IN ('queued', 'running'),
        updated_at = CASE WHEN status = 'waiting' THEN ${NOW} ELSE updated_at END,
        status = CASE WHEN status = 'waiting' THEN 'cancelled' ELSE status END
      WHERE namespace = $1 AND run_id = $2 AND expires_at > ${NOW}
      RETURNING ${RUN_COLUMNS}, pg_notify($3, $4) IS NULL AS told`,
    runDelete: `DELETE FROM ${t.runs} WHERE namespace = $1 AND run_id = $2
      RETURNING expires_at > ${NOW} AS existed, pg_notify($3, $4) IS NULL AS told`,
    pruneRuns: `DELETE FROM ${t.runs} WHERE expires_at <= ${NOW} AND ($1::text IS NULL OR namespace = $1)`,
  };
}

export type PostgresStatementName = keyof ReturnType<typeof postgresStatements>;
