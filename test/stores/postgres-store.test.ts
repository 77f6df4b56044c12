import { fileURLToPath } from 'node:url';
import { AgentMessage, AsyncAgent, ConfigurationError, StoreConflictError, StoreError } from 'lagent-ts';
import type { SessionStore, SessionTurn } from 'lagent-ts/stores';
import { PostgresStore, type PostgresStoreOptions } from 'lagent-ts/stores';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, processesMentioning, runProcess, startProcess } from '../helpers/processes';
import { describeStoreContract } from './contract';
import { type PostgresServer, postgresBinaries, startPostgres } from './postgres-server';

const binaries = postgresBinaries();
if ('missing' in binaries) {
  console.warn(
    `PostgresStore tests skipped: ${binaries.missing} (scripts/system-packages.sh installs postgresql)`,
  );
}

const worker = fileURLToPath(new URL('./fixtures/postgres-worker.ts', import.meta.url));
const withoutPg = fileURLToPath(new URL('./fixtures/without-pg.mjs', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const message = (content: string) =>
  new AgentMessage({ sender: 'user', content }).toJSON({ format: 'lagent' });
let counter = 0;
const fresh = (label: string) => `${label}-${++counter}`;

describe.runIf('bin' in binaries)('PostgresStore', () => {
  let server: PostgresServer;
  let admin: pg.Client;
  const opened: SessionStore[] = [];
  const open = (options: Partial<PostgresStoreOptions> = {}) => {
    const store = new PostgresStore({
      connectionString: server.connectionString,
      timeoutMs: 2000,
      ...options,
    } as PostgresStoreOptions);
    opened.push(store);
    return store;
  };

  beforeAll(async () => {
    server = await startPostgres((binaries as { bin: string }).bin);
    admin = new pg.Client({ connectionString: server.connectionString });
    admin.on('error', () => {});
    await admin.connect();
  }, 60_000);

  afterAll(async () => {
    await admin?.end().catch(() => {});
    for (const store of opened) await store.close();
    await server?.close();
    // No server process is left behind.
    if (server)
      expect(await eventually(() => processesMentioning(server.name).length === 0, 5000)).toBe(true);
  }, 30_000);

  describeStoreContract('PostgresStore', () => ({
    open: async (options = {}) => open(options),
    corrupt: async (namespace, sessionId) => {
      await admin.query(
        `UPDATE lagent_sessions SET base = 'not json {' WHERE namespace = $1 AND session_id = $2`,
        [namespace, sessionId],
      );
    },
    stopServer: () => server.stop(),
    restartServer: async () => {
      await server.start();
      if ((await admin.query('SELECT 1').catch(() => undefined)) === undefined) {
        admin = new pg.Client({ connectionString: server.connectionString });
        admin.on('error', () => {});
        await admin.connect();
      }
    },
  }));

  it('creates its tables once when several stores open at the same time, and refuses a newer schema', async () => {
    const stores = Array.from({ length: 6 }, () => open({ tablePrefix: 'race_', schema: 'lagent_test' }));
    await Promise.all(stores.map((store) => store.listSessions('ns')));
    const { rows } = await admin.query(
      `SELECT value FROM lagent_test.race_meta WHERE key = 'schema_version'`,
    );
    expect(rows).toEqual([{ value: '4' }]);

    await admin.query(`UPDATE lagent_test.race_meta SET value = '99' WHERE key = 'schema_version'`);
    const newer = open({ tablePrefix: 'race_', schema: 'lagent_test' }).readSession('ns', 's');
    await expect(newer).rejects.toBeInstanceOf(StoreError);
    await expect(newer).rejects.toThrow(
      /schema version 99, newer than this version of lagent-ts knows \(4\)/,
    );
    // The tables were not touched.
    expect((await admin.query(`SELECT value FROM lagent_test.race_meta`)).rows).toEqual([{ value: '99' }]);
  });

  it('keeps apps with different table prefixes apart', async () => {
    const one = open({ tablePrefix: 'one_' });
    const two = open({ tablePrefix: 'two_' });
    await one.acquireSession('ns', 's', { owner: 'a', leaseMs: 1000 });
    await one.commitTurn('ns', 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } });
    expect(await two.readSession('ns', 's')).toBeUndefined();
    expect((await one.readSession('ns', 's'))?.version).toBe(1);
  });

  it('folds turns into a new base: reads stay bounded, the state is unchanged', async () => {
    const store = open();
    const ns = fresh('fold');
    const expected: unknown[] = [];
    for (let i = 0; i < 80; i++) {
      const lease = await store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000, knownVersion: i });
      expect(lease).toEqual({ acquired: true, version: i, state: undefined });
      const turn: SessionTurn =
        i === 50
          ? { replace: { memory: [message('reset')] } }
          : { append: { memory: [message(`${i}`)], [`m${i % 3}`]: [message(`x${i}`)] } };
      if (i === 50) expected.splice(0, expected.length, message('reset'));
      else expected.push(message(`${i}`));
      expect(await store.commitTurn(ns, 's', { owner: 'a', version: i, turn })).toBe(i + 1);
    }
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM lagent_turns WHERE namespace = $1', [
      ns,
    ]);
    expect(rows[0].n).toBeLessThanOrEqual(32);
    const read = await open().readSession(ns, 's');
    expect(read?.version).toBe(80);
    expect(read?.state.memory).toEqual(expected);
    const fresh80 = await open().acquireSession(ns, 's', { owner: 'b', leaseMs: 1000 });
    expect(fresh80.acquired && fresh80.state?.memory).toEqual(expected);
  });

  it('an acquire that waited for a commit in flight gets the state with that commit', async () => {
    const store = open();
    const ns = fresh('inflight');
    await store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 });
    await store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } });
    // A commit holding the session's row: the acquire below waits for it, then sees its version.
    const writer = new pg.Client({ connectionString: server.connectionString });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(`UPDATE lagent_sessions SET version = 2 WHERE namespace = $1 AND session_id = $2`, [
        ns,
        's',
      ]);
      await writer.query(
        `INSERT INTO lagent_turns (namespace, session_id, version, turn) VALUES ($1, $2, 2, $3)`,
        [ns, 's', JSON.stringify({ append: { memory: [message('2')] } })],
      );
      const acquiring = store.acquireSession(ns, 's', { owner: 'b', leaseMs: 10_000 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await writer.query('COMMIT');
      expect(await acquiring).toEqual({
        acquired: true,
        version: 2,
        state: { memory: [message('1'), message('2')] },
      });
    } finally {
      await writer.end();
    }
  });

  it('stores keys of any Unicode up to 1,024 characters: as they are, or escaped when PostgreSQL text cannot hold them', async () => {
    const store = open();
    const ns = `ns '"\\%_ ${'名'.repeat(1000)}`;
    const ids = ["it's", 'a"b', '%', '_', '\\', '😀'.repeat(512), 'x'.repeat(1024), '\u00e9', 'e\u0301'];
    for (const id of ids) {
      await store.acquireSession(ns, id, { owner: 'a', leaseMs: 1000 });
      await store.commitTurn(ns, id, { owner: 'a', version: 0, turn: { append: { memory: [message(id)] } } });
    }
    for (const id of ids) expect((await store.readSession(ns, id))?.state.memory).toEqual([message(id)]);
    const listed = (await store.listSessions(ns)).sessions.map((session) => session.sessionId);
    expect(new Set(listed)).toEqual(new Set(ids));
    expect(await store.readSession(ns, '%x')).toBeUndefined();
    // NUL, lone surrogates and the escape's own mark: kept exactly, each apart from the others.
    const odd = ['a\u0000b', 'a\ud800', '\udc00', '\u0001', '\u00010061', 'a'];
    for (const id of odd) {
      await store.acquireSession(ns, id, { owner: 'a', leaseMs: 1000 });
      await store.commitTurn(ns, id, { owner: 'a', version: 0, turn: { append: { memory: [message(id)] } } });
    }
    for (const id of odd) expect((await store.readSession(ns, id))?.state.memory).toEqual([message(id)]);
    const { rows } = await admin.query('SELECT session_id FROM lagent_sessions WHERE session_id = $1', [
      "it's",
    ]);
    expect(rows).toEqual([{ session_id: "it's" }]);
  });

  it('a commit held past timeoutMs is checked before the call reports failure: the turn lands once, the call succeeds', async () => {
    const store = open({ timeoutMs: 200 });
    const ns = fresh('held');
    const locker = new pg.Client({ connectionString: server.connectionString });
    await locker.connect();
    /** Another connection holds the session's row for 600 ms once the model has answered. */
    class Paying extends AsyncAgent {
      override async forward(messages: AgentMessage[]): Promise<string> {
        await locker.query('BEGIN');
        await locker.query('SELECT 1 FROM lagent_sessions WHERE namespace = $1 FOR UPDATE', [ns]);
        setTimeout(() => void locker.query('COMMIT'), 600);
        return `paid ${String(messages.at(-1)?.content)}`;
      }
    }
    const agent = new Paying({ memory: { store, namespace: ns } });
    try {
      expect((await agent.call('bob $80', { sessionId: 's' })).content).toBe('paid bob $80');
      const read = await store.readSession(ns, 's');
      expect(read?.version).toBe(1);
      expect(read?.state.memory?.map((m) => m.content)).toEqual(['bob $80', 'paid bob $80']);
    } finally {
      await locker.end();
    }
  }, 30_000);

  it('a failed commit writes nothing; a turn JSON cannot hold is a StoreError', async () => {
    const store = open();
    const ns = fresh('atomic');
    await store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const bad = store.commitTurn(ns, 's', {
      owner: 'a',
      version: 0,
      turn: { append: { memory: [{ role: 'user', content: cyclic } as never] } },
      release: false,
    });
    await expect(bad).rejects.toBeInstanceOf(StoreError);
    await expect(bad).rejects.not.toBeInstanceOf(StoreConflictError);
    await expect(
      store.commitTurn(ns, 's', { owner: 'b', version: 0, turn: { append: { memory: [message('x')] } } }),
    ).rejects.toThrow(/no longer leased/);
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM lagent_turns WHERE namespace = $1', [
      ns,
    ]);
    expect(rows[0].n).toBe(0);
    expect(
      await store.commitTurn(ns, 's', {
        owner: 'a',
        version: 0,
        turn: { append: { memory: [message('1')] } },
      }),
    ).toBe(1);
  });

  it('an acquire of a session it cannot read takes no lease', async () => {
    const store = open();
    const ns = fresh('unreadable');
    await store.acquireSession(ns, 's', { owner: 'a', leaseMs: 10_000 });
    await store.commitTurn(ns, 's', { owner: 'a', version: 0, turn: { append: { memory: [message('1')] } } });
    await admin.query(`UPDATE lagent_turns SET turn = '{"append": [1]}' WHERE namespace = $1`, [ns]);
    await expect(store.acquireSession(ns, 's', { owner: 'b', leaseMs: 10_000 })).rejects.toThrow(
      /session "s" of "unreadable-\d+" cannot be read/,
    );
    const { rows } = await admin.query('SELECT lease_owner FROM lagent_sessions WHERE namespace = $1', [ns]);
    expect(rows).toEqual([{ lease_owner: null }]);
  });

  it('fails while the server is down (no waiting for it), naming the store, the operation and the session', async () => {
    const store = open();
    const ns = fresh('down');
    await store.listSessions(ns);
    await server.stop();
    try {
      const failed = store.acquireSession(ns, 'bob', { owner: 'a', leaseMs: 1000 });
      await expect(failed).rejects.toBeInstanceOf(StoreError);
      await expect(failed).rejects.toThrow(
        new RegExp(
          `^PostgresStore\\(postgres://postgres@127.0.0.1:${server.port}/postgres\\): acquireSession "bob" of "${ns}" failed: `,
        ),
      );
    } finally {
      await server.start();
    }
    expect((await store.acquireSession(ns, 'bob', { owner: 'a', leaseMs: 1000 })).acquired).toBe(true);
  }, 30_000);

  it('does not show a password in its description', () => {
    const store = new PostgresStore({
      connectionString: 'postgres://app:secret@db.example:5432/app?sslmode=require',
    });
    expect(store.description).toBe('PostgresStore(postgres://app:***@db.example:5432/app)');
    expect(() => new PostgresStore({ connectionString: 'x', tablePrefix: 'a;b' })).toThrow(
      ConfigurationError,
    );
  });

  it('two processes committing to one session: no turn lost or interleaved, versions without gaps', async () => {
    const store = open();
    const ns = fresh('race');
    const count = 40;
    const child = runProcess(
      process.execPath,
      ['--import', 'tsx', worker, 'race', server.connectionString, ns, 's', 'child', String(count)],
      { cwd: root, timeoutMs: 60_000 },
    );
    for (let i = 0; i < count; i++) {
      for (;;) {
        const lease = await store.acquireSession(ns, 's', { owner: 'parent', leaseMs: 5000 });
        if (!lease.acquired) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
          continue;
        }
        try {
          await store.commitTurn(ns, 's', {
            owner: 'parent',
            version: lease.version,
            turn: { append: { memory: [message(`parent:${i}:a`), message(`parent:${i}:b`)] } },
          });
          break;
        } catch (error) {
          if (!(error instanceof StoreConflictError)) throw error;
        }
      }
    }
    const result = await child;
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('done');
    const read = await store.readSession(ns, 's');
    expect(read?.version).toBe(2 * count);
    const contents = read!.state.memory!.map((entry) => entry.content as string);
    expect(contents).toHaveLength(4 * count);
    const next = { parent: 0, child: 0 };
    for (let i = 0; i < contents.length; i += 2) {
      const [who, n, part] = contents[i]!.split(':') as ['parent' | 'child', string, string];
      expect(part).toBe('a');
      expect(contents[i + 1]).toBe(`${who}:${n}:b`);
      expect(Number(n)).toBe(next[who]++);
    }
    expect(next).toEqual({ parent: count, child: count });
  }, 60_000);

  it('a process killed (-9) holding the lease, mid-commit: nothing half-written, the lease expires, another takes over', async () => {
    const store = open();
    const trials = Array.from({ length: 3 }, async (_, trial) => {
      const ns = fresh('killed');
      const holder = await startProcess(
        process.execPath,
        ['--import', 'tsx', worker, 'hold', server.connectionString, ns, 's', '800'],
        new RegExp(`^committed ${5 + trial * 7}$`),
        { cwd: root, timeoutMs: 30_000 },
      );
      await holder.stop('SIGKILL');
      const busy = await store.acquireSession(ns, 's', { owner: 'next', leaseMs: 5000 });
      expect(busy.acquired).toBe(false);
      // The dead holder's lease (800 ms, renewed while it lived) ends at most one lease from now (the server's
      // clock is this machine's): then the session is ours.
      if (!busy.acquired) expect(busy.until - Date.now()).toBeLessThanOrEqual(800);
      let lease = busy;
      while (!lease.acquired) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        lease = await store.acquireSession(ns, 's', { owner: 'next', leaseMs: 5000 });
      }
      // Every committed turn is whole: version V holds exactly V turns of two messages, in order.
      const contents = lease.state!.memory!.map((entry) => entry.content);
      expect(contents).toEqual(
        Array.from({ length: lease.version }, (_, i) => [`holder:${i}:a`, `holder:${i}:b`]).flat(),
      );
      expect(lease.version).toBeGreaterThanOrEqual(5 + trial * 7);
      expect(
        await store.commitTurn(ns, 's', {
          owner: 'next',
          version: lease.version,
          turn: { append: { memory: [message('next')] } },
        }),
      ).toBe(lease.version + 1);
    });
    await Promise.all(trials);
  }, 60_000);

  it('without pg installed: a ConfigurationError saying what to install, on first use', async () => {
    const result = await runProcess(process.execPath, ['--import', 'tsx', withoutPg], {
      cwd: root,
      timeoutMs: 60_000,
    });
    expect(result.stdout.trim()).toBe(
      "ConfigurationError: install pg to use PostgresStore (npm install pg): Cannot find package 'pg'",
    );
  }, 70_000);
});
