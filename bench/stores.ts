import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HTTPAgentServer } from '../src/distributed/index';
import { Agent, AsyncAgent } from '../src/index';
import { AgentMessage } from '../src/schema/agent-message';
import { PostgresStore } from '../src/stores/postgres-store';
import { RedisStore } from '../src/stores/redis-store';
import { SQLiteStore } from '../src/stores/sqlite-store';
import type { SessionStore } from '../src/stores/types';
import { AsyncMockLLM, MockLLM } from '../src/testing/index';
import { hasRedisServer, startRedis } from '../test/distributed/queue/redis-server';
import { postgresBinaries, startPostgres } from '../test/stores/postgres-server';
import { runLoad } from './load';
import type { Report, Suite } from './report';

/**
 * Sessions kept in a store (`memory: { store }`), on a zero-latency mock model: what a store adds to a turn
 * next to the in-memory default (p50, both measured in this run, taking turns); HTTPAgentServer's
 * throughput with SQLite next to in memory; and an agent working through 100,000 sessions stored in SQLite
 * while keeping 1,000 in memory (its heap and RSS should stay flat).
 *
 * Redis and PostgreSQL are real servers this suite starts and stops (skipped, with a note, when they are not
 * installed). The machine's other load shows up in every figure; the added cost is the difference of two
 * medians measured alternately, so slow drift affects both sides alike.
 */

const reply = () => 'ok';
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const sortedCopy = (values: number[]) => values.slice().sort((a, b) => a - b);
const p50 = (values: number[]) => quantile(sortedCopy(values), 0.5);

/** One way of running a turn: its name and a call that takes a session id (µs samples are collected). */
interface Contender {
  label: string;
  call: (sessionId: string) => unknown;
  samples: number[];
}

async function timeOne(contender: Contender, sessionId: string): Promise<void> {
  const started = performance.now();
  const done = contender.call(sessionId);
  if (done instanceof Promise) await done;
  contender.samples.push((performance.now() - started) * 1000);
}

/**
 * Runs `rounds` rounds; in each, every contender in turn makes `perRound` calls on the sessions `session`
 * names (contender, round, index). The first round warms up and is not kept.
 */
async function alternate(
  contenders: Contender[],
  rounds: number,
  perRound: number,
  session: (round: number, index: number) => string,
): Promise<void> {
  for (let round = 0; round <= rounds; round++) {
    for (const contender of contenders) {
      const kept = contender.samples.length;
      for (let i = 0; i < perRound; i++) await timeOne(contender, session(round, i));
      if (round === 0) contender.samples.length = kept;
    }
  }
}

const asyncAgent = (name: string, store?: SessionStore) =>
  new AsyncAgent({
    name,
    llm: new AsyncMockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
    memory: store ? { store } : {},
  });

const syncAgent = (name: string, store?: SessionStore) =>
  new Agent({
    name,
    llm: new MockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
    memory: store ? { store } : {},
  });

interface Servers {
  redis?: { store: RedisStore; stop: () => Promise<void> } | { missing: string };
  postgres?: { store: PostgresStore; stop: () => Promise<void> } | { missing: string };
}

async function startServers(): Promise<Servers> {
  const servers: Servers = {};
  if (await hasRedisServer()) {
    const server = await startRedis();
    const store = new RedisStore({ url: server.url, prefix: 'bench' });
    servers.redis = {
      store,
      stop: async () => {
        await store.close();
        await server.close();
      },
    };
  } else servers.redis = { missing: 'redis-server not found' };
  const binaries = postgresBinaries();
  if ('bin' in binaries) {
    try {
      const server = await startPostgres(binaries.bin);
      const store = new PostgresStore({ connectionString: server.connectionString });
      servers.postgres = {
        store,
        stop: async () => {
          await store.close();
          await server.close();
        },
      };
    } catch (error) {
      servers.postgres = { missing: `PostgreSQL did not start: ${String(error).slice(0, 200)}` };
    }
  } else servers.postgres = { missing: binaries.missing };
  return servers;
}

/** p50 of one store's own acquire + commit of a one-message-pair turn (no agent), µs. */
async function storeAlone(store: SessionStore, namespace: string, count: number): Promise<number> {
  const messages = [
    new AgentMessage({ sender: 'user', content: 'hi' }).toJSON({ format: 'lagent' }),
    new AgentMessage({ sender: 'assistant', content: 'ok' }).toJSON({ format: 'lagent' }),
  ];
  const samples: number[] = [];
  const versions = new Map<string, number>();
  for (let i = 0; i < count + 200; i++) {
    const id = `alone-${i % 1000}`;
    const started = performance.now();
    const lease = await store.acquireSession(namespace, id, {
      owner: 'bench',
      leaseMs: 30_000,
      knownVersion: versions.get(id),
    });
    if (!lease.acquired) throw new Error('busy');
    const version = await store.commitTurn(namespace, id, {
      owner: 'bench',
      version: lease.version,
      turn: { append: { memory: messages } },
    });
    versions.set(id, version);
    if (i >= 200) samples.push((performance.now() - started) * 1000);
  }
  return p50(samples);
}

async function perTurnCost(report: Report, dir: string, servers: Servers): Promise<void> {
  const sqlite = new SQLiteStore({ path: join(dir, 'turns.db') });
  const syncSqlite = new SQLiteStore({ path: join(dir, 'sync-turns.db') });
  const contenders: Contender[] = [];
  const add = (label: string, agent: AsyncAgent | Agent) =>
    contenders.push({ label, samples: [], call: (sessionId) => agent.call('hi', { sessionId }) });
  add('memory', asyncAgent('inmemory'));
  add('SQLiteStore', asyncAgent('sqlite', sqlite));
  if (servers.redis && 'store' in servers.redis) add('RedisStore', asyncAgent('redis', servers.redis.store));
  if (servers.postgres && 'store' in servers.postgres)
    add('PostgresStore', asyncAgent('postgres', servers.postgres.store));
  add('sync memory', syncAgent('syncmemory'));
  add('sync SQLiteStore', syncAgent('syncsqlite', syncSqlite));

  const targets: Record<string, number> = {
    SQLiteStore: 100,
    RedisStore: 1000,
    PostgresStore: 1000,
    'sync SQLiteStore': 100,
  };
  const alone: Record<string, number> = {
    SQLiteStore: await storeAlone(sqlite, 'alone', 2000),
  };
  if (servers.redis && 'store' in servers.redis)
    alone.RedisStore = await storeAlone(servers.redis.store, 'alone', 1000);
  if (servers.postgres && 'store' in servers.postgres)
    alone.PostgresStore = await storeAlone(servers.postgres.store, 'alone', 1000);
  alone['sync SQLiteStore'] = alone.SQLiteStore!;

  const scenarios = [
    {
      title: 'one session, 100-turn conversations',
      // A new session every 100 turns, so the history (and the in-memory side's cost) stays small.
      run: () => alternate(contenders, 10, 100, (round, i) => `one-${round}-${Math.floor(i / 100)}`),
    },
    {
      title: '1,000 sessions round-robin',
      run: () => alternate(contenders, 4, 1000, (_round, i) => `rr-${i}`),
    },
  ];
  for (const scenario of scenarios) {
    for (const contender of contenders) contender.samples = [];
    await scenario.run();
    const base = (sync: boolean) =>
      p50(contenders.find((c) => c.label === (sync ? 'sync memory' : 'memory'))!.samples);
    report({
      name: `AsyncAgent.call in memory (memory: {}), ${scenario.title}: p50`,
      value: base(false),
      unit: 'µs',
      note: `${contenders[0]!.samples.length} calls, alternating with each store`,
    });
    report({
      name: `Agent.call in memory (memory: {}), ${scenario.title}: p50`,
      value: base(true),
      unit: 'µs',
    });
    for (const contender of contenders) {
      const target = targets[contender.label];
      if (target === undefined) continue;
      const sync = contender.label.startsWith('sync');
      const mine = p50(contender.samples);
      const sorted = sortedCopy(contender.samples);
      report({
        name: `${sync ? 'Agent' : 'AsyncAgent'} + ${contender.label.replace('sync ', '')}, ${scenario.title}: added p50 per turn`,
        value: mine - base(sync),
        unit: 'µs',
        target,
        note: `p50 ${mine.toFixed(0)} µs vs ${base(sync).toFixed(0)} µs in memory, p99 ${quantile(sorted, 0.99).toFixed(0)} µs; the store's acquire + commit alone p50 ${alone[contender.label]!.toFixed(0)} µs`,
      });
    }
  }
  for (const [label, server] of Object.entries(servers)) {
    if (server && 'missing' in server) {
      report({ name: `${label}: SKIPPED (${server.missing})`, value: 0, unit: 'µs' });
    }
  }
  sqlite.close();
  syncSqlite.close();
}

async function httpThroughput(report: Report, dir: string): Promise<void> {
  const store = new SQLiteStore({ path: join(dir, 'http.db') });
  const servers = {
    memory: new HTTPAgentServer({
      agent: new AsyncAgent({
        llm: new AsyncMockLLM({ responses: reply, record: false }),
        memory: { maxSessions: 1_000 },
      }),
      port: 0,
    }),
    SQLiteStore: new HTTPAgentServer({
      agent: new AsyncAgent({ llm: new AsyncMockLLM({ responses: reply, record: false }) }),
      port: 0,
      store: { store, maxSessions: 1_000 },
    }),
  };
  try {
    const urls = { memory: await servers.memory.listen(), SQLiteStore: await servers.SQLiteStore.listen() };
    // Warm-up of both, then measured runs taking turns.
    await runLoad(urls.memory, 32, 0, 1_500);
    await runLoad(urls.SQLiteStore, 32, 0, 1_500);
    const shapes = [
      { sessions: 0, title: 'a new session each call' },
      { sessions: 1_000, title: '1,000 returning sessions round-robin' },
    ];
    for (const shape of shapes) {
      const rates = { memory: [] as number[], SQLiteStore: [] as number[] };
      const last = { memory: '', SQLiteStore: '' };
      for (let round = 0; round < 2; round++) {
        for (const key of ['memory', 'SQLiteStore'] as const) {
          const load = await runLoad(urls[key], 32, 300, 2_500, { sessions: shape.sessions });
          rates[key].push(load.rate);
          last[key] =
            `${load.errors} errors, p50 ${load.p50.toFixed(2)} ms, p99 ${load.p99.toFixed(2)} ms (last run)`;
        }
      }
      const best = (values: number[]) => Math.max(...values);
      const runs = (values: number[]) => values.map((rate) => rate.toFixed(0)).join(', ');
      report({
        name: `HTTPAgentServer in memory, keep-alive, 32 connections, ${shape.title}`,
        value: best(rates.memory),
        unit: 'calls/s',
        note: `best of ${runs(rates.memory)}; ${last.memory}`,
      });
      const share = (100 * best(rates.SQLiteStore)) / best(rates.memory);
      report({
        name: `HTTPAgentServer with SQLiteStore, keep-alive, 32 connections, ${shape.title}`,
        value: best(rates.SQLiteStore),
        unit: 'calls/s',
        target: 10_000,
        atLeast: true,
        note: `best of ${runs(rates.SQLiteStore)}; ${share.toFixed(0)}% of in memory; ${last.SQLiteStore}`,
      });
    }
  } finally {
    await servers.memory.close();
    await servers.SQLiteStore.close();
    store.close();
  }
}

const SESSIONS = 100_000;
const CALLS = 20_000;

function forcedGc(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
}

async function manySessions(report: Report, dir: string): Promise<void> {
  const store = new SQLiteStore({ path: join(dir, 'many.db') });
  const namespace = 'many';
  const pair = (i: number) => [
    new AgentMessage({ sender: 'user', content: `question ${i}` }).toJSON({ format: 'lagent' }),
    new AgentMessage({ sender: 'assistant', content: `answer ${i}` }).toJSON({ format: 'lagent' }),
  ];
  const writing = performance.now();
  for (let i = 0; i < SESSIONS; i++) {
    const id = `s${i}`;
    const lease = store.acquireSession(namespace, id, { owner: 'writer', leaseMs: 30_000 });
    if (!lease.acquired) throw new Error('busy');
    store.commitTurn(namespace, id, {
      owner: 'writer',
      version: lease.version,
      turn: { append: { memory: pair(i) } },
    });
  }
  const written = performance.now() - writing;
  report({
    name: `${SESSIONS.toLocaleString('en')} sessions written through SQLiteStore (acquire + commit each)`,
    value: (written * 1000) / SESSIONS,
    unit: 'µs/session',
    note: `${(written / 1000).toFixed(1)} s in all`,
  });

  const agent = new AsyncAgent({
    name: 'many',
    llm: new AsyncMockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
    memory: { store, namespace, maxSessions: 1_000 },
  });
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x80000000;
  };
  const samples: number[] = [];
  let baseline = { heap: 0, rss: 0 };
  for (let call = 0; call < CALLS; call++) {
    if (call === 1_000) {
      forcedGc();
      const usage = process.memoryUsage();
      baseline = { heap: usage.heapUsed, rss: usage.rss };
    }
    const id = `s${Math.floor(random() * SESSIONS)}`;
    const started = performance.now();
    await agent.call('hi', { sessionId: id });
    samples.push((performance.now() - started) * 1000);
  }
  forcedGc();
  const usage = process.memoryUsage();
  const mb = (bytes: number) => bytes / 2 ** 20;
  const sorted = sortedCopy(samples.slice(1_000));
  report({
    name: `agent on ${SESSIONS.toLocaleString('en')} stored sessions (maxSessions 1,000): heap growth over ${CALLS.toLocaleString('en')} random calls`,
    value: mb(usage.heapUsed - baseline.heap),
    unit: 'MB',
    target: 50,
    note: `after a forced gc, from ${mb(baseline.heap).toFixed(1)} MB after the first 1,000 calls to ${mb(usage.heapUsed).toFixed(1)} MB; ${agent.memory!.sessions().length} sessions in memory`,
  });
  report({
    name: `agent on ${SESSIONS.toLocaleString('en')} stored sessions: RSS growth over ${CALLS.toLocaleString('en')} random calls`,
    value: mb(usage.rss - baseline.rss),
    unit: 'MB',
    target: 50,
    note: `from ${mb(baseline.rss).toFixed(0)} MB to ${mb(usage.rss).toFixed(0)} MB`,
  });
  report({
    name: `agent on ${SESSIONS.toLocaleString('en')} stored sessions: time per call (a session mostly loaded from the store)`,
    value: quantile(sorted, 0.5),
    unit: 'µs',
    note: `p50; mean ${(sorted.reduce((a, b) => a + b, 0) / sorted.length).toFixed(0)} µs, p99 ${quantile(sorted, 0.99).toFixed(0)} µs`,
  });
  store.close();
}

/**
 * The parts to run: every one, or those `LAGENT_BENCH_STORES` names (comma-separated: `turns`, `http`, `many`).
 */
function parts(): Set<string> {
  const all = ['turns', 'http', 'many'];
  const named = process.env.LAGENT_BENCH_STORES?.split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (named === undefined || named.length === 0) return new Set(all);
  const unknown = named.filter((part) => !all.includes(part));
  if (unknown.length > 0)
    throw new Error(`LAGENT_BENCH_STORES: unknown part(s) ${unknown.join(', ')}; parts: ${all.join(', ')}`);
  return new Set(named);
}

export const run: Suite = async (report) => {
  const selected = parts();
  const dir = mkdtempSync(join(tmpdir(), 'lagent-bench-stores-'));
  if (selected.has('turns')) {
    const servers = await startServers();
    try {
      await perTurnCost(report, dir, servers);
    } finally {
      for (const server of Object.values(servers)) if (server && 'stop' in server) await server.stop();
    }
  }
  try {
    if (selected.has('http')) await httpThroughput(report, dir);
    if (selected.has('many')) await manySessions(report, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
