import { randomUUID } from 'node:crypto';
import type { ConnectionOptions, Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import type { AsyncCallOptions } from '../../agents/agent-base';
import { toMessages } from '../../agents/lifecycle';
import {
  isResume,
  joinRun,
  Run,
  RunExecution,
  type RunLogOptions,
  type RunPlace,
  runSettings,
} from '../../agents/runs/run';
import type { LagentStateDict, StateDict, StateDictOptions } from '../../agents/state-dict';
import { effectiveSignal } from '../../core/call-context';
import { Deadline } from '../../core/deadline';
import { SessionLanes } from '../../core/session-lanes';
import { AgentMessage, type LagentMessageJSON, type MessageInput } from '../../schema/agent-message';
import { ConfigurationError, RunFailedError, ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { checkStoreKey, type RunRecord, runEnded } from '../../stores/types';
import { isPlainObject } from '../../utils/is';
import { beginRemote } from '../remote-budget';
import {
  approveChecks,
  checkRemoteCalls,
  checksAsked,
  toolGuardsHere,
  withToolChecks,
} from '../remote-guards';
import { REMOTE_AGENT, remoteInput, remotePlace, throwIfInterrupted } from '../remote-interrupts';
import {
  closeBullMQ,
  closeRedis,
  connectionOptions,
  connectRedis,
  describeConnection,
  type RedisConnection,
} from './connection';
import { QueueConnectionError, RemoteAgentError } from './errors';
import { loadQueuePeers } from './load';
import { CALL_JOB, type CallJobData, jobKwargs, parseFailure, runJobId } from './protocol';
import { QueueRunLog } from './run-log';
import {
  type AgentShape,
  QueueKeys,
  type QueueSessionPlace,
  QueueSessions,
  type SessionPlace,
  sessionPlace,
} from './session-store';

/** Options of {@link AsyncQueueAgent}. */
export interface AsyncQueueAgentOptions extends QueueSessionPlace {
  /** The BullMQ queue the workers serve. @default 'agents' */
  queue?: string | undefined;
  /** Redis: a URL (`redis://127.0.0.1:6379`) or ioredis options. */
  connection: RedisConnection;
  /** Longest a call may take, waiting in the queue included, in ms. Unset: no limit. */
  timeout?: number | undefined;
  /** BullMQ's key prefix (the workers' one). @default 'bull' */
  prefix?: string | undefined;
  /** @default 'AsyncQueueAgent' */
  name?: string | undefined;
  description?: string | undefined;
}

/** Options of one call: the session, the abort signal and timeout, and options for the remote agent. */
export type QueueCallOptions = AsyncCallOptions & { timeout?: number | undefined };

/**
 * Options of a run started on the queue (`start`): the session, the run's id, how long its log is kept
 * (`runs`: its store is the queue's Redis), a signal that cancels it, and options for the remote agent.
 */
export type QueueStartOptions = AsyncCallOptions & {
  runId?: string | undefined;
  runs?: Pick<RunLogOptions, 'retainMs' | 'idleTtlMs' | 'maxEvents'> | undefined;
};

interface Waiter {
  resolve(message: AgentMessage): void;
  reject(error: unknown): void;
  since: number;
}

interface Connected {
  redis: Redis;
  queue: Queue;
  events: QueueEvents;
  store: QueueSessions;
}

/** How often, and after how long, a call whose reply event never came asks Redis about its job (ms). */
const SWEEP_MS = 5_000;

/**
 * An async agent served by {@link QueueAgentWorker}s: each call becomes a BullMQ job on the session, and the
 * reply comes back when a worker committed the turn. Usable as a sub-agent: hold it as a property of a local
 * composite and call it in `forward`; it inherits that call's abort signal. Its calls on one session run one
 * at a time in call order; the session's memory is in Redis (`stateDict` reads it).
 *
 * An abort or a timeout removes the job when no worker took it yet (it then never runs); otherwise the call
 * stops waiting and asks the worker to stop the agent (its model request is aborted and nothing is committed),
 * unless the turn was committed first, which then stays. A failure of the local composite after this call
 * returned does not take back the remote turn (as with any remote agent), and the remote memory is not part
 * of the composite's own `stateDict`.
 *
 * @example
 * const remote = new AsyncQueueAgent({ queue: 'agents', connection: 'redis://127.0.0.1:6379', timeout: 30_000 });
 * const reply = await remote.call('hello', { sessionId: 'alice' });
 * await remote.stateDict('alice'); // { memory: [...] }
 * await remote.close();
 */
export class AsyncQueueAgent {
  /** A remote agent: a local tree holding it may stop for its questions (see `interruptsOf`). */
  readonly [REMOTE_AGENT] = true as const;
  name: string;
  description: string | undefined;
  readonly queue: string;
  readonly timeout: number | undefined;
  readonly #connection: RedisConnection;
  readonly #prefix: string;
  readonly #place: SessionPlace;
  readonly #lanes = new SessionLanes();
  readonly #waiting = new Map<string, Waiter>();
  #connected: Promise<Connected> | undefined;
  #closed = false;
  #sweep: NodeJS.Timeout | undefined;
  /** The logs of its runs, in the queue's Redis. */
  readonly #runLog: QueueRunLog;
  /** The runs this client started whose jobs are not done, by job id: a job BullMQ gave up on ends its run. */
  readonly #runJobs = new Map<string, { runId: string; place: RunPlace }>();

  constructor(options: AsyncQueueAgentOptions) {
    if (!isPlainObject(options)) {
      throw new ConfigurationError({ message: 'AsyncQueueAgent expects { queue?, connection, timeout? }' });
    }
    const { queue = 'agents', timeout } = options;
    if (typeof queue !== 'string' || queue === '' || queue.includes(':')) {
      throw new ConfigurationError({
        message: `AsyncQueueAgent: queue must be a non-empty name without ':', got ${JSON.stringify(queue)}`,
      });
    }
    checkTimeout(timeout);
    connectionOptions(options.connection);
    this.queue = queue;
    this.timeout = timeout;
    this.#connection = options.connection;
    this.#prefix = options.prefix ?? 'bull';
    this.#place = sessionPlace(options, queue);
    this.name = options.name ?? 'AsyncQueueAgent';
    this.description = options.description;
    this.#runLog = new QueueRunLog(`RedisStore(queue ${queue})`, () =>
      this.#connect().then((connected) => connected.store.store),
    );
  }

  /** Where the logs of its runs are: the queue's Redis, under its sessions' namespace. */
  runLog(): Pick<RunPlace, 'store' | 'namespace'> {
    return { store: this.#runLog, namespace: this.#place.namespace };
  }

  /**
   * Starts a call as a run that a {@link QueueAgentWorker} runs: returns at once; its log (chunks, agent events,
   * its end) is written by the worker to the queue's Redis, so `events(after)` follows it from this process or
   * any other (an `HTTPAgentServer` serving this agent serves `GET /runs/{id}/stream` from it). A worker killed
   * mid-run leaves the run to the next worker that takes the job, which goes on in the same log (a durable
   * agent's call is replayed: its finished tool calls do not run again). `cancel()` removes a job no worker took,
   * or stops the worker running it.
   */
  start(input?: MessageInput | readonly MessageInput[], options: QueueStartOptions = {}): Run {
    if (!isPlainObject(options))
      throw new ConfigurationError({ message: `${this.name}.start: options must be an object` });
    const {
      runId: given,
      runs,
      signal,
      timeout: _timeout,
      ...callOptions
    } = options as QueueStartOptions & {
      timeout?: unknown;
    };
    const sessionId: SessionId = callOptions.sessionId ?? 0;
    delete callOptions.sessionId;
    const runId = given ?? randomUUID();
    checkStoreKey(this.#runLog.description, 'start', runId);
    const settings = runSettings(runs, `${this.name}.start`);
    const place: RunPlace = { store: this.#runLog, namespace: this.#place.namespace, ...settings };
    const message = toMessages(input).map((item) => item.toJSON({ format: 'lagent' }) as LagentMessageJSON);
    const resume = given !== undefined && isResume(input);
    const ready = (async () => {
      const connected = await this.#connect();
      const made = await this.#runLog.createRun(place.namespace, runId, {
        sessionId: String(sessionId),
        status: 'queued',
        ttlMs: settings.idleTtlMs,
      });
      if (!made.created) {
        if (made.run.sessionId !== String(sessionId)) {
          throw new ValidationError({
            field: 'runId',
            message: `run ${JSON.stringify(runId)} is a run of another session; a run id belongs to its session`,
          });
        }
        if (!(resume && made.run.status === 'waiting')) {
          throw new ValidationError({
            field: 'runId',
            message: `a run ${JSON.stringify(runId)} exists already (${made.run.status}); leave runId out for a new run`,
          });
        }
      }
      const jobId = runJobId(runId, made.run.lastSeq);
      const data: CallJobData = {
        message,
        session_id: sessionId,
        kwargs: jobKwargs(callOptions),
        run: { id: runId, resume, ...settings },
      };
      this.#runJobs.set(jobId, { runId, place });
      try {
        await connected.queue.add(CALL_JOB, data, {
          jobId,
          removeOnComplete: true,
          removeOnFail: { age: 24 * 3600, count: 10_000 },
        });
      } catch (error) {
        this.#runJobs.delete(jobId);
        throw new QueueConnectionError({
          message: `${this.name}: could not queue the run on Redis: ${(error as Error).message}`,
          cause: error,
        });
      }
    })();
    const result = ready.then(() => joinRun(place, runId, sessionId).result);
    const run = new Run({
      id: runId,
      sessionId,
      place,
      result,
      ready,
      cancelRun: () => this.cancelRun(runId),
    });
    if (signal?.aborted) void run.cancel().catch(() => {});
    else signal?.addEventListener('abort', () => void run.cancel().catch(() => {}), { once: true });
    return run;
  }

  /**
   * Cancels a run of the queue, from any process: a job no worker took is removed and the run ends `cancelled`;
   * the worker running one is told to stop it (its model request is aborted, nothing is committed). Resolves to
   * the run as it is then, or undefined when there is no such run.
   */
  async cancelRun(runId: string): Promise<RunRecord | undefined> {
    const connected = await this.#connect();
    const namespace = this.#place.namespace;
    const record = await this.#runLog.readRun(namespace, runId);
    if (record === undefined || runEnded(record.status)) return record;
    if (record.status === 'queued' && (await connected.queue.remove(runJobId(runId, record.lastSeq))) === 1) {
      // No worker took it: it never runs, and ends here.
      const execution = new RunExecution(
        { store: this.#runLog, namespace, ...runSettings(undefined) },
        record,
        'execute',
      );
      await execution.fail(new RunFailedError({ message: 'cancelled', runId, status: 'cancelled' }), true);
      return this.#runLog.readRun(namespace, runId);
    }
    const marked = await this.#runLog.cancelRun(namespace, runId);
    await connected.store.cancelRun(runId).catch(() => {});
    return marked;
  }

  /**
   * Connects (calls do this on first use). Rejects with a `QueueConnectionError` when Redis cannot be
   * reached, and a `ConfigurationError` when bullmq or ioredis is not installed.
   */
  async ready(): Promise<void> {
    await this.#connect();
  }

  /**
   * One call of the remote agent on a session (default 0): resolves to its reply. Rejects with a
   * `RemoteAgentError` when the agent failed (the session is then as before), a `TimeoutError` after
   * `timeout`, the signal's reason when aborted, and a `QueueConnectionError` when Redis is unreachable or
   * the connection drops while waiting (the job may then still run, later, once).
   *
   * An interrupt reply is the job's reply, and a resume message goes as an ordinary message on the session.
   * Called inside a local agent's `forward`, a remote interrupt stops the local call, re-rooted at this
   * agent's place in the local tree, and resuming the local call resumes the remote one (as
   * `AsyncHTTPAgentClient.call` does).
   */
  async call(
    input?: MessageInput | readonly MessageInput[],
    options: QueueCallOptions = {},
  ): Promise<AgentMessage> {
    const own = effectiveSignal(options.signal);
    own?.throwIfAborted();
    const timeoutMs = options.timeout ?? this.timeout;
    checkTimeout(timeoutMs);
    const sessionId: SessionId = options.sessionId ?? 0;
    const place = remotePlace(this, this.name);
    const sent = remoteInput(place, input);
    const guards = toolGuardsHere();
    const deadline = timeoutMs === undefined ? undefined : new Deadline(own, timeoutMs, this.name);
    const signal = deadline?.signal ?? own;
    try {
      const connected = await this.#connect();
      const key = String(sessionId);
      const turn = this.#lanes.acquire(key, signal);
      if (turn !== undefined) await turn.ready;
      try {
        const approved = new Set<string>();
        let next: unknown = sent;
        for (;;) {
          // Each job of the call holds what it is sent of the local budget, and is charged what it spent.
          const spend = beginRemote(options, `the queue ${this.name}`);
          let reply: AgentMessage;
          try {
            const data: CallJobData = {
              message: toMessages(next as MessageInput).map(
                (message) => message.toJSON({ format: 'lagent' }) as LagentMessageJSON,
              ),
              session_id: sessionId,
              kwargs: jobKwargs(withToolChecks(spend.options, guards), place !== undefined),
            };
            reply = await this.#submit(connected, data, signal);
            spend.settle(reply);
          } finally {
            spend.fail(); // a job that failed: charged all it was allowed (a no-op once settled)
          }
          const asks = guards === undefined ? [] : checksAsked(reply, `the agent behind queue ${this.queue}`);
          if (asks.length === 0) return throwIfInterrupted(place, reply);
          // The remote call stopped before tool calls: the local tool guardrails check them, then it goes on.
          await checkRemoteCalls(guards!, asks, this.name, sessionId, signal);
          next = approveChecks(
            asks,
            approved,
            (message) =>
              new RemoteAgentError({ message: `${this.name}: ${message}`, jobId: '', remoteName: '' }),
          );
        }
      } finally {
        this.#lanes.release(key);
      }
    } finally {
      deadline?.dispose();
    }
  }

  /**
   * The session's memory as stored in Redis: `{ memory: [...], 'writer.memory': [...] }` in Python Lagent's
   * snake_case shape (what its `load_state_dict` and `GET /memory/{session_id}` use), or lagent-ts's camelCase
   * one with `{ format: 'lagent-ts' }`. An unknown session gives the served agent's keys with empty lists
   * (once a worker has started).
   */
  async stateDict(
    sessionId?: SessionId,
    options?: StateDictOptions & { format?: 'lagent' | undefined },
  ): Promise<LagentStateDict>;
  async stateDict(
    sessionId: SessionId | undefined,
    options: StateDictOptions & { format: 'lagent-ts' },
  ): Promise<StateDict>;
  async stateDict(
    sessionId: SessionId = 0,
    options: StateDictOptions = {},
  ): Promise<StateDict | LagentStateDict> {
    const lagent = options.format !== 'lagent-ts';
    const { redis, store } = await this.#connect();
    const [stored, shapeJSON] = await guard(async () => {
      const stored = (await store.read(sessionId))?.state;
      const state = stored === undefined || Object.keys(stored).length === 0 ? undefined : stored;
      const shape = state !== undefined && lagent ? null : await redis.get(store.keys.shape);
      return [state, shape] as const;
    });
    const shape = shapeJSON ? (JSON.parse(shapeJSON) as AgentShape) : undefined;
    const dict = stored ?? shape?.state ?? {};
    if (lagent) return dict;
    const names = new Map(shape?.keys ?? []);
    const converted: StateDict = {};
    for (const [key, messages] of Object.entries(dict)) {
      converted[names.get(key) ?? key] = (messages ?? []).map((json) => AgentMessage.from(json).toJSON());
    }
    return converted;
  }

  /** Forgets a session's memory in Redis (after any call running on it). */
  async reset(sessionId: SessionId = 0): Promise<void> {
    const { store } = await this.#connect();
    for (let pause = 1; !(await guard(() => store.reset(sessionId))); pause = Math.min(pause * 2, 50)) {
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /**
   * Disconnects (at once when Redis is down). Calls still waiting reject with a `QueueConnectionError` (their
   * jobs stay queued and may still run).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweep);
    this.#failAll('the AsyncQueueAgent was closed while the call waited for its reply');
    let connected: Connected | undefined;
    try {
      connected = await this.#connected;
    } catch {
      return;
    }
    if (!connected) return;
    clearInterval(this.#sweep); // started by a connection that finished opening after close() began
    const { events, queue, redis } = connected;
    await closeBullMQ(redis, [events], Promise.allSettled([events.close(), queue.close()]));
    await closeRedis(connected.redis);
  }

  #connect(): Promise<Connected> {
    if (this.#closed) {
      return Promise.reject(new ConfigurationError({ message: `${this.name}: closed` }));
    }
    if (this.#connected === undefined) {
      this.#connected = this.#open();
      // A failed connection is tried again by the next call.
      this.#connected.catch(() => {
        this.#connected = undefined;
      });
    }
    return this.#connected;
  }

  async #open(): Promise<Connected> {
    const peers = await loadQueuePeers('AsyncQueueAgent');
    const options = connectionOptions(this.#connection);
    // Fail fast while disconnected rather than queue commands for a Redis that may never come back.
    const redis = await connectRedis(peers, options, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    let queue: Queue | undefined;
    let events: QueueEvents | undefined;
    try {
      const keys = new QueueKeys(this.#prefix, this.queue);
      const store = new QueueSessions(redis, keys, this.#place);
      // Reply events from now on: read the stream's last id first so none is missed before the reader starts.
      const last = await redis.xrevrange(`${this.#prefix}:${this.queue}:events`, '+', '-', 'COUNT', 1);
      queue = new peers.bullmq.Queue(this.queue, { connection: redis, prefix: this.#prefix });
      queue.on('error', () => {});
      events = new peers.bullmq.QueueEvents(this.queue, {
        connection: options as ConnectionOptions,
        prefix: this.#prefix,
        lastEventId: last[0]?.[0] ?? '0-0',
      });
      events.on('error', () => {});
      events.on('completed', ({ jobId, returnvalue }) => {
        this.#runJobs.delete(jobId);
        const waiter = this.#take(jobId);
        if (!waiter) return;
        store.forgetDone(jobId).catch(() => {});
        try {
          waiter.resolve(AgentMessage.from(returnvalue));
        } catch (error) {
          waiter.reject(error);
        }
      });
      events.on('failed', ({ jobId, failedReason }) => {
        this.#take(jobId)?.reject(remoteError(jobId, failedReason));
        void this.#runJobFailed(jobId, failedReason);
      });
      await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
      redis.on('close', () => {
        if (!this.#closed) {
          this.#failAll(
            `lost the connection to Redis at ${describeConnection(options)} while the call waited`,
          );
        }
      });
      const connected = { redis, queue, events, store };
      this.#sweep = setInterval(() => this.#sweepLost(connected), SWEEP_MS);
      this.#sweep.unref();
      return connected;
    } catch (error) {
      const opened = events;
      await closeBullMQ(redis, opened ? [opened] : [], Promise.allSettled([opened?.close(), queue?.close()]));
      redis.disconnect();
      if (error instanceof QueueConnectionError) throw error;
      throw new QueueConnectionError({
        message: `could not start on Redis at ${describeConnection(options)}: ${(error as Error).message}`,
        cause: error,
      });
    }
  }

  async #submit(
    connected: Connected,
    data: CallJobData,
    signal: AbortSignal | undefined,
  ): Promise<AgentMessage> {
    signal?.throwIfAborted();
    const jobId = randomUUID();
    const reply = new Promise<AgentMessage>((resolve, reject) => {
      this.#waiting.set(jobId, { resolve, reject, since: Date.now() });
    });
    // The connection may drop (rejecting it) before anything awaits it below.
    reply.catch(() => {});
    try {
      await connected.queue.add(CALL_JOB, data, {
        jobId,
        removeOnComplete: true,
        removeOnFail: { age: 24 * 3600, count: 10_000 },
      });
    } catch (error) {
      this.#waiting.delete(jobId);
      throw new QueueConnectionError({
        message: `${this.name}: could not queue the call on Redis: ${(error as Error).message}`,
        cause: error,
      });
    }
    if (signal === undefined) return reply;
    return new Promise<AgentMessage>((resolve, reject) => {
      const onAbort = () => {
        if (!this.#take(jobId)) return;
        this.#abandon(connected, jobId).finally(() => reject(signal.reason));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      reply.then(
        (message) => {
          signal.removeEventListener('abort', onAbort);
          resolve(message);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
      if (signal.aborted) onAbort();
    });
  }

  /** A call stopped waiting: removes its job if no worker took it, or asks the worker running it to stop. */
  async #abandon(connected: Connected, jobId: string): Promise<void> {
    try {
      if ((await connected.queue.remove(jobId)) === 1) return;
      await connected.store.cancel(jobId);
    } catch {
      // Redis is gone: the worker's lease and the job's lock settle it.
    }
  }

  /** A run's job BullMQ gave up on (its worker failed it, or it stalled too often): the run ends failed. */
  async #runJobFailed(jobId: string, failedReason: string | undefined): Promise<void> {
    const job = this.#runJobs.get(jobId);
    if (job === undefined) return;
    this.#runJobs.delete(jobId);
    try {
      const record = await job.place.store.readRun(job.place.namespace, job.runId);
      if (record === undefined || runEnded(record.status) || record.status === 'waiting') return;
      const { name, message } = parseFailure(failedReason);
      const error = Object.assign(new Error(message), { name });
      await new RunExecution(job.place, record, 'execute').fail(error);
    } catch {
      // Redis is away: the run expires with its time to live.
    }
  }

  #take(jobId: string): Waiter | undefined {
    const waiter = this.#waiting.get(jobId);
    if (waiter) this.#waiting.delete(jobId);
    return waiter;
  }

  #failAll(message: string): void {
    for (const [jobId, waiter] of this.#waiting) {
      this.#waiting.delete(jobId);
      waiter.reject(new QueueConnectionError({ message: `${this.name}: ${message} (job ${jobId})`, jobId }));
    }
  }

  /**
   * Calls whose reply event never came (the event reader lagged past the stream's trimming, or reconnected)
   * look at the job: its commit marker holds the reply; a failed job has its reason; a job that is gone
   * with no marker was lost by Redis.
   */
  async #sweepLost(connected: Connected): Promise<void> {
    const old = Date.now() - SWEEP_MS;
    const lost = [...this.#waiting].filter(([, waiter]) => waiter.since < old).slice(0, 100);
    for (const [jobId] of lost) {
      try {
        // The state first: a job BullMQ finished had committed before, so its marker is there to read next.
        const state = await connected.queue.getJobState(jobId);
        const reply = await connected.store.committedReply(jobId);
        const finished = state === 'completed' || state === 'unknown'; // completed jobs are removed at once
        if (reply !== null) {
          const waiter = this.#take(jobId);
          if (!waiter) continue;
          // While BullMQ may still run the job again, its marker must stay (it keeps the turn from doubling).
          if (finished) connected.store.forgetDone(jobId).catch(() => {});
          waiter.resolve(AgentMessage.from(JSON.parse(reply)));
        } else if (state === 'failed') {
          const job = await connected.queue.getJob(jobId);
          this.#take(jobId)?.reject(remoteError(jobId, job?.failedReason));
        } else if (finished) {
          this.#take(jobId)?.reject(
            new QueueConnectionError({
              message: `${this.name}: job ${jobId} is no longer in Redis (was Redis restarted without persistence?)`,
              jobId,
            }),
          );
        }
      } catch {
        return; // Redis unreachable: the connection's own handling reports it
      }
    }
  }
}

function remoteError(jobId: string, failedReason: string | undefined): RemoteAgentError {
  const { name, message } = parseFailure(failedReason);
  return new RemoteAgentError({
    jobId,
    remoteName: name,
    message: `the remote agent failed (${name}): ${message}`,
  });
}

/** Runs a Redis command, giving a `QueueConnectionError` when Redis cannot be reached. */
async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new QueueConnectionError({ message: `Redis: ${(error as Error).message}`, cause: error });
  }
}

function checkTimeout(timeout: unknown): void {
  if (timeout !== undefined && !(typeof timeout === 'number' && Number.isFinite(timeout) && timeout > 0)) {
    throw new ConfigurationError({
      message: `timeout must be a positive number of ms, got ${String(timeout)}`,
    });
  }
}
