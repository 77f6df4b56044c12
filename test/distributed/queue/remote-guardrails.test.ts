import {
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  GuardrailTripped,
  guardrail,
} from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker } from 'lagent-ts/distributed/queue';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RedisServer, startRedis } from './redis-server';

/*
 * Tool guardrails through the queue, on a real redis-server: an AsyncQueueAgent inside a local call with tool
 * guardrails has the worker's agent stop before every tool call, checks each call locally, and resumes it.
 */

let redis: RedisServer;
let queueCount = 0;
const open: { close(): Promise<void> | void }[] = [];
const nextQueue = () => `guarded${++queueCount}`;

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map(async (item) => item.close()));
});
afterAll(async () => {
  await redis?.close();
});

function track<T extends { close(): Promise<void> | void }>(item: T): T {
  open.push(item);
  return item;
}

/** The worker's agent: asks to delete each comma-separated path of the message, then says done. */
function deleter(deleted: string[]) {
  const remove = asyncTool({
    name: 'DeleteFile',
    parameters: z.object({ path: z.string() }),
    run: async ({ path }) => {
      deleted.push(path);
      return `deleted ${path}`;
    },
  });
  const llm = new AsyncMockLLM({
    responses: (messages) => {
      const last = messages.at(-1)!;
      if (last.role === 'tool') return 'done';
      const paths = String(last.content).split(',');
      return {
        toolCalls: paths.map((path, i) => ({ id: `del_${i}`, name: 'DeleteFile', arguments: { path } })),
      };
    },
  });
  return new AsyncFunctionCallingAgent({ llm, actions: [remove], name: 'remote' });
}

const noHome = guardrail({
  name: 'no-home',
  on: 'tool',
  check: async (message) => {
    const path = String((message.formatted as { arguments: { path?: unknown } }).arguments.path);
    return path.startsWith('/home') ? `refuses to delete ${path}` : undefined;
  },
});

describe('tool guardrails reach remote agents (AsyncQueueAgent)', () => {
  it('a blocked call never runs on the worker; calls that pass run once', async () => {
    const queue = nextQueue();
    const deleted: string[] = [];
    await track(new QueueAgentWorker({ agent: deleter(deleted), queue, connection: redis.url })).ready();
    const remote = track(new AsyncQueueAgent({ queue, connection: redis.url, timeout: 15_000 }));
    class Local extends AsyncAgent {
      remote = remote;
      override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
        const reply = await this.remote.call(messages, { sessionId: options.sessionId });
        return `local: ${String(reply.content)}`;
      }
    }
    const local = new Local({ hooks: [noHome] });
    await expect(local.call('/tmp/a,/home/u', { sessionId: 'q1' })).rejects.toBeInstanceOf(GuardrailTripped);
    expect(deleted).toEqual([]);
    const reply = await local.call('/tmp/a,/tmp/b', { sessionId: 'q2' });
    expect(reply.content).toBe('local: done');
    expect(deleted).toEqual(['/tmp/a', '/tmp/b']);
  });
});
