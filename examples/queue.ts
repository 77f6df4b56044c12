/**
 * Scaling out on BullMQ: two `QueueAgentWorker`s serve one agent from a Redis queue, and a local composite
 * calls it through `AsyncQueueAgent` as a sub-agent. Session memory lives in Redis, so either worker serves
 * any session, one call of a session at a time. Uses REDIS_URL when set, else starts a `redis-server` of its
 * own on a free port (and stops it); says so and exits when neither is available. Runs on the built-in mock
 * model, or on a real endpoint when OPENAI_API_KEY / OPENAI_BASE_URL is set. Needs the optional peers
 * `bullmq` and `ioredis`: `npm install bullmq ioredis`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { AgentMessage, AsyncAgent, type AsyncForwardOptions } from 'lagent-ts';
import { AsyncQueueAgent, QueueAgentWorker, QueueConnectionError } from 'lagent-ts/distributed';
import { describeModel, pickAsyncLLM } from './shared/model';
import { heading, isMain, show } from './shared/print';

/** A local agent that asks the remote expert (a sub-agent on the queue), then reports what it said. */
class Coordinator extends AsyncAgent {
  readonly expert: AsyncQueueAgent;

  constructor(expert: AsyncQueueAgent) {
    super({ name: 'coordinator' });
    this.expert = expert;
  }

  override async forward(messages: AgentMessage[], options: AsyncForwardOptions): Promise<AgentMessage> {
    // Becomes a job on the queue; inherits this call's abort signal; the turn is stored in Redis.
    const answer = await this.expert.call(messages, { sessionId: options.sessionId });
    return new AgentMessage({ sender: this.name, content: `The expert says: ${answer.content}` });
  }
}

/** A Redis to use: REDIS_URL, or a `redis-server` started here (undefined when there is none). */
async function findRedis(): Promise<{ url: string; stop(): Promise<void> } | undefined> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => {} };
  const port = await new Promise<number>((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
  const server: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const failed = new Promise<false>((resolve) => {
    server.once('error', () => resolve(false));
    server.once('exit', () => resolve(false));
  });
  const accepts = () =>
    new Promise<boolean>((resolve) => {
      const socket = new Socket()
        .once('connect', () => resolve(socket.destroy() !== undefined))
        .once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1');
    });
  for (let waited = 0; waited < 5_000; waited += 25) {
    const ready = await Promise.race([accepts(), failed]);
    if (ready) {
      return {
        url: `redis://127.0.0.1:${port}`,
        stop: () =>
          new Promise<void>((resolve) => {
            server.once('exit', () => resolve());
            server.kill('SIGTERM');
          }),
      };
    }
    if (server.exitCode !== null || server.signalCode !== null) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  server.kill('SIGKILL');
  return undefined;
}

export async function main(): Promise<void> {
  heading('Scaling out on a BullMQ queue', describeModel());
  const redis = await findRedis().catch(() => undefined);
  if (!redis) {
    console.log('Redis is not available: install redis-server (apt install redis-server) or set REDIS_URL.');
    return;
  }
  console.log(`Redis at ${redis.url}`);

  // Two workers, each with its own copy of the expert; either one serves any session.
  const served: string[] = [];
  const workers = ['worker-a', 'worker-b'].map((name) => {
    const expert = new AsyncAgent({
      llm: pickAsyncLLM((messages) => {
        const question = String(messages.at(-1)?.content);
        if (question.includes('keep')) return 'In Redis: a list of waiting jobs and a hash per job.';
        if (question.includes('run'))
          return 'Workers take jobs from the queue, each as many at once as its concurrency.';
        return 'One at a time, in call order: a worker holds the session’s lease while it runs a call.';
      }),
      template: 'You are a concise distributed-systems expert. Answer in one sentence.',
      name: 'expert',
    });
    expert.events.on('callStart', ({ sessionId }) =>
      served.push(`${name} served session ${String(sessionId)}`),
    );
    // lockDuration and stalledInterval (ms) bound how soon a dead worker's job runs again elsewhere.
    return new QueueAgentWorker({
      agent: expert,
      queue: 'experts',
      connection: redis.url,
      concurrency: 2,
      lockDuration: 5_000,
      stalledInterval: 5_000,
    });
  });
  const remote = new AsyncQueueAgent({ queue: 'experts', connection: redis.url, timeout: 60_000 });
  try {
    try {
      await Promise.all(workers.map((worker) => worker.ready()));
    } catch (error) {
      if (!(error instanceof QueueConnectionError)) throw error;
      console.log(`Redis is not reachable: ${error.message}`);
      return;
    }
    console.log('two workers are taking jobs from the queue "experts"');

    heading('The remote agent as a sub-agent');
    const coordinator = new Coordinator(remote);
    const replies = await Promise.all([
      coordinator.call('Where does BullMQ keep its jobs?', { sessionId: 'alice' }),
      coordinator.call('Who runs the jobs?', { sessionId: 'bob' }),
    ]);
    show('alice', replies[0]!);
    show('bob', replies[1]!);
    show(
      'alice again',
      await coordinator.call('How are calls of one session ordered?', { sessionId: 'alice' }),
    );
    for (const line of served) console.log(`  ${line}`);

    heading('Session memory in Redis (Lagent’s state-dict shape)');
    const memory = await remote.stateDict('alice');
    for (const message of memory.memory ?? []) console.log(`  ${message.sender}: ${String(message.content)}`);
  } finally {
    await remote.close();
    await Promise.all(workers.map((worker) => worker.close()));
    await redis.stop();
    console.log('workers closed');
  }
}

if (isMain(import.meta.url)) await main();
