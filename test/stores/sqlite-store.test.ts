import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import type { LagentMessageJSON } from 'lagent-ts';
import { ConfigurationError, MemoryStore, StoreConflictError, StoreError } from 'lagent-ts';
import type { ListOptions, SessionPage, SessionStore, SessionTurn } from 'lagent-ts/stores';
import { SQLiteStore } from 'lagent-ts/stores';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { sqliteKey } from '#src/stores/sqlite-schema';
import { describeStoreContract } from './contract';
import { readWorkerMessage, workerTurn } from './sqlite-turns';

const dir = mkdtempSync(join(tmpdir(), 'lagent-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(dir, `store-${++files}.db`);

// Every store of the contract suite opens its own connection to one file, as processes sharing it would.
const contractFile = freshFile();
describeStoreContract('SQLiteStore', () => ({
  open: async (options = {}) => new SQLiteStore({ path: contractFile, ...options }),
  corrupt: async (namespace, sessionId) => {
    const raw = new Database(contractFile);
    try {
      const keys = [sqliteKey(namespace), sqliteKey(sessionId)];
      raw
        .prepare('UPDATE lagent_bases SET state = ? WHERE namespace = ? AND session_id = ?')
        .run('{"mem', ...keys);
      raw
        .prepare('UPDATE lagent_turns SET turn = ? WHERE namespace = ? AND session_id = ?')
        .run('garbage', ...keys);
    } finally {
      raw.close();
    }
  },
}));

const root = fileURLToPath(new URL('../../', import.meta.url));
const worker = fileURLToPath(new URL('./sqlite-worker.ts', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = promisify(execFile);

/** A worker process (see sqlite-worker.ts), with its output lines. */
function startWorker(args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', worker, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  let buffered = '';
  const waiters: (() => void)[] = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    stderr: () => stderr,
    /** Resolves when the worker has printed `count` lines; rejects if it exits first. */
    async waitForLines(count: number): Promise<void> {
      while (lines.length < count) {
        if (child.exitCode !== null) throw new Error(`worker exited after ${lines.length} lines: ${stderr}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
    async kill(): Promise<void> {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

const committed = (lines: string[]) =>
  lines.filter((line) => line.startsWith('committed ')).map((line) => Number(line.slice(10)));

/** Checks a session written by workerTurn: pairs in order, each made on the version before it. */
function checkWorkerSession(store: SQLiteStore, namespace: string, sessionId: string, pad = 0): number {
  const read = store.readSession(namespace, sessionId)!;
  const memory = read.state.memory ?? [];
  expect(memory).toHaveLength(2 * read.version);
  for (let v = 0; v < read.version; v++) {
    const a = readWorkerMessage(memory[2 * v]!);
    const b = readWorkerMessage(memory[2 * v + 1]!);
    expect([a.part, b.part, a.version, b.version]).toEqual(['a', 'b', v, v]);
    expect([b.who, b.k]).toEqual([a.who, a.k]);
    expect(a.pad.length + b.pad.length).toBe(2 * pad);
  }
  return read.version;
}

describe('SQLiteStore across processes', () => {
  it('two processes commit turns to one session concurrently: none lost, none interleaved, versions 1..N', async () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file });
    const perProcess = 80;
    const child = startWorker([file, 'race', 's', 'commit', 'child', String(perProcess), '5000']);
    try {
      await child.waitForLines(1);
      const mine: number[] = [];
      const owner = `parent-${process.pid}`;
      for (let k = 0; k < perProcess; k++) {
        for (;;) {
          const lease = store.acquireSession('race', 's', { owner, leaseMs: 5_000 });
          if (!lease.acquired) {
            await sleep(1);
            continue;
          }
          mine.push(
            store.commitTurn('race', 's', {
              owner,
              version: lease.version,
              turn: workerTurn('parent', k, lease.version),
            }),
          );
          break;
        }
        await sleep(0);
      }
      expect(await child.exited).toBe(0);
      const theirs = committed(child.lines);
      expect(theirs).toHaveLength(perProcess);
      expect([...mine, ...theirs].sort((x, y) => x - y)).toEqual(
        Array.from({ length: 2 * perProcess }, (_, i) => i + 1),
      );
      // The two really raced: each committed between turns of the other.
      expect(Math.max(...theirs)).toBeGreaterThan(Math.min(...mine));
      expect(Math.max(...mine)).toBeGreaterThan(Math.min(...theirs));
      expect(checkWorkerSession(store, 'race', 's')).toBe(2 * perProcess);
      const memory = store.readSession('race', 's')!.state.memory!;
      for (const who of ['parent', 'child']) {
        const ks = memory
          .map(readWorkerMessage)
          .filter((m) => m.who === who && m.part === 'a')
          .map((m) => m.k);
        expect(ks).toEqual(Array.from({ length: perProcess }, (_, i) => i));
      }
    } finally {
      await child.kill();
      store.close();
    }
  }, 30_000);

  it('two processes, each committing to 4 sessions at once through grouped writes: versions 1..N, none lost, none interleaved', async () => {
    const file = freshFile();
    const perLane = 15;
    const workers = ['x', 'y'].map((who) =>
      startWorker([file, 'grouped', 's', 'grouped', who, String(perLane), '5000']),
    );
    const store = new SQLiteStore({ path: file });
    try {
      for (const worker of workers) await worker.waitForLines(1);
      writeFileSync(`${file}.go`, '');
      for (const worker of workers) expect(await worker.exited, worker.stderr()).toBe(0);
      const lanes = workers.map((worker) =>
        [0, 1, 2, 3].map((lane) =>
          worker.lines
            .filter((line) => line.startsWith(`lane ${lane} `))
            .map((line) => Number(line.split(' ')[2])),
        ),
      ) as [number[][], number[][]];
      let raced = 0;
      for (let lane = 0; lane < 4; lane++) {
        const [xs, ys] = [lanes[0][lane]!, lanes[1][lane]!];
        expect([...xs, ...ys].sort((a, b) => a - b)).toEqual(
          Array.from({ length: 2 * perLane }, (_, i) => i + 1),
        );
        if (Math.max(...xs) > Math.min(...ys) && Math.max(...ys) > Math.min(...xs)) raced++;
        expect(checkWorkerSession(store, 'grouped', `s${lane}`)).toBe(2 * perLane);
        const memory = store.readSession('grouped', `s${lane}`)!.state.memory!.map(readWorkerMessage);
        for (const who of ['x', 'y']) {
          const ks = memory.filter((m) => m.who === who && m.part === 'a').map((m) => m.k);
          expect(ks).toEqual(Array.from({ length: perLane }, (_, i) => i));
        }
      }
      // The two processes really took turns on the sessions.
      expect(raced).toBeGreaterThan(0);
    } finally {
      for (const worker of workers) await worker.kill();
      store.close();
    }
  }, 30_000);

  it('a process killed -9 while holding a lease: the session is busy until the lease expires, then taken', async () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file });
    const holder = startWorker([file, 'held', 's', 'hold', 'holder', '0', '300']);
    try {
      await holder.waitForLines(1);
      expect(holder.lines[0]).toBe('held');
      await holder.kill();
      const busy = store.acquireSession('held', 's', { owner: 'me', leaseMs: 5_000 });
      expect(busy.acquired).toBe(false);
      if (busy.acquired) return;
      expect(busy.until - Date.now()).toBeLessThanOrEqual(300);
      await sleep(Math.max(0, busy.until - Date.now()) + 20);
      const lease = store.acquireSession('held', 's', { owner: 'me', leaseMs: 5_000 });
      expect(lease).toEqual({ acquired: true, version: 0, state: {} });
      expect(store.commitTurn('held', 's', { owner: 'me', version: 0, turn: workerTurn('me', 0, 0) })).toBe(
        1,
      );
      expect(checkWorkerSession(store, 'held', 's')).toBe(1);
    } finally {
      await holder.kill();
      store.close();
    }
  }, 30_000);

  it('processes killed -9 mid-commit leave the file readable at exactly a committed turn, and the session is taken after', async () => {
    const file = freshFile();
    const pad = 100_000;
    const churners = [0, 1, 2].map((i) => startWorker([file, 'kill', 's', 'churn', `w${i}`, '0', '200']));
    try {
      // Each is killed at its own moment after it has committed: some mid-transaction, some holding the lease.
      await Promise.all(
        churners.map(async (churner, i) => {
          await churner.waitForLines(2 + i);
          await sleep(Math.floor(Math.random() * 15));
          await churner.kill();
        }),
      );
      const reported = Math.max(...churners.flatMap((churner) => committed(churner.lines)));
      const raw = new Database(file);
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
      raw.close();
      const store = new SQLiteStore({ path: file });
      try {
        const version = checkWorkerSession(store, 'kill', 's', pad);
        // At least every reported commit; at most one unreported commit per killed process.
        expect(version).toBeGreaterThanOrEqual(reported);
        expect(version).toBeLessThanOrEqual(reported + churners.length);
        // A lease left by a killed process (200 ms, renewed while it lived) ends at most one lease from now
        // (SQLite's clock is this machine's); then the session is ours.
        let lease = store.acquireSession('kill', 's', { owner: 'me', leaseMs: 5_000, knownVersion: version });
        if (!lease.acquired) expect(lease.until - Date.now()).toBeLessThanOrEqual(200);
        while (!lease.acquired) {
          await sleep(20);
          lease = store.acquireSession('kill', 's', { owner: 'me', leaseMs: 5_000, knownVersion: version });
        }
        expect(lease).toEqual({ acquired: true, version, state: undefined });
        expect(
          store.commitTurn('kill', 's', { owner: 'me', version, turn: workerTurn('me', 0, version, pad) }),
        ).toBe(version + 1);
        expect(checkWorkerSession(store, 'kill', 's', pad)).toBe(version + 1);
      } finally {
        store.close();
      }
    } finally {
      await Promise.all(churners.map((churner) => churner.kill()));
    }
  }, 30_000);

  it('without better-sqlite3 the entry imports, and the constructor says what to install', async () => {
    const fixture = fileURLToPath(new URL('./sqlite-missing-driver.ts', import.meta.url));
    const { stdout } = await run(process.execPath, ['--import', 'tsx', fixture], {
      cwd: root,
      timeout: 30_000,
    });
    expect(stdout.trim()).toMatch(
      /^ConfigurationError: install better-sqlite3 to use SQLiteStore \(npm install better-sqlite3\): Cannot find module 'better-sqlite3'/,
    );
  }, 30_000);
});

describe('SQLiteStore', () => {
  const message = (content: string): LagentMessageJSON => ({
    sender: 'user',
    content,
    formatted: null,
    extra_info: null,
    type: null,
    receiver: null,
    stream_state: 0,
  });

  it('folds turns into a base every 32 turns: the same state as MemoryStore, at most 32 turn rows', () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file });
    const reference = new MemoryStore();
    try {
      for (let v = 0; v < 100; v++) {
        const turn =
          v % 10 === 9
            ? { replace: { memory: [message(`reset ${v}`)] }, append: { other: [message(`o${v}`)] } }
            : { append: { memory: [message(`m${v}`)], [`path${v % 3}`]: [message(`p${v}`)] } };
        for (const s of [store, reference]) {
          s.acquireSession('ns', 's', { owner: 'o', leaseMs: 10_000 });
          expect(s.commitTurn('ns', 's', { owner: 'o', version: v, turn })).toBe(v + 1);
        }
      }
      expect(store.readSession('ns', 's')?.state).toEqual(reference.readSession('ns', 's')?.state);
      const lease = store.acquireSession('ns', 's', { owner: 'o', leaseMs: 10_000 });
      expect(lease.acquired && lease.state).toEqual(reference.readSession('ns', 's')?.state);
      const raw = new Database(file, { readonly: true });
      const turns = raw.prepare('SELECT count(*) AS n FROM lagent_turns').get() as { n: number };
      raw.close();
      expect(turns.n).toBeLessThanOrEqual(32);
    } finally {
      store.close();
    }
  });

  it('a corrupted base state names its session; other sessions stay readable', () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file });
    try {
      for (const id of ['good', 'bad']) {
        for (let v = 0; v < 40; v++) {
          store.acquireSession('ns', id, { owner: 'o', leaseMs: 10_000 });
          store.commitTurn('ns', id, {
            owner: 'o',
            version: v,
            turn: { append: { memory: [message(`${v}`)] } },
          });
        }
      }
      const raw = new Database(file);
      raw
        .prepare('UPDATE lagent_bases SET state = ? WHERE session_id = ?')
        .run('{"memory": 3}', sqliteKey('bad'));
      raw.close();
      expect(() => store.readSession('ns', 'bad')).toThrow(
        /session "bad" of "ns" cannot be read: its base state/,
      );
      expect(store.readSession('ns', 'good')?.state.memory).toHaveLength(40);
    } finally {
      store.close();
    }
  });

  it('stores any key exactly (lone surrogates too) and lists in the same order as MemoryStore', () => {
    const store = new SQLiteStore({ path: freshFile() });
    const reference = new MemoryStore();
    const ids = [
      '\uD800',
      '\uDBFF',
      'a\uD800b',
      '😀',
      '\uFF01',
      'é',
      'e\u0301',
      "'; DROP TABLE x; --",
      '%_',
      'a',
    ];
    try {
      for (const s of [store, reference]) {
        for (const id of ids) {
          s.acquireSession('名前\u0000空間', id, { owner: 'o', leaseMs: 10_000 });
          s.commitTurn('名前\u0000空間', id, {
            owner: 'o',
            version: 0,
            turn: { append: { memory: [message(id)] } },
          });
        }
      }
      // Pages as MemoryStore gives them (ids and next; times differ by when each was written).
      const page = (from: SessionStore, options: ListOptions) => {
        const { sessions, next } = from.listSessions('名前\u0000空間', options) as SessionPage;
        return { ids: sessions.map((session) => session.sessionId), next };
      };
      expect(page(store, { limit: 3 })).toEqual(page(reference, { limit: 3 }));
      const all = store.listSessions('名前\u0000空間').sessions.map((session) => session.sessionId);
      expect(all).toEqual([...ids].sort());
      for (const id of ids)
        expect(store.readSession('名前\u0000空間', id)?.state.memory?.[0]?.content).toBe(id);
      expect(page(store, { after: '\uD800', limit: 2 })).toEqual(
        page(reference, { after: '\uD800', limit: 2 }),
      );
      store.appendJournal('ns', '\uDBFF', '\uD800', 1);
      expect(store.readJournal('ns', '\uD800')).toMatchObject({ callId: '\uD800', sessionId: '\uDBFF' });
      expect(store.readJournal('ns', '\uDBFF')).toBeUndefined();
    } finally {
      store.close();
    }
  });

  it("finds a session's unfinished journals by an index of its own; a database of schema 1 gets it on opening", () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file });
    for (let i = 0; i < 50; i++) {
      store.appendJournal('ns', 's', `call-${i}`, { kind: 'begin' });
      if (i !== 7) store.finishJournal('ns', `call-${i}`);
    }
    expect(store.listJournals('ns', 's', { unfinished: true })).toEqual(['call-7']);
    store.close();
    const plan = (raw: InstanceType<typeof Database>) =>
      (
        raw
          .prepare(
            'EXPLAIN QUERY PLAN SELECT call_id FROM lagent_journals WHERE namespace = ? AND session_id = ? AND finished = 0 ORDER BY id',
          )
          .all('ns', 's') as { detail: string }[]
      )
        .map((row) => row.detail)
        .join(' ');
    const raw = new Database(file);
    expect(plan(raw)).toContain('lagent_journals_unfinished');
    // As a database of schema 1 was: no such index (nor what schemas 3 and 4 added).
    raw.exec('DROP TABLE lagent_run_events');
    raw.exec('DROP TABLE lagent_runs');
    raw.exec('DROP INDEX lagent_journals_unfinished');
    raw.exec('DROP INDEX lagent_journals_expiry');
    raw.exec('DROP INDEX lagent_journals_unfinished_calls');
    raw.exec('ALTER TABLE lagent_journals DROP COLUMN expires_at');
    raw.exec('ALTER TABLE lagent_sessions DROP COLUMN last_turn_id');
    raw.prepare("UPDATE lagent_meta SET value = 1 WHERE key = 'schema_version'").run();
    raw.close();
    const upgraded = new SQLiteStore({ path: file });
    expect(upgraded.listJournals('ns', 's', { unfinished: true })).toEqual(['call-7']);
    upgraded.close();
    const after = new Database(file);
    expect(plan(after)).toContain('lagent_journals_unfinished');
    expect(after.prepare("SELECT value FROM lagent_meta WHERE key = 'schema_version'").get()).toEqual({
      value: 4,
    });
    after.close();
  });

  it("leases run on the database's clock: a process whose own clock is a minute ahead cannot take a live one", () => {
    const file = freshFile();
    const holder = new SQLiteStore({ path: file });
    expect(holder.acquireSession('ns', 's', { owner: 'holder', leaseMs: 10_000 }).acquired).toBe(true);
    const ahead = new SQLiteStore({ path: file });
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 60_000);
      const busy = ahead.acquireSession('ns', 's', { owner: 'ahead', leaseMs: 10_000 });
      expect(busy.acquired).toBe(false);
      // `until` is on the database's clock: about 10 s from the real now.
      if (!busy.acquired) expect(busy.until).toBeLessThan(Date.now() - 30_000);
      expect(ahead.commitTurn.bind(ahead, 'ns', 's', { owner: 'ahead', version: 0, turn: {} })).toThrow(
        StoreConflictError,
      );
    } finally {
      vi.useRealTimers();
      holder.close();
      ahead.close();
    }
  });

  it('opens while another connection holds a write transaction (a frozen process): reads work, writes wait for it', () => {
    const file = freshFile();
    new SQLiteStore({ path: file }).close();
    const frozen = new Database(file);
    frozen.prepare('BEGIN IMMEDIATE').run();
    try {
      const store = new SQLiteStore({ path: file, busyTimeoutMs: 50 });
      expect(store.readSession('ns', 's')).toBeUndefined();
      expect(() => store.acquireSession('ns', 's', { owner: 'a', leaseMs: 1000 })).toThrow(
        /database is locked/,
      );
      store.close();
    } finally {
      frozen.prepare('ROLLBACK').run();
      frozen.close();
    }
  });

  it('refuses a database written by a newer schema, and keeps what this one wrote when reopened', () => {
    const file = freshFile();
    const first = new SQLiteStore({ path: file });
    first.acquireSession('ns', 's', { owner: 'o', leaseMs: 10_000 });
    first.commitTurn('ns', 's', { owner: 'o', version: 0, turn: { append: { memory: [message('kept')] } } });
    first.close();
    const again = new SQLiteStore({ path: file });
    expect(again.readSession('ns', 's')?.state.memory).toEqual([message('kept')]);
    again.close();

    const raw = new Database(file);
    raw.prepare("UPDATE lagent_meta SET value = 99 WHERE key = 'schema_version'").run();
    raw.close();
    expect(() => new SQLiteStore({ path: file })).toThrow(StoreError);
    expect(() => new SQLiteStore({ path: file })).toThrow(/schema version 99, written by a newer lagent-ts/);
    // Another prefix in the same file has its own tables and version.
    const other = new SQLiteStore({ path: file, tablePrefix: 'app2_' });
    expect(other.readSession('ns', 's')).toBeUndefined();
    other.close();
  });

  it('checks its options: table prefix, busy timeout, path or database', () => {
    expect(() => new SQLiteStore({ path: freshFile(), tablePrefix: 'x"; DROP' })).toThrow(ConfigurationError);
    expect(() => new SQLiteStore({ path: freshFile(), busyTimeoutMs: -1 })).toThrow(ConfigurationError);
    expect(() => new SQLiteStore({ path: '' })).toThrow(ConfigurationError);
    expect(() => new SQLiteStore({ database: {} })).toThrow(ConfigurationError);
    expect(() => new SQLiteStore({ path: join(dir, 'missing', 'dir', 'x.db') })).toThrow(
      /SQLiteStore\(.*x\.db\): open failed: /,
    );
  });

  it("uses a caller's database as it is, and leaves it open on close", () => {
    const db = new Database(':memory:');
    const store = new SQLiteStore({ database: db, tablePrefix: 'mine_' });
    expect(store.description).toBe('SQLiteStore(:memory:)');
    store.acquireSession('ns', 's', { owner: 'o', leaseMs: 10_000 });
    store.commitTurn('ns', 's', { owner: 'o', version: 0, turn: { append: { memory: [message('x')] } } });
    store.close();
    expect(db.open).toBe(true);
    expect((db.prepare('SELECT count(*) AS n FROM mine_turns').get() as { n: number }).n).toBe(1);
    db.close();
  });

  it('a commit that fails changes nothing: a turn that is not JSON, a database locked past the busy timeout', () => {
    const file = freshFile();
    const store = new SQLiteStore({ path: file, busyTimeoutMs: 100 });
    try {
      store.acquireSession('ns', 's', { owner: 'o', leaseMs: 10_000 });
      const bad = { append: { memory: [{ ...message('x'), extra_info: 1n }] } } as unknown as SessionTurn;
      expect(() => store.commitTurn('ns', 's', { owner: 'o', version: 0, turn: bad })).toThrow(
        /commitTurn "s" of "ns" failed: .*BigInt/,
      );
      const raw = new Database(file);
      raw.exec('BEGIN IMMEDIATE');
      let error: unknown;
      try {
        store.commitTurn('ns', 's', { owner: 'o', version: 0, turn: { append: { memory: [message('1')] } } });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(StoreError);
      expect(error).not.toBeInstanceOf(StoreConflictError);
      expect((error as StoreError).message).toMatch(/commitTurn "s" of "ns" failed: database is locked/);
      expect((error as StoreError).sessionId).toBe('s');
      raw.exec('ROLLBACK');
      raw.close();
      // The lease is still held and the version unchanged: the same commit now goes through.
      expect(
        store.commitTurn('ns', 's', { owner: 'o', version: 0, turn: { append: { memory: [message('1')] } } }),
      ).toBe(1);
      expect(store.readSession('ns', 's')?.state).toEqual({ memory: [message('1')] });
    } finally {
      store.close();
    }
  });
});
