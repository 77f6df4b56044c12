import { Redis } from 'ioredis';
import { AsyncAgent } from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker, QueueConnectionError } from 'lagent-ts/distributed/queue';
import { RedisStore } from 'lagent-ts/stores';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedis } from './redis-server';

let redis: RedisServer;
let admin: Redis;

beforeAll(async () => {
  // With an append-only file, so the restart keeps the sessions and jobs and "nothing corrupted" means something.
  redis = await startRedis({ persist: true });
  admin = new Redis(redis.port, '127.0.0.1', { maxRetriesPerRequest: null });
  admin.on('error', () => {});
});
afterAll(async () => {
  admin?.disconnect();
  await redis?.close();
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Redis restarted mid-load', () => {
  it('fails the calls it cut with QueueConnectionError, serves again after, and corrupts no session', async () => {
    const queue = 'restart';
    const workers = [1, 2].map(
      () =>
        new QueueAgentWorker({
          agent: new AsyncAgent({
            llm: new AsyncMockLLM({
              responses: (messages) => `${messages.at(-1)?.content}#${messages.length}`,
              latencyMs: 5,
            }),
          }),
          queue,
          connection: redis.url,
          concurrency: 4,
          lockDuration: 2_000,
          stalledInterval: 1_000,
        }),
    );
    await Promise.all(workers.map((worker) => worker.ready()));
    const remote = new AsyncQueueAgent({ queue, connection: redis.url, timeout: 10_000 });
    const sessions = Array.from({ length: 8 }, (_, i) => `s${i}`);
    const succeeded = new Map<string, string[]>(sessions.map((id) => [id, []]));
    const failures: unknown[] = [];
    let restarted = false;
    let afterRestart = 0;
    let running = true;
    const load = sessions.map(async (sessionId) => {
      for (let n = 0; running; n++) {
        const question = `${sessionId}-${n}`;
        try {
          await remote.call(question, { sessionId });
          succeeded.get(sessionId)!.push(question);
          if (restarted) afterRestart++;
        } catch (error) {
          failures.push(error);
          await pause(20);
        }
      }
    });
    // Redis goes away once every session has had a call answered, and comes back once a call has failed.
    while ([...succeeded.values()].some((answered) => answered.length === 0)) await pause(20);
    await redis.stop();
    while (failures.length === 0) await pause(20);
    await redis.start();
    restarted = true;
    while (afterRestart < 20) await pause(50);
    running = false;
    await Promise.all(load);
    expect(afterRestart).toBeGreaterThanOrEqual(20);
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) expect(failure).toBeInstanceOf(QueueConnectionError);

    // Let every job still queued or running finish.
    for (;;) {
      const [waiting, active] = await Promise.all([
        admin.llen(`bull:${queue}:wait`),
        admin.llen(`bull:${queue}:active`),
      ]);
      if (waiting + active === 0) break;
      await pause(50);
    }
    await Promise.all(workers.map((worker) => worker.close()));

    // The sessions are RedisStore's, in the queue's namespace.
    const store = new RedisStore({ client: admin });
    for (const sessionId of sessions) {
      const stored = (await store.readSession(queue, sessionId))!;
      const memory = stored.state.memory!.map((m) => m.content as string);
      expect(memory.length % 2).toBe(0);
      expect(stored.version).toBe(memory.length / 2);
      const questions = memory.filter((_, i) => i % 2 === 0);
      // Whole turns, each reply after its own question and made from every turn before it.
      questions.forEach((question, turn) => {
        expect(memory[2 * turn + 1]).toBe(`${question}#${2 * turn + 1}`);
      });
      // No turn doubled, none that was answered lost.
      expect(new Set(questions).size).toBe(questions.length);
      for (const question of succeeded.get(sessionId)!) expect(questions).toContain(question);
    }
    await remote.close();
  }, 60_000);

  it('close() of a worker and a client does not wait for a Redis that is down (it would wait forever)', async () => {
    const down = await startRedis();
    const worker = new QueueAgentWorker({
      agent: new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }) }),
      queue: 'down',
      connection: down.url,
    });
    const remote = new AsyncQueueAgent({ queue: 'down', connection: down.url });
    try {
      await Promise.all([worker.ready(), remote.ready()]);
      await down.stop();
      const error = await remote.call('hi').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(QueueConnectionError);
      await Promise.all([worker.close(), remote.close()]);
    } finally {
      await Promise.all([worker.close(), remote.close()]);
      await down.close();
    }
  });
});
