import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKey } from '../../src/stores/sqlite-schema';
import { SQLiteStore } from '../../src/stores/sqlite-store';
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
    /** Resolves when the worker has printed `count` lines. */
    async waitForLines(count: number, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (lines.length < count) {
        if (child.exitCode !== null) throw new Error(`worker exited: ${stderr}`);
        if (Date.now() > deadline) throw new Error(`worker printed ${lines.length} lines: ${stderr}`);
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
        // A lease left by a killed process expires within 200 ms; then the session is ours.
        const deadline = Date.now() + 2_000;
        let lease = store.acquireSession('kill', 's', { owner: 'me', leaseMs: 5_000, knownVersion: version });
        while (!lease.acquired && Date.now() < deadline) {
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
