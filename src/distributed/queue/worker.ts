import { randomUUID } from 'node:crypto';
import type { ConnectionOptions, Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { AgentBase, type AsyncCallOptions } from '../../agents/agent-base';
import { finalReply } from '../../agents/final-reply';
import { DURABLE } from '../../agents/interceptors/durable/journal';
import { RunExecution, type RunPlace, runSettings } from '../../agents/runs/run';
import { runRests } from '../../agents/runs/run-reader';
import { AgentMessage, asOwnMessage, type MessageInput } from '../../schema/agent-message';
import { ConfigurationError, ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { isPlainObject } from '../../utils/is';
import { sleep } from '../../utils/timers';
import { CallerOptions, type CallerOptionsPolicy, callIdNotHonoured, replaysCalls } from '../caller-options';
import { closeBullMQ, closeRedis, connectionOptions, connectRedis, type RedisConnection } from './connection';
import { loadQueuePeers } from './load';
import { type CallJobData, failureReason, RUN_CANCEL_PREFIX, type RunJob } from './protocol';
import { SessionCache } from './session-cache';
import { applyChange, type LoadedState, loadState, type StateChange, stateChange } from './session-state';
import {
  type Acquired,
  type AgentShape,
  type Committed,
  QueueKeys,
  type QueueSessionPlace,
  QueueSessions,
  type SessionPlace,
  sessionPlace,
} from './session-store';

/**
 * What a worker can host: any agent, with its state dict. `call` may give a message, a promise of one, or a
 * stream of messages (a streaming agent: its final message is the reply; a queue job has no chunks).
 */
export type QueueHostedAgent = Pick<AgentBase, 'name' | 'stateDict' | 'loadStateDict' | 'reset'> & {
  call(
    input?: MessageInput | readonly MessageInput[],
    options?: AsyncCallOptions,
  ): Promise<AgentMessage> | AgentMessage | AsyncIterable<AgentMessage> | Iterable<AgentMessage>;
};

/** Options of {@link QueueAgentWorker}. */
export interface QueueAgentWorkerOptions extends QueueSessionPlace {
  /** The agent to serve (a composite with sub-agents works: its whole state dict is the session's). */
  agent: QueueHostedAgent;
  /** The BullMQ queue name. @default 'agents' */
  queue?: string | undefined;
  /** Redis: a URL (`redis://127.0.0.1:6379`) or ioredis options. */
  connection: RedisConnection;
  /**
   * What a job may set on its call besides the session: the same policy as `HTTPAgentServer`'s. A job's other
   * kwargs (`model`, `messages`, `tools`, `extraBody`, unknown ones) are ignored.
   * @default a job may set `callId` and `budget` only
   */
  callerOptions?: CallerOptionsPolicy | undefined;
  /** Calls this worker runs at once (on different sessions). @default 1 */
  concurrency?: number | undefined;
  /**
   * How long a job's lock (and its session's lease) lasts without renewal, in ms: a worker that died is noticed
   * after about this long, and its job runs again elsewhere. @default 30_000 (BullMQ's)
   */
  lockDuration?: number | undefined;
  /** How often this worker looks for jobs whose worker died, in ms. @default 30_000 (BullMQ's) */
  stalledInterval?: number | undefined;
  /** How many times a job may be taken back from a dead worker before it fails. @default 1 (BullMQ's) */
  maxStalledCount?: number | undefined;
  /** BullMQ's key prefix. @default 'bull' */
  prefix?: string | undefined;
  /**
   * How much session state this worker keeps between calls, in characters of its JSON: the sessions it
   * committed last, so that their next call here skips reading the whole history from Redis. 0 keeps none.
   * @default 67_108_864 (64 Mi)
   */
  sessionCacheSize?: number | undefined;
}

/** Times a call is run again when another run of its session committed first (a lease lost to a pause). */
const MAX_RUNS = 5;
const DEFAULT_LOCK_MS = 30_000;
const DEFAULT_SESSION_CACHE_SIZE = 64 * 1024 * 1024;

/**
 * Hosts an agent on a BullMQ queue: each job is one `call` of the agent on the job's session. The session's
 * memory lives in Redis as a RedisStore session (the agent's state dict in Python Lagent's shape, in
 * the namespace `namespace`, by default the queue's name), so any worker serves any session, and an agent
 * with `memory: { store: new RedisStore(...), namespace }` reads and continues the same sessions;
 * a per-session lease lets one call of a session run at a time across all workers, and the turn is
 * committed in one script that checks the version it was loaded at, so a worker killed mid-call leaves the
 * session as it was and the job runs again elsewhere, once. Only the worker holding the job's BullMQ lock
 * commits, once per job: a worker that stalled past its lock (a blocked event loop, a paused process) finds
 * the job no longer its own and stops, never running or committing it a second time. A turn appends its own
 * messages to the stored session rather than rewriting the whole history.
 *
 * @example
 * const worker = new QueueAgentWorker({ agent, queue: 'agents', connection: 'redis://127.0.0.1:6379', concurrency: 8 });
 * await worker.ready();
 * // ...
 * await worker.close(); // finishes the calls it runs, then stops
 */
export class QueueAgentWorker {
  readonly agent: QueueHostedAgent;
  readonly queue: string;
  readonly concurrency: number;
  readonly #connection: RedisConnection;
  readonly #options: QueueAgentWorkerOptions;
  readonly #leaseMs: number;
  readonly #place: SessionPlace;
  readonly #cache: SessionCache;
  readonly #callers: CallerOptions;
  #starting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  #worker: Worker | undefined;
  #redis: Redis | undefined;
  #subscriber: Redis | undefined;
  #store: QueueSessions | undefined;
  /** The runs this worker runs now: their job ids, by run id (a cancellation names the run). */
  readonly #runJobs = new Map<string, string>();

  constructor(options: QueueAgentWorkerOptions) {
    if (!isPlainObject(options)) {
      throw new ConfigurationError({
        message: 'QueueAgentWorker expects { agent, queue?, connection, ... }',
      });
    }
    const { agent, queue = 'agents', concurrency = 1 } = options;
    if (agent === null || typeof agent !== 'object' || typeof agent.call !== 'function') {
      throw new ConfigurationError({
        message: 'QueueAgentWorker: agent must be an agent (with call and stateDict)',
      });
    }
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new ConfigurationError({
        message: `QueueAgentWorker: concurrency must be a positive integer, got ${concurrency}`,
      });
    }
    for (const key of ['lockDuration', 'stalledInterval'] as const) {
      const value = options[key];
      if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
        throw new ConfigurationError({
          message: `QueueAgentWorker: ${key} must be a positive number of ms, got ${value}`,
        });
      }
    }
    const cacheSize = options.sessionCacheSize;
    if (cacheSize !== undefined && !(Number.isSafeInteger(cacheSize) && cacheSize >= 0)) {
      throw new ConfigurationError({
        message: `QueueAgentWorker: sessionCacheSize must be a whole number of characters (0 or more), got ${cacheSize}`,
      });
    }
    if (typeof queue !== 'string' || queue === '' || queue.includes(':')) {
      throw new ConfigurationError({
        message: `QueueAgentWorker: queue must be a non-empty name without ':', got ${JSON.stringify(queue)}`,
      });
    }
    connectionOptions(options.connection); // checks it now, not at ready()
    this.#place = sessionPlace(options, queue);
    this.agent = agent;
    this.queue = queue;
    this.concurrency = concurrency;
    this.#connection = options.connection;
    this.#options = options;
    this.#leaseMs = options.lockDuration ?? DEFAULT_LOCK_MS;
    this.#cache = new SessionCache(options.sessionCacheSize ?? DEFAULT_SESSION_CACHE_SIZE);
    this.#callers = new CallerOptions('QueueAgentWorker', options.callerOptions);
  }

  /** The BullMQ `Worker` (after `ready()`), for its events and metrics. */
  get bullWorker(): Worker | undefined {
    return this.#worker;
  }

  /**
   * Connects to Redis and starts taking jobs. Rejects with a `QueueConnectionError` when Redis cannot be
   * reached, and a `ConfigurationError` when bullmq or ioredis is not installed.
   */
  ready(): Promise<void> {
    if (this.#closing) return Promise.reject(new ConfigurationError({ message: 'QueueAgentWorker: closed' }));
    this.#starting ??= this.#start();
    return this.#starting;
  }

  async #start(): Promise<void> {
    const peers = await loadQueuePeers('QueueAgentWorker');
    const options = connectionOptions(this.#connection);
    const prefix = this.#options.prefix ?? 'bull';
    const keys = new QueueKeys(prefix, this.queue);
    // Commands wait through a reconnect: a commit sent while Redis restarts runs once it is back, still fenced.
    const redis = await connectRedis(peers, options, { maxRetriesPerRequest: null });
    this.#redis = redis;
    try {
      this.#store = new QueueSessions(redis, keys, this.#place);
      await redis.set(keys.shape, JSON.stringify(shapeOf(this.agent)));
      const subscriber = redis.duplicate();
      subscriber.on('error', () => {});
      this.#subscriber = subscriber;
      subscriber.on('message', (_channel: string, message: string) => {
        const jobId = message.startsWith(RUN_CANCEL_PREFIX)
          ? this.#runJobs.get(message.slice(RUN_CANCEL_PREFIX.length))
          : message;
        if (jobId !== undefined) this.#worker?.cancelJob(jobId, 'the caller cancelled the call');
      });
      await subscriber.subscribe(keys.cancelChannel);
      const worker = new peers.bullmq.Worker(
        this.queue,
        (job, token, signal) =>
          this.#process(job, token, signal).catch((error: unknown) => {
            // BullMQ keeps only the message: `Name: message` lets the caller name the remote error.
            throw new Error(failureReason(error), { cause: error });
          }),
        {
          connection: options as ConnectionOptions,
          prefix,
          concurrency: this.concurrency,
          ...(this.#options.lockDuration === undefined ? {} : { lockDuration: this.#options.lockDuration }),
          ...(this.#options.stalledInterval === undefined
            ? {}
            : { stalledInterval: this.#options.stalledInterval }),
          ...(this.#options.maxStalledCount === undefined
            ? {}
            : { maxStalledCount: this.#options.maxStalledCount }),
        },
      );
      this.#worker = worker;
      // BullMQ reconnects by itself; its connection errors are not the caller's to handle here.
      worker.on('error', () => {});
      await worker.waitUntilReady();
    } catch (error) {
      await this.#shutdown();
      throw error;
    }
  }

  /**
   * Stops taking jobs, lets the calls in progress finish (and commit), then disconnects. A job that had not
   * started stays in the queue for another worker. When Redis is down it stops at once instead: the calls in
   * progress could not commit, and their jobs run again on another worker once their locks expire.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.#starting;
      } catch {
        // nothing started
      }
      await this.#shutdown();
    })();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    try {
      const worker = this.#worker;
      // Redis down: nothing in progress could commit, so stop at once; those jobs run again elsewhere later.
      if (worker) await closeBullMQ(this.#redis, [worker], worker.close(this.#redis?.status !== 'ready'));
    } finally {
      this.#cache.clear();
      this.#subscriber?.disconnect();
      await closeRedis(this.#redis);
    }
  }

  async #process(job: Job, token: string | undefined, signal: AbortSignal | undefined): Promise<unknown> {
    const data = readJob(job, this.#callers);
    if (data.kwargs.callId !== undefined && !replaysCalls(this.agent)) throw callIdNotHonoured();
    const jobId = job.id!;
    if (token === undefined) throw namedError('JobLostError', `job ${jobId} came without a lock token`);
    if (data.run !== undefined) this.#runJobs.set(data.run.id, jobId);
    try {
      return await this.#attempts(data, jobId, token, signal);
    } finally {
      if (data.run !== undefined && this.#runJobs.get(data.run.id) === jobId)
        this.#runJobs.delete(data.run.id);
    }
  }

  /** Runs a job's call until it is committed (again when another run of its session committed first). */
  async #attempts(
    data: CallJobData,
    jobId: string,
    token: string,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const store = this.#store!;
    const sessionId = data.session_id;
    for (let run = 1; ; run++) {
      const holder = `${jobId}:${randomUUID()}`;
      const acquired = await this.#acquire(store, sessionId, jobId, token, holder, signal);
      if (acquired.status !== 'ok') return this.#settleRun(data, () => settled(acquired, jobId));
      // A run's call is logged as it goes; the run ends once its turn is committed.
      const runCancel = new AbortController();
      let execution: RunExecution | undefined;
      if (data.run !== undefined) {
        try {
          execution = await this.#execution(data.run, sessionId);
        } catch (error) {
          await store.release(sessionId, holder).catch(() => {});
          throw error;
        }
        execution.onCancelRequested = () => {
          if (!runCancel.signal.aborted) runCancel.abort(namedError('AbortError', 'the run was cancelled'));
        };
      }
      // The state this worker committed last, when it is still the session's; else the stored one, read with
      // the lease (no other call commits meanwhile, and the commit checks the version anyway).
      let loaded = acquired.loaded
        ? loadState(acquired.loaded)
        : this.#cache.take(sessionId, acquired.epoch, acquired.version);
      // A lease found taken at renewal, or the job's lock found gone (this process stalled past it), stops
      // the call: another call may run on the session now, or this job on another worker, and this one could
      // not commit anyway. It runs again once the session is free, unless the job is no longer this worker's.
      const lost = new AbortController();
      const renewal = setInterval(() => {
        store.renew(sessionId, jobId, token, holder, this.#leaseMs).then(
          (kept) => {
            if (!kept) lost.abort(namedError('LeaseLostError', 'the session lease was lost'));
          },
          () => {},
        );
      }, this.#leaseMs / 2);
      renewal.unref();
      let committed: Committed | 'lost' = 'lost';
      let reply: unknown;
      let message: AgentMessage | undefined;
      try {
        let version = acquired.version;
        if (loaded === undefined) {
          // The kept state was dropped meanwhile (to make room for another session's).
          const stored = await store.read(sessionId);
          version = stored?.version ?? 0;
          loaded = loadState(stored ?? { state: {}, size: 0 });
        }
        const turn = await this.#run(
          data,
          jobId,
          loaded,
          AbortSignal.any(signal ? [signal, lost.signal, runCancel.signal] : [lost.signal, runCancel.signal]),
          execution,
        );
        reply = turn.reply;
        message = turn.message;
        const after = applyChange(loaded, turn.change);
        committed = await store.commit(
          sessionId,
          jobId,
          token,
          holder,
          version,
          turn.change.kind === 'none' ? { kind: 'append', payload: '{}' } : turn.change,
          JSON.stringify(reply),
          () => JSON.stringify(after.state ?? {}),
        );
        if (committed.status === 'ok') this.#cache.set(sessionId, committed.epoch, committed.version, after);
      } catch (error) {
        await store.release(sessionId, holder).catch(() => {});
        const cancelled = signal?.aborted === true || runCancel.signal.aborted;
        if (!lost.signal.aborted || cancelled) {
          await execution?.fail(error, cancelled).catch(() => {});
          throw error;
        }
        // The lease was lost: the call runs again (in the same log, when it is a run).
        execution?.abandon();
      } finally {
        clearInterval(renewal);
      }
      if (committed !== 'lost') {
        if (committed.status === 'ok') {
          await execution?.end(message!).catch(() => {});
          return reply;
        }
        if (committed.status !== 'conflict' && committed.status !== 'lost') {
          execution?.abandon();
          const outcome = committed;
          return this.#settleRun(data, () => settled(outcome, jobId));
        }
      }
      execution?.abandon();
      if (run >= MAX_RUNS) {
        throw namedError(
          'SessionConflictError',
          `session ${JSON.stringify(String(sessionId))} kept changing under the call (${run} runs)`,
        );
      }
    }
  }

  /** The place of a run's log: the queue's RedisStore, under its sessions' namespace. */
  #runPlace(run: RunJob): RunPlace {
    return { store: this.#store!.store, namespace: this.#place.namespace, ...runSettings(run, this.queue) };
  }

  /**
   * The writing of a run's log for an attempt at its job: the run as its caller made it (or as an attempt of
   * a worker that died left it), which must not have ended; one waiting for a decision only for a resume.
   */
  async #execution(run: RunJob, sessionId: SessionId): Promise<RunExecution> {
    const place = this.#runPlace(run);
    const { run: record } = await place.store.createRun(place.namespace, run.id, {
      sessionId: String(sessionId),
      status: 'queued',
      ttlMs: place.idleTtlMs,
    });
    if (record.sessionId !== String(sessionId)) {
      throw namedError('ValidationError', `run ${JSON.stringify(run.id)} is a run of another session`);
    }
    if (record.status === 'cancelled')
      throw namedError('AbortError', 'the run was cancelled before it started');
    if (record.cancelRequested && !runRests(record.status)) {
      // Cancelled while its job waited (through a store that could not remove the job): it ends here, unrun.
      const error = namedError('AbortError', 'the run was cancelled before it started');
      await new RunExecution(place, record, 'execute').fail(error, true);
      throw error;
    }
    if (record.status === 'waiting' ? run.resume !== true : runRests(record.status)) {
      throw namedError('RunEndedError', `run ${JSON.stringify(run.id)} has ended (${record.status})`);
    }
    return new RunExecution(place, record, run.resume === true ? 'resume' : 'execute');
  }

  /**
   * The outcome of a job found committed, cancelled or lost before it ran (see `settled`): a run's log ends with
   * it, when an earlier attempt did not end it (it died after committing).
   */
  async #settleRun(data: CallJobData, outcome: () => unknown): Promise<unknown> {
    let value: unknown;
    let failure: unknown;
    let failed = false;
    try {
      value = outcome();
    } catch (error) {
      failed = true;
      failure = error;
    }
    const run = data.run;
    if (run !== undefined && !(failed && (failure as Error).name === 'JobLostError')) {
      try {
        const place = this.#runPlace(run);
        const record = await place.store.readRun(place.namespace, run.id);
        if (record !== undefined && !runRests(record.status)) {
          const execution = new RunExecution(place, record, 'execute');
          if (!failed) await execution.end(AgentMessage.from(value as never));
          else await execution.fail(failure, (failure as Error).name === 'AbortError');
        }
      } catch {
        // The run's log is best effort here: it expires with its time to live.
      }
    }
    if (failed) throw failure;
    return value;
  }

  /** Takes the session's lease, waiting while another call holds it. */
  async #acquire(
    store: QueueSessions,
    sessionId: SessionId,
    jobId: string,
    token: string,
    holder: string,
    signal: AbortSignal | undefined,
  ): Promise<Exclude<Acquired, { status: 'busy' }>> {
    let pause = 1;
    for (;;) {
      if (signal?.aborted) throw namedError('AbortError', 'the caller cancelled the call before it started');
      const known = this.#cache.peek(sessionId);
      const acquired = await store.acquire(sessionId, jobId, token, holder, this.#leaseMs, known);
      if (acquired.status !== 'busy') return acquired;
      // An abort ends the pause early; the loop then sees the signal.
      await sleep(Math.max(1, Math.min(pause, acquired.retryInMs)), signal).catch(() => undefined);
      pause = Math.min(pause * 2, 50);
    }
  }

  /**
   * One call of the agent on the stored state, and what it changed there; the agent keeps nothing of the
   * session afterwards.
   */
  async #run(
    data: CallJobData,
    jobId: string,
    before: LoadedState,
    signal: AbortSignal | undefined,
    execution?: RunExecution,
  ): Promise<{ reply: unknown; message: AgentMessage; change: StateChange }> {
    const agent = this.agent;
    const sessionId = data.session_id;
    try {
      // Frozen: the commit compares the new state with it, so the agent cannot change it in place.
      if (before.state === undefined) agent.reset(sessionId, { recursive: true });
      else agent.loadStateDict(before.state, sessionId);
      // An agent of another copy of lagent-ts takes the messages' JSON (its AgentMessage is not this one).
      const own = agent instanceof AgentBase;
      const messages = data.message.map((json) => {
        const message = AgentMessage.from(json);
        return own ? message : message.toJSON();
      });
      const options: AsyncCallOptions = { ...data.kwargs, sessionId };
      if (signal) options.signal = signal;
      // A durable agent's job is its call (a run's, its run id): a worker that takes the job up again after
      // its worker died replays the call from its journal, and its finished tool calls do not run again.
      if (options.callId === undefined && (agent as { [DURABLE]?: unknown })[DURABLE]) {
        options.callId = data.run?.id ?? jobId;
      }
      const reply =
        execution === undefined
          ? await finalMessage(agent.call(messages as AgentMessage[], options))
          : await execution.call(agent, messages, options as Record<string, unknown>, signal);
      const after = agent.stateDict(sessionId, { format: 'lagent' });
      return {
        reply: reply.toJSON({ format: 'lagent' }),
        message: reply,
        change: stateChange(before, after),
      };
    } finally {
      // Before the lease goes: the next call of this session may run here as soon as it is released.
      agent.reset(sessionId, { recursive: true });
    }
  }
}

/**
 * The end of a job found committed, cancelled or no longer this worker's: the committed reply, or an error
 * (BullMQ cannot record a job this worker lost, and drops it).
 */
function settled(
  found: Exclude<Acquired | Committed, { status: 'ok' | 'busy' | 'lost' | 'conflict' }>,
  jobId: string,
): unknown {
  switch (found.status) {
    case 'done':
      return JSON.parse(found.reply);
    case 'committed':
      throw namedError(
        'AlreadyCommittedError',
        `job ${jobId} was committed before, and its reply is no longer kept`,
      );
    case 'cancelled':
      throw namedError('AbortError', 'the caller cancelled the call before it started');
    case 'stale':
      throw namedError('JobLostError', `job ${jobId} is no longer this worker's (its lock expired)`);
  }
}

/** The served agent's keys, from the state dict of a session it has never seen (which creates nothing). */
function shapeOf(agent: QueueHostedAgent): AgentShape {
  const unseen = `\0shape:${randomUUID()}`;
  const lagent = Object.keys(agent.stateDict(unseen, { format: 'lagent' }));
  const own = Object.keys(agent.stateDict(unseen));
  return {
    state: Object.fromEntries(lagent.map((key) => [key, []])),
    keys: lagent.map((key, i) => [key, own[i] ?? key]),
  };
}

/** A job's data, its kwargs read through the worker's caller policy. */
function readJob(job: Job, callers: CallerOptions): CallJobData {
  const data = job.data as Partial<CallJobData> | undefined;
  if (
    !isPlainObject(data) ||
    !Array.isArray(data.message) ||
    !(typeof data.session_id === 'string' || typeof data.session_id === 'number') ||
    (data.kwargs !== undefined && !isPlainObject(data.kwargs))
  ) {
    throw new ValidationError({
      field: '(root)',
      message: `job ${job.id} is not an agent call ({ message: [...], session_id, kwargs })`,
    });
  }
  const run = data.run;
  if (
    run !== undefined &&
    (!isPlainObject(run) ||
      typeof run.id !== 'string' ||
      run.id === '' ||
      run.id.length > 1024 ||
      (run.resume !== undefined && typeof run.resume !== 'boolean'))
  ) {
    throw new ValidationError({ field: 'run', message: `job ${job.id} names no run ({ id, resume? })` });
  }
  // The worker decides what a job may set: never the model, its tools or a signal.
  return {
    message: data.message,
    session_id: data.session_id,
    kwargs: callers.read(data.kwargs ?? {}).options,
    ...(run === undefined ? {} : { run }),
  };
}

/** The reply of a call: the message itself, or the last message of a stream. */
async function finalMessage(result: unknown): Promise<AgentMessage> {
  const last = asOwnMessage(await finalReply(result));
  if (last === undefined) {
    throw new ValidationError({ field: '(root)', message: "the agent's stream ended without a message" });
  }
  return last;
}

/** An error with its own name: BullMQ passes only `Name: message` on to the caller. */
function namedError(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}
