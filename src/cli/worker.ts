import type { CallerOptionsPolicy } from '../distributed/caller-options';
import type { QueueHostedAgent } from '../distributed/queue/worker';
import { asMessageAgent } from './agent-like';
import type { LoadedAgent } from './agent-source';
import { CliError, messageOf } from './errors';
import { untilStopped } from './lifetime';

/** Options of {@link runWorker}. */
export interface WorkerOptions {
  redis: string;
  queue: string;
  concurrency: number;
  /** What a job may set on its call (QueueAgentWorker's `callerOptions`), from `--allow-params` and `--max-budget`. */
  callerOptions?: CallerOptionsPolicy | undefined;
  /** The job lock and session lease, in ms (QueueAgentWorker's `lockDuration`). */
  leaseMs?: number | undefined;
}

/** A Redis URL with its password hidden, for messages. */
function safeURL(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/**
 * `lagent worker`: hosts the agent on a BullMQ queue with `QueueAgentWorker` until SIGINT or SIGTERM, then
 * lets the calls in progress finish and disconnects.
 */
export async function runWorker(loaded: LoadedAgent, options: WorkerOptions): Promise<void> {
  const [{ QueueAgentWorker }, { AgentBase }] = await Promise.all([
    import('../distributed/queue/worker'),
    import('../agents/agent-base'),
  ]);
  const stopped = untilStopped();
  let worker: InstanceType<typeof QueueAgentWorker>;
  try {
    worker = new QueueAgentWorker({
      // An agent of lagent-ts is hosted as it is: the worker reads its stream itself, and logs its chunks for a
      // run. Any other agent-like shape gets a `call` that gives the final message.
      agent: (loaded.agent instanceof AgentBase
        ? loaded.agent
        : asMessageAgent(loaded.agent)) as unknown as QueueHostedAgent,
      queue: options.queue,
      connection: options.redis,
      concurrency: options.concurrency,
      callerOptions: options.callerOptions,
      lockDuration: options.leaseMs,
      // A job whose worker died is looked for as often as a lease lasts: it is taken over after about that long.
      stalledInterval: options.leaseMs,
    });
  } catch (error) {
    throw new CliError(messageOf(error), { cause: error });
  }
  let signal: NodeJS.Signals | undefined;
  try {
    signal = await Promise.race([worker.ready().then(() => undefined), stopped]);
  } catch (error) {
    await worker.close().catch(() => {});
    throw new CliError(`cannot start the worker on ${safeURL(options.redis)}: ${messageOf(error)}`, {
      cause: error,
    });
  }
  if (signal !== undefined) {
    // Stopped while connecting.
    await worker.close();
    return;
  }
  process.stdout.write(
    `lagent worker: serving queue "${options.queue}" on ${safeURL(options.redis)} (concurrency ${options.concurrency})\n`,
  );
  signal = await stopped;
  process.stderr.write(`lagent worker: ${signal}, finishing the calls in progress\n`);
  await worker.close();
}
