import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ChatMessage } from 'lagent-ts';
import { AsyncFunctionCallingAgent, asyncTool, FunctionCallingAgent, tool } from 'lagent-ts';
import { PostgresStore, RedisStore, type SessionStore, SQLiteStore } from 'lagent-ts/stores';
import { AsyncMockLLM, MockLLM, type MockReply } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RedisServer, startRedis } from '../distributed/queue/redis-server';
import { type PostgresServer, postgresBinaries, startPostgres } from './postgres-server';

/*
 * Working memory in the stores' real engines: a session's record persists with the session across processes
 * (SQLite), and a resource's record is shared by the sessions of one resourceId, hidden from another, seen by
 * a second agent on the store (as another process would) and taken back when the call that made it fails
 * (Redis, PostgreSQL: async stores, so the taking back is a write the failing call waits for), and two processes
 * updating it at once lose no update.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const worker = fileURLToPath(new URL('./fixtures/working-memory-worker.ts', import.meta.url));
const run = promisify(execFile);
const system = (messages: ChatMessage[]) => messages.find((m) => m.role === 'system')?.content ?? '';
const update = (memory: unknown): MockReply => ({
  toolCalls: [{ name: 'updateWorkingMemory', arguments: { memory } }],
});
const noop = tool({ name: 'Noop', parameters: z.object({}), run: () => 'ok' });

it('SQLite: a process updates a session record and exits; an agent of the next process sees it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'wm-'));
  try {
    const path = join(dir, 'sessions.db');
    const { stdout } = await run(process.execPath, ['--import', 'tsx', worker, path, 'x', 'owes 5 EUR'], {
      cwd: root,
    });
    expect(stdout.trim()).toBe('done');
    const store = new SQLiteStore({ path });
    const llm = new MockLLM({ responses: ['You owe 5 EUR.'] });
    const agent = new FunctionCallingAgent({
      llm,
      actions: [noop],
      memory: { store },
      workingMemory: { scope: 'session' },
      name: 'bot',
    });
    agent.call('what do I owe?', { sessionId: 'x' });
    expect(system(llm.calls[0]!.messages)).toContain('owes 5 EUR');
    expect(agent.stateDict('x').workingMemory).toEqual([expect.objectContaining({ content: 'owes 5 EUR' })]);
    store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A model that stores what a `remember ...` message says, fails on `fail after remember ...`, else answers. */
function rememberer(): AsyncMockLLM {
  return new AsyncMockLLM({
    responses: (messages) => {
      const user = String(messages.findLast((m) => m.role === 'user')!.content);
      const last = messages.at(-1)!;
      const wanted = /remember (.*)$/.exec(user)?.[1];
      if (last.role === 'user' && wanted !== undefined) return update(wanted);
      if (last.role === 'tool' && user.startsWith('fail')) throw new Error('model down');
      return 'ok';
    },
  });
}

function resourceScope(name: string, open: () => SessionStore) {
  it(`${name}: a resource's record is shared by its sessions, hidden from another, and taken back with a failed call`, async () => {
    const namespace = `wm-${name}-${process.pid}`;
    const make = (store: SessionStore, llm: AsyncMockLLM) =>
      new AsyncFunctionCallingAgent({
        llm,
        actions: [noop],
        memory: { store, namespace },
        workingMemory: { scope: 'resource' },
        name: 'bot',
      });
    const store = open();
    const other = open();
    try {
      const llm = rememberer();
      const agent = make(store, llm);
      await agent.call('remember vegetarian', { sessionId: 's1', resourceId: 'ada' });
      await agent.call('what do I eat?', { sessionId: 's2', resourceId: 'ada' });
      expect(system(llm.calls.at(-1)!.messages)).toContain('vegetarian');
      await agent.call('what do I eat?', { sessionId: 's3', resourceId: 'bob' });
      expect(system(llm.calls.at(-1)!.messages)).toContain('It is empty.');

      await expect(
        agent.call('fail after remember carnivore', { sessionId: 's1', resourceId: 'ada' }),
      ).rejects.toThrow('model down');
      // Another agent on the store (another process's) reads the record as it was before the failed call.
      const llm2 = rememberer();
      const second = make(other, llm2);
      await second.call('what do I eat?', { sessionId: 's9', resourceId: 'ada' });
      expect(system(llm2.calls.at(-1)!.messages)).toContain(
        '<working_memory>\nvegetarian\n</working_memory>',
      );
      const stored = await other.readSession(`${namespace}/working-memory`, 'ada');
      expect(stored?.state.working_memory?.[0]?.content).toBe('vegetarian');
    } finally {
      await store.close();
      await other.close();
    }
  });
}

/**
 * Two agents on two clients of one store (two processes), each in a session of one resource: both models are
 * shown the empty record, then both update it. The second is told the record changed, and updates again.
 */
function concurrentResource(name: string, open: () => SessionStore) {
  it(`${name}: two processes updating one resource's record at once lose no update`, async () => {
    const namespace = `wm-race-${name}-${process.pid}`;
    let waiting = 0;
    let opened!: () => void;
    const gate = new Promise<void>((resolve) => {
      opened = resolve;
    });
    const wait = asyncTool({
      name: 'Wait',
      parameters: z.object({}),
      run: async () => {
        if (++waiting === 2) opened();
        await gate;
        return 'waited';
      },
    });
    const model = () =>
      new AsyncMockLLM({
        responses: (messages) => {
          const user = String(messages.findLast((m) => m.role === 'user')!.content);
          const last = messages.at(-1)!;
          const result = String(last.content);
          if (last.role === 'user') return { toolCalls: [{ name: 'Wait', arguments: {} }] };
          if (result.startsWith('waited')) return update(user);
          const now = /It now reads:\n(.*)\n/.exec(result)?.[1];
          if (now !== undefined) return update(`${now}; ${user}`);
          return 'ok';
        },
      });
    const stores = [open(), open()];
    try {
      const agents = stores.map(
        (store) =>
          new AsyncFunctionCallingAgent({
            llm: model(),
            actions: [wait],
            memory: { store, namespace },
            workingMemory: { scope: 'resource' },
            name: 'bot',
          }),
      );
      await Promise.all([
        agents[0]!.call('likes tea', { sessionId: 'a', resourceId: 'ada' }),
        agents[1]!.call('lives in Rome', { sessionId: 'b', resourceId: 'ada' }),
      ]);
      const stored = await stores[0]!.readSession(`${namespace}/working-memory`, 'ada');
      const record = String(stored?.state.working_memory?.[0]?.content);
      expect(record).toContain('likes tea');
      expect(record).toContain('lives in Rome');
      expect(stored?.version).toBe(2);
    } finally {
      for (const store of stores) await store.close();
    }
  });
}

describe('Redis', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.close();
  });
  const open = () => new RedisStore({ url: server.url, prefix: `wm-${process.pid}` });
  resourceScope('RedisStore', open);
  concurrentResource('RedisStore', open);
});

const binaries = postgresBinaries();
describe.runIf('bin' in binaries)('PostgreSQL', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres((binaries as { bin: string }).bin);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
  }, 30_000);
  const open = () => new PostgresStore({ connectionString: server.connectionString });
  resourceScope('PostgresStore', open);
  concurrentResource('PostgresStore', open);
});
