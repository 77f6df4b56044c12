import { AsyncQueueAgent, QueueAgentWorker } from '../src/distributed/queue/index';
import { AsyncAgent } from '../src/index';
import { AsyncMockLLM } from '../src/testing/index';
import { hasRedisServer, startRedis } from '../test/distributed/queue/redis-server';
import type { Suite } from './report';

/**
 * The BullMQ queue: throughput of two workers on one Redis, and what the queue adds to one call
 * (its p50 minus the p50 of calling the same agent directly). A zero-latency mock model; a `redis-server`
 * of its own on a free port, without persistence; the workers and the caller share this process.
 */

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

const agent = () => new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok', record: false }) });

export const run: Suite = async (report) => {
  if (!(await hasRedisServer())) {
    console.log('  (skipped: redis-server is not installed)');
    return;
  }
  const redis = await startRedis();
  const open: { close(): Promise<void> }[] = [];
  try {
    // Throughput: two workers, many sessions at once, each session's calls one after another.
    const workers = [1, 2].map(
      () =>
        new QueueAgentWorker({ agent: agent(), queue: 'throughput', connection: redis.url, concurrency: 64 }),
    );
    open.push(...workers);
    await Promise.all(workers.map((worker) => worker.ready()));
    const remote = new AsyncQueueAgent({ queue: 'throughput', connection: redis.url });
    open.push(remote);
    const drive = async (sessions: number, calls: number) => {
      let left = calls;
      await Promise.all(
        Array.from({ length: sessions }, async (_, sessionId) => {
          while (left-- > 0) await remote.call('hi', { sessionId: `t${sessionId}` });
        }),
      );
    };
    await drive(200, 2_000); // warm-up
    const rounds: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (let sessionId = 0; sessionId < 200; sessionId++) await remote.reset(`t${sessionId}`);
      const calls = 5_000;
      const started = performance.now();
      await drive(200, calls);
      rounds.push(calls / ((performance.now() - started) / 1000));
    }
    report({
      name: 'queue throughput, two workers on one Redis',
      value: percentile(rounds, 0.5),
      unit: 'calls/s',
      target: 1_000,
      atLeast: true,
      note: `median of 3 rounds of 5,000 calls over 200 sessions (${rounds.map((r) => r.toFixed(0)).join(', ')}); workers at concurrency 64, in this process`,
    });

    // Overhead: one call at a time, a new session each call.
    const direct = agent();
    const serial = new AsyncQueueAgent({ queue: 'latency', connection: redis.url });
    open.push(serial);
    const single = new QueueAgentWorker({ agent: agent(), queue: 'latency', connection: redis.url });
    open.push(single);
    await single.ready();
    const queued: number[] = [];
    const local: number[] = [];
    for (let i = 0; i < 1_500; i++) {
      let started = performance.now();
      await serial.call('hi', { sessionId: i });
      if (i >= 500) queued.push(performance.now() - started);
      started = performance.now();
      await direct.call('hi', { sessionId: i });
      if (i >= 500) local.push(performance.now() - started);
    }
    const overhead = percentile(queued, 0.5) - percentile(local, 0.5);
    report({
      name: 'queue overhead per call, p50',
      value: overhead,
      unit: 'ms',
      target: 2,
      note: `p50 ${percentile(queued, 0.5).toFixed(2)} ms through the queue (p90 ${percentile(queued, 0.9).toFixed(2)} ms) vs ${(percentile(local, 0.5) * 1000).toFixed(1)} µs direct; 1,000 sequential calls after 500 warm-up`,
    });
  } finally {
    await Promise.allSettled(open.map((item) => item.close()));
    await redis.close();
  }
};
