import {
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  interruptsOf,
  resumeWith,
} from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker } from 'lagent-ts/distributed/queue';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type RedisServer, startRedis } from './redis-server';

/*
 * Interrupts through the queue, on a real redis-server: the interrupt reply is the job's reply, the resume
 * message an ordinary message on the same session (served by any worker, since the session lives in Redis),
 * and an AsyncQueueAgent inside a local agent re-roots the remote's interrupts in the local tree.
 */

let redis: RedisServer;
let queueCount = 0;
const open: { close(): Promise<void> | void }[] = [];
const nextQueue = () => `interrupts${++queueCount}`;

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

/** A function-calling agent whose Delete needs approval; the model replies `done: <answer>` after the tool. */
function approvalAgent(runs: string[]) {
  const remove = asyncTool({
    name: 'Delete',
    parameters: z.object({ path: z.string() }),
    needsApproval: true,
    run: async ({ path }) => {
      runs.push(path);
      return `deleted ${path}`;
    },
  });
  const llm = new AsyncMockLLM({
    responses: (messages) => {
      const last = messages.at(-1)!;
      if (last.role === 'tool') return `done: ${String(last.content)}`;
      return { toolCalls: [{ id: 'del_1', name: 'Delete', arguments: { path: String(last.content) } }] };
    },
  });
  return new AsyncFunctionCallingAgent({ llm, actions: [remove], name: 'remote' });
}

async function worker(queue: string, runs: string[]) {
  const served = track(new QueueAgentWorker({ agent: approvalAgent(runs), queue, connection: redis.url }));
  await served.ready();
  return served;
}

describe('the queue carries interrupts', () => {
  it('the interrupt is the job reply; the resume, served by another worker, finishes the call', async () => {
    const queue = nextQueue();
    const firstRuns: string[] = [];
    const first = await worker(queue, firstRuns);
    const remote = track(new AsyncQueueAgent({ queue, connection: redis.url, timeout: 15_000 }));
    const reply = await remote.call('/tmp/q', { sessionId: 'q1' });
    expect(reply.type).toBe('interrupt');
    expect(interruptsOf(reply)).toEqual([
      {
        id: 'del_1',
        kind: 'approval',
        path: '',
        toolCall: { id: 'del_1', name: 'Delete', arguments: { path: '/tmp/q' } },
      },
    ]);
    await first.close();
    const secondRuns: string[] = [];
    await worker(queue, secondRuns);
    const done = await remote.call(resumeWith([{ id: 'del_1', approve: true }]), { sessionId: 'q1' });
    expect(done.content).toBe('done: deleted /tmp/q');
    expect([firstRuns, secondRuns]).toEqual([[], ['/tmp/q']]);
    const memory = (await remote.stateDict('q1')).memory as { content: unknown }[];
    expect(memory.map((m) => m.content)).toEqual(['/tmp/q', 'done: deleted /tmp/q']);
  });

  it('inside a local agent: the interrupt names the local path; resuming the local root resumes the remote', async () => {
    const queue = nextQueue();
    const runs: string[] = [];
    await worker(queue, runs);
    class Root extends AsyncAgent {
      helper = track(new AsyncQueueAgent({ queue, connection: redis.url, timeout: 15_000 }));
      override async forward(messages: AgentMessage[]) {
        const reply = await this.helper.call(messages, { sessionId: 'h' });
        return `root: ${String(reply.content)}`;
      }
    }
    const root = new Root({ name: 'root' });
    const [ask] = interruptsOf(await root.call('/tmp/r'));
    expect(ask).toMatchObject({ id: 'helper:del_1', path: 'helper', toolCall: { id: 'del_1' } });
    expect(runs).toEqual([]);
    const done = await root.call(resumeWith([{ id: 'helper:del_1', approve: true }]));
    expect(done.content).toBe('root: done: deleted /tmp/r');
    expect(runs).toEqual(['/tmp/r']);
  });
});

describe('the queue carries budgets', () => {
  it('a queue agent inside a budgeted call gets what is left, and what it spent counts in the local budget', async () => {
    const queue = nextQueue();
    const remoteLLM = new AsyncMockLLM({ responses: (_m, _p, i) => `remote ${i}` });
    const served = track(
      new QueueAgentWorker({
        agent: new AsyncAgent({ llm: remoteLLM, name: 'writer' }),
        queue,
        connection: redis.url,
      }),
    );
    await served.ready();
    class Root extends AsyncAgent {
      helper = track(new AsyncQueueAgent({ queue, connection: redis.url, timeout: 15_000 }));
      override async forward(messages: AgentMessage[]) {
        const first = await this.helper.call(messages, { sessionId: 'b' });
        return this.helper.call(String(first.content), { sessionId: 'b' });
      }
    }
    const reply = await new Root({ name: 'root' }).call('go', { budget: { modelCalls: 5 } });
    const usage = (reply.extraInfo as { usage: { modelCalls: number; totalTokens: number } }).usage;
    expect(usage.modelCalls).toBe(2);
    expect(usage.totalTokens).toBeGreaterThan(0);
    // One request left of a budget of 1 after the first: the second job's agent refuses its model call.
    await expect(
      new Root({ name: 'root' }).call('go', { sessionId: 2, budget: { modelCalls: 1 } }),
    ).rejects.toThrow(/modelCalls budget/);
    expect(remoteLLM.calls).toHaveLength(3);
  });
});
