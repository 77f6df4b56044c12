import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { AgentMessage, asOwnMessage, type MessageInput } from '../../schema/agent-message';
import { ConfigurationError, RunFailedError, ValidationError } from '../../schema/errors';
import { interruptsOf, RESUME_TYPE } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import { MemoryStore } from '../../stores/memory-store';
import {
  checkStoreKey,
  type RunLogStore,
  type RunRecord,
  runLogOf,
  type SessionStore,
} from '../../stores/types';
import { isAsyncIterator, isIterator, isThenable } from '../../utils/is';
import { errorMessage } from '../../utils/text';
import { CallNotRecovered, DURABLE } from '../interceptors/durable/journal';
import { sessionBindingOf } from '../interceptors/session-store/persist';
import {
  agentEvent,
  ChunkEncoder,
  errorEvent,
  isChunk,
  type LiveRunEvent,
  liveEvent,
  messageEvent,
  RUN_AGENT_EVENTS,
  RUN_EVENT_TYPES,
  type RunAgentEventKind,
  statusEvent,
  toWire,
} from './run-events';
import { followRun, runRests, unknownRun } from './run-reader';
import { RunLog, runWriterOf } from './run-writer';

type LogStore = RunLogStore;

/** Where a run's log is kept, and for how long. */
export interface RunLogOptions {
  /**
   * The store of the log (a store of lagent-ts: they all keep run logs). @default the agent's `durable` store,
   * else its `memory` store, else a store in this process
   */
  store?: SessionStore | undefined;
  /** @default the `durable` (or `memory`) option's namespace, else the agent's name */
  namespace?: string | undefined;
  /** How long a run is kept once it ended (or waits for a decision), in ms. @default 86_400_000 (24 h) */
  retainMs?: number | undefined;
  /**
   * How long a run that writes nothing is kept while it runs, in ms: a run whose process died without a
   * durable call to recover is dropped after it. @default 604_800_000 (7 days)
   */
  idleTtlMs?: number | undefined;
  /**
   * The most chunks and agent events a run's log keeps: past it, they are no longer logged (its status and its
   * end still are), and one `truncated` event says so. @default 100_000
   */
  maxEvents?: number | undefined;
}

/** Options of `agent.start()`: those of a call, the run's id, and where its log is kept. */
export interface StartOptions {
  sessionId?: SessionId | undefined;
  /** Cancels the run when aborted. */
  signal?: AbortSignal | undefined;
  /**
   * The run's id (a string of 1 to 1,024 characters), and the id of its call for an agent that replays calls
   * (`durable`): a process that recovers the call writes to the same log. @default `callId` when given, else a
   * random UUID
   */
  runId?: string | undefined;
  /** Where the run's log is kept. */
  runs?: RunLogOptions | undefined;
  /** Any other option of the agent's `call`. */
  [option: string]: unknown;
}

/** An event of a run's log, its data parsed (see `run-events.ts` for the types). */
export interface RunLogEvent {
  seq: number;
  type: string;
  data: unknown;
}

/** The defaults of {@link RunLogOptions}. */
export const DEFAULT_RUN_RETAIN_MS = 86_400_000;
export const DEFAULT_RUN_IDLE_TTL_MS = 604_800_000;
export const DEFAULT_RUN_MAX_EVENTS = 100_000;

/** A run's log, resolved: the store, its namespace and times. */
export interface RunPlace {
  store: LogStore;
  namespace: string;
  retainMs: number;
  idleTtlMs: number;
  maxEvents: number;
}

/** The store of runs started without one, whose agent has no store either: this process's. */
let processRuns: MemoryStore | undefined;

/** Where the runs of `agent` are logged, given `options` (checked). */
export function runPlaceOf(agent: object, options: RunLogOptions | undefined, owner = 'start'): RunPlace {
  const given = options ?? {};
  if (typeof given !== 'object' || given === null) {
    throw new ConfigurationError({
      message: `${owner}: runs must be { store?, namespace?, retainMs?, ... }`,
    });
  }
  const durable = (agent as { [DURABLE]?: { store: SessionStore; namespace?: string } })[DURABLE];
  const binding = sessionBindingOf(agent);
  const name = (agent as { name?: unknown }).name;
  const fallback =
    durable ?? (binding === undefined ? undefined : { store: binding.store, namespace: binding.namespace });
  let store = given.store ?? fallback?.store;
  if (store === undefined) {
    processRuns ??= new MemoryStore();
    store = processRuns;
  }
  const log = runLogOf(store);
  if (log === undefined) {
    throw new ConfigurationError({
      message: `${owner}: ${store.description} keeps no run logs; give runs: { store } a store of lagent-ts`,
    });
  }
  const namespace =
    given.namespace ??
    (given.store === undefined || given.store === fallback?.store ? fallback?.namespace : undefined) ??
    (typeof name === 'string' && name !== '' ? name : 'runs');
  return {
    store: log,
    namespace,
    retainMs: positive(owner, 'runs.retainMs', given.retainMs, DEFAULT_RUN_RETAIN_MS),
    idleTtlMs: positive(owner, 'runs.idleTtlMs', given.idleTtlMs, DEFAULT_RUN_IDLE_TTL_MS),
    maxEvents: positive(owner, 'runs.maxEvents', given.maxEvents, DEFAULT_RUN_MAX_EVENTS),
  };
}

/** The times and size of a run log (`retainMs`, `idleTtlMs`, `maxEvents`), checked, with their defaults. */
export function runSettings(
  options: Pick<RunLogOptions, 'retainMs' | 'idleTtlMs' | 'maxEvents'> | undefined,
  owner = 'start',
): Pick<RunPlace, 'retainMs' | 'idleTtlMs' | 'maxEvents'> {
  return {
    retainMs: positive(owner, 'runs.retainMs', options?.retainMs, DEFAULT_RUN_RETAIN_MS),
    idleTtlMs: positive(owner, 'runs.idleTtlMs', options?.idleTtlMs, DEFAULT_RUN_IDLE_TTL_MS),
    maxEvents: positive(owner, 'runs.maxEvents', options?.maxEvents, DEFAULT_RUN_MAX_EVENTS),
  };
}

function positive(owner: string, name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(typeof value === 'number' && Number.isSafeInteger(value) && value > 0)) {
    throw new ConfigurationError({
      message: `${owner}: ${name} must be a positive whole number, got ${String(value)}`,
    });
  }
  return value;
}

/**
 * A call running in the background (see `agent.start`): its log of events, which any number of readers follow
 * from any event on (`events(after)`), its reply (`result`), and `cancel()`. The run goes on whoever reads it
 * or stops reading.
 */
export class Run {
  readonly id: string;
  readonly sessionId: SessionId;
  readonly store: LogStore;
  readonly namespace: string;
  /**
   * The reply: the final message, or an interrupt (the run waits for a decision: start a run with the resume
   * message on the session to go on). Rejects with the error the run failed with, or a `RunFailedError`
   * (status `cancelled`, or a run another process ran).
   */
  readonly result: Promise<AgentMessage>;
  /** Settles once the run is in the store (its id can be handed out); rejects when it could not be made. */
  readonly ready: Promise<void>;
  readonly #cancel: () => void;
  readonly #cancelRun: (() => Promise<RunRecord | undefined>) | undefined;

  /**
   * @internal Runs are made by `agent.start()` and {@link joinRun}. `cancel` stops the run where it executes
   * in this process; `cancelRun`, when given, is the whole of `cancel()` (a run executed elsewhere, e.g. a queue's).
   */
  constructor(init: {
    id: string;
    sessionId: SessionId;
    place: Pick<RunPlace, 'store' | 'namespace'>;
    result: Promise<AgentMessage>;
    ready: Promise<void>;
    cancel?: () => void;
    cancelRun?: () => Promise<RunRecord | undefined>;
  }) {
    this.id = init.id;
    this.sessionId = init.sessionId;
    this.store = init.place.store;
    this.namespace = init.place.namespace;
    this.result = init.result;
    this.ready = init.ready;
    this.#cancel = init.cancel ?? (() => {});
    this.#cancelRun = init.cancelRun;
    // Nobody may be waiting for them: not an unhandled rejection.
    this.result.catch(() => {});
    this.ready.catch(() => {});
  }

  /**
   * The run's events after `after` (0: from the first), then live ones as they are logged, until the run ends
   * or waits for a decision. Any number of readers; a reader that stops changes nothing for the run.
   */
  async *events(after = 0, options: { signal?: AbortSignal | undefined } = {}): AsyncGenerator<RunLogEvent> {
    checkAfter(after);
    await this.ready;
    for await (const event of followRun(this.store, this.namespace, this.id, {
      after,
      signal: options.signal,
    })) {
      yield { seq: event.seq, type: event.type, data: JSON.parse(event.data) as unknown };
    }
  }

  /** The run as its store has it now (status, last event number, ...), or undefined once it is gone. */
  async info(): Promise<RunRecord | undefined> {
    await this.ready.catch(() => undefined);
    return this.store.readRun(this.namespace, this.id);
  }

  /**
   * Asks for the run to stop: its model request is aborted and it ends `cancelled` (a run that already ended is
   * left as it is; one waiting for a decision is cancelled at once). Resolves to the run as it is then.
   */
  async cancel(): Promise<RunRecord | undefined> {
    this.#cancel();
    await this.ready.catch(() => undefined);
    if (this.#cancelRun !== undefined) return this.#cancelRun();
    const record = await this.store.cancelRun(this.namespace, this.id);
    local.get(localKey(this.store, this.namespace, this.id))?.cancel();
    return record;
  }
}

function checkAfter(after: unknown): void {
  if (!(typeof after === 'number' && Number.isSafeInteger(after) && after >= 0)) {
    throw new ValidationError({
      field: 'after',
      message: `after must be a whole number (0 or more), got ${String(after)}`,
    });
  }
}

/** Runs executing in this process, by store, namespace and id: a cancellation reaches them at once. */
const local = new Map<string, { cancel(): void }>();
const storeIds = new WeakMap<object, number>();
let nextStoreId = 0;

function localKey(store: object, namespace: string, runId: string): string {
  let id = storeIds.get(store);
  if (id === undefined) {
    id = ++nextStoreId;
    storeIds.set(store, id);
  }
  return `${id}\u0000${namespace}\u0000${runId}`;
}

/** Cancels a run executing in this process (a no-op when it is not here). */
export function cancelLocalRun(store: object, namespace: string, runId: string): boolean {
  const running = local.get(localKey(store, namespace, runId));
  running?.cancel();
  return running !== undefined;
}

/** What the agent tree is doing inside a run: its agent events go to the run's log. */
interface RunContext {
  agent: object;
  event(kind: RunAgentEventKind, payload: Record<string, unknown>): void;
}

const runContext = new AsyncLocalStorage<RunContext>();
/** Agents whose events are listened to (once each): an event goes to the run it was emitted in. */
const listened = new WeakSet<object>();

function listenTo(agent: object): boolean {
  const events = (agent as { events?: { on?: unknown } }).events;
  if (events === null || typeof events !== 'object' || typeof events.on !== 'function') return false;
  if (listened.has(agent)) return true;
  listened.add(agent);
  for (const kind of RUN_AGENT_EVENTS) {
    (events.on as (kind: string, listener: (payload: Record<string, unknown>) => void) => void).call(
      events,
      kind,
      (payload) => {
        const context = runContext.getStore();
        if (context !== undefined && context.agent === agent) context.event(kind, payload);
      },
    );
  }
  return true;
}

/**
 * How a run begins: a new run, a waiting run going on with a decision, a run another process left (recovered),
 * or a run another process made for this one to run (a queue job: taken up again when its worker died).
 */
export type RunMode = 'new' | 'resume' | 'recover' | 'execute';

/** What {@link executeRun} takes. */
export interface ExecuteRunOptions {
  agent: { call(input: unknown, options: Record<string, unknown>): unknown };
  input: MessageInput | readonly MessageInput[] | undefined;
  /** The call's options (its session, callId, ...; not its signal: the run has its own). */
  callOptions: Record<string, unknown>;
  runId: string;
  sessionId: SessionId;
  place: RunPlace;
  mode: RunMode;
  signal?: AbortSignal | undefined;
}

/**
 * Starts a run of `agent` in this process (what `agent.start()` does): the call runs in the background,
 * streamed when the agent streams, its chunks and agent events logged to the run's log.
 */
export function startRun(
  agent: { call(input: unknown, options: Record<string, unknown>): unknown },
  input: MessageInput | readonly MessageInput[] | undefined,
  options: StartOptions = {},
): Run {
  if (options === null || typeof options !== 'object') {
    throw new ConfigurationError({ message: 'start: options must be an object' });
  }
  const { runs, runId: givenId, signal, ...callOptions } = options;
  const place = runPlaceOf(agent, runs);
  const callId = callOptions.callId;
  if (callId !== undefined && (typeof callId !== 'string' || callId === '')) {
    throw new ConfigurationError({ message: 'start: callId must be a non-empty string' });
  }
  const runId = givenId ?? (callId as string | undefined) ?? newRunId();
  checkStoreKey(place.store.description, 'start', runId);
  if (callId === undefined && (agent as { [DURABLE]?: unknown })[DURABLE] !== undefined)
    callOptions.callId = runId;
  const sessionId = (callOptions.sessionId ?? 0) as SessionId;
  callOptions.sessionId = sessionId;
  // A resume message given the id of a run waiting for it goes on with that run (its log continues).
  const mode: RunMode = givenId !== undefined && isResume(input) ? 'resume' : 'new';
  return executeRun({ agent, input, callOptions, runId, sessionId, place, mode, signal });
}

/**
 * Runs a call as a run: makes (or, to go on with one, finds) the run in its store, calls the agent, logs what
 * it does, and ends the run with its reply or its error.
 */
export function executeRun(options: ExecuteRunOptions): Run {
  const { place, runId, sessionId, mode } = options;
  const { store, namespace } = place;
  const controller = new AbortController();
  const cancelled = new Cancellation(runId);
  const cancel = () => {
    if (!controller.signal.aborted) controller.abort(cancelled.error);
  };
  if (options.signal?.aborted) cancel();
  else options.signal?.addEventListener('abort', cancel, { once: true });
  let created!: () => void;
  let failedToCreate!: (error: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    created = resolve;
    failedToCreate = reject;
  });
  const result = (async () => {
    let record: RunRecord;
    let isNew: boolean;
    try {
      const made = await store.createRun(namespace, runId, {
        sessionId: String(sessionId),
        status: 'queued',
        ttlMs: place.idleTtlMs,
      });
      record = made.run;
      isNew = made.created;
      if (!isNew) checkGoesOn(record, runId, String(sessionId), mode);
    } catch (error) {
      failedToCreate(error);
      throw error;
    }
    created();
    return runLogged(options, record, isNew, controller, cancelled);
  })();
  const key = localKey(store, namespace, runId);
  local.set(key, { cancel });
  const settled = () => {
    if (local.get(key)?.cancel === cancel) local.delete(key);
    options.signal?.removeEventListener('abort', cancel);
  };
  result.then(settled, settled);
  return new Run({ id: runId, sessionId, place, result, ready, cancel });
}

/**
 * A new run's id: a random UUID copied into one string. Node builds a UUID by concatenating its pieces, and a
 * store that keeps it as a key would keep every piece (about 400 bytes a run).
 */
function newRunId(): string {
  return Buffer.from(randomUUID(), 'latin1').toString('latin1');
}

/**
 * The error a run is cancelled with, made when it is (an error's stack costs microseconds; most runs never need
 * it).
 */
class Cancellation {
  readonly #runId: string;
  #error: RunFailedError | undefined;

  constructor(runId: string) {
    this.#runId = runId;
  }

  get error(): RunFailedError {
    this.#error ??= new RunFailedError({
      message: `run ${JSON.stringify(this.#runId)} was cancelled`,
      runId: this.#runId,
      status: 'cancelled',
    });
    return this.#error;
  }

  /** True for this run's cancellation (once made). */
  is(reason: unknown): boolean {
    return this.#error !== undefined && reason === this.#error;
  }
}

/** A run of that id exists: it may go on only as asked (a decision for a waiting run, a recovery). */
function checkGoesOn(record: RunRecord, runId: string, sessionId: string, mode: RunMode): void {
  if (record.sessionId !== sessionId) {
    throw new ValidationError({
      field: 'runId',
      message: `run ${JSON.stringify(runId)} is a run of another session; a run id belongs to its session`,
    });
  }
  if ((mode === 'recover' || mode === 'execute') && !runRests(record.status)) return;
  if (mode === 'resume' && record.status === 'waiting') return;
  throw new ValidationError({
    field: 'runId',
    message: `a run ${JSON.stringify(runId)} exists already (${record.status}); leave runId out for a new run`,
  });
}

/** The call, with its log: called, then ended with its reply or its error. */
async function runLogged(
  options: ExecuteRunOptions,
  record: RunRecord,
  created: boolean,
  controller: AbortController,
  cancelled: Cancellation,
): Promise<AgentMessage> {
  const execution = new RunExecution(options.place, record, options.mode);
  execution.onCancelRequested = () => {
    if (!controller.signal.aborted) controller.abort(cancelled.error);
  };
  let reply: AgentMessage;
  try {
    reply = await execution.call(
      options.agent,
      options.input,
      { ...options.callOptions, signal: controller.signal },
      controller.signal,
    );
  } catch (error) {
    if (error instanceof CallNotRecovered && execution.holding) {
      // Nothing to recover after all (it waits for a decision, or it ended): the log is left as it is.
      execution.abandon();
      const { store, namespace } = options.place;
      if (created) await Promise.resolve(store.deleteRun(namespace, options.runId)).catch(() => {});
      throw error;
    }
    const wasCancelled = controller.signal.aborted && cancelled.is(controller.signal.reason);
    const failure = wasCancelled ? cancelled.error : error;
    await execution.fail(failure, wasCancelled);
    throw failure;
  }
  if (execution.holding && isReplayOfFinished(reply)) {
    // Finished by another process while this one waited for its lease: that one logged it.
    execution.abandon();
    if (created) await options.place.store.deleteRun(options.place.namespace, options.runId);
    return reply;
  }
  await execution.end(reply);
  return reply;
}

/**
 * One process's writing of a run: the call it makes (its chunks and agent events logged), then its end. A queue
 * worker drives it in two steps, ending the run only once the session's turn is committed.
 */
export class RunExecution {
  readonly log: RunLog;
  readonly #place: RunPlace;
  readonly #mode: RunMode;
  #logged = 0;
  #truncated = false;
  /** A recovery's first events, held until the call does something (see {@link RunExecution.holding}). */
  #held: LiveRunEvent[] | undefined;
  #running = false;
  #closed = false;
  /** Called when a write finds that somebody asked for the run to be cancelled. */
  onCancelRequested: () => void = () => {};

  constructor(place: RunPlace, record: RunRecord, mode: RunMode) {
    this.#place = place;
    this.#mode = mode;
    const writer = runWriterOf(place.store);
    this.log = new RunLog(writer, place.namespace, record.runId, place.idleTtlMs);
    this.log.lastSeq = record.lastSeq;
    this.log.onCancelRequested = () => this.onCancelRequested();
    // A recovery logs nothing until the call does something: a call another process finished meanwhile, or one
    // that needs no recovery, leaves the log as it is.
    this.#held = mode === 'recover' ? [] : undefined;
    // A waiting run that goes on no longer rests: readers here wait for its events rather than end at once.
    writer.open(
      this.log,
      record.lastSeq,
      mode === 'resume' && record.status === 'waiting' ? 'running' : record.status,
    );
    if (record.cancelRequested) queueMicrotask(() => this.onCancelRequested());
  }

  /** True while a recovery has logged nothing yet. */
  get holding(): boolean {
    return this.#held !== undefined;
  }

  /**
   * Calls the agent, logging its chunks and agent events (the run is `running` from its first event); resolves to
   * its reply, or rejects with its error. The run is not ended: {@link end} or {@link fail} does that.
   */
  async call(
    agent: { call(input: unknown, options: Record<string, unknown>): unknown },
    input: unknown,
    callOptions: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<AgentMessage> {
    const context: RunContext = {
      agent,
      event: (kind, payload) => {
        if ((kind === 'callStart' || kind === 'resume') && payload.path === '') this.#markRunning();
        else this.#release();
        this.#take(agentEvent(kind, payload));
        // A call of the session that a process left, recovered first by this one: its own run ends with it.
        if (kind === 'callRecovered' && payload.path === '') void settleRecovered(this.#place, payload);
      },
    };
    // An agent without events is running as soon as it is called.
    if (!listenTo(agent)) this.#markRunning();
    return runContext.run(context, async () => {
      signal?.throwIfAborted();
      let result = agent.call(input, callOptions);
      if (isThenable(result)) result = await result;
      if (isAsyncIterator(result) || (isIterator(result) && asOwnMessage(result) === undefined)) {
        result = await relayStream(
          result as AsyncIterator<unknown> | Iterator<unknown>,
          this.log,
          (event) => {
            this.#release();
            this.#take(event);
          },
        );
      }
      const message = asOwnMessage(result);
      if (message !== undefined) return message;
      if (typeof result === 'string') return new AgentMessage({ sender: 'assistant', content: result });
      return AgentMessage.from(toWire(result) as never);
    });
  }

  /** Ends the run with its reply: `done`, or `waiting` for an interrupt. Resolves once it is written. */
  async end(reply: AgentMessage): Promise<void> {
    this.#markRunning();
    this.#release();
    const status = interruptsOf(reply).length > 0 ? 'waiting' : 'done';
    this.log.append(messageEvent(reply));
    this.log.setStatus(status, JSON.stringify({ reply: toWire(reply) }), this.#place.retainMs);
    await this.#close();
  }

  /** Ends the run `failed` (or `cancelled`) with why. Resolves once it is written. */
  async fail(error: unknown, cancelled = false): Promise<void> {
    this.#markRunning();
    this.#release();
    const status = cancelled ? 'cancelled' : 'failed';
    const name = cancelled ? 'RunCancelled' : error instanceof Error ? error.name : 'Error';
    const detail = cancelled ? 'the run was cancelled' : errorMessage(error);
    this.log.append(errorEvent(status, detail, name));
    this.log.setStatus(status, JSON.stringify({ error: { detail, error: name } }), this.#place.retainMs);
    await this.#close();
  }

  /**
   * Stops writing without ending the run (another process goes on with it, or a recovery found nothing to do):
   * what was logged stays; held events are dropped.
   */
  abandon(): void {
    this.#held = undefined;
    if (this.#closed) return;
    this.#closed = true;
    this.log.writer.close(this.log);
  }

  async #close(): Promise<void> {
    await this.log.drain();
    if (this.#closed) return;
    this.#closed = true;
    this.log.writer.close(this.log);
  }

  #write(event: LiveRunEvent): void {
    if (this.#held !== undefined) this.#held.push(event);
    else this.log.append(event);
  }

  #take(event: LiveRunEvent): void {
    if (this.#logged >= this.#place.maxEvents) {
      if (!this.#truncated) {
        this.#truncated = true;
        this.#write(
          liveEvent(RUN_EVENT_TYPES.truncated, JSON.stringify({ maxEvents: this.#place.maxEvents })),
        );
      }
      return;
    }
    this.#logged++;
    this.#write(event);
  }

  #release(): void {
    const held = this.#held;
    if (held === undefined) return;
    this.#held = undefined;
    for (const event of held) this.log.append(event);
    this.log.setStatus('running', undefined);
  }

  #markRunning(): void {
    if (this.#running) return;
    this.#running = true;
    const mode = this.#mode;
    const extra =
      mode === 'recover' || (mode === 'execute' && this.log.lastSeq > 0)
        ? { recovered: true }
        : mode === 'resume'
          ? { resumed: true }
          : undefined;
    this.#write(statusEvent('running', extra));
    if (this.#held === undefined) this.log.setStatus('running', undefined);
  }
}

/** True for the reply of a durable call that had finished: returned from its journal, nothing run. */
function isReplayOfFinished(reply: AgentMessage): boolean {
  const extra = reply.extraInfo as { idempotentReplay?: unknown } | null | undefined;
  return extra !== null && typeof extra === 'object' && extra.idempotentReplay === true;
}

/**
 * A durable call of the session that a process left unfinished was recovered first by a later call: the run it
 * was (id = its call id) ends with its reply, when the run is in the log and has not ended.
 */
async function settleRecovered(place: RunPlace, payload: Record<string, unknown>): Promise<void> {
  const callId = payload.callId;
  const reply = asOwnMessage(payload.message);
  if (typeof callId !== 'string' || reply === undefined) return;
  try {
    const record = await place.store.readRun(place.namespace, callId);
    if (record === undefined || runRests(record.status)) return;
    const log = new RunLog(runWriterOf(place.store), place.namespace, callId, place.idleTtlMs);
    log.append(statusEvent('running', { recovered: true }));
    log.append(messageEvent(reply));
    const status = interruptsOf(reply).length > 0 ? 'waiting' : 'done';
    log.setStatus(status, JSON.stringify({ reply: toWire(reply) }), place.retainMs);
    await log.drain();
  } catch {
    // Best effort: the run stays as it was logged, and expires with its time to live.
  }
}

/**
 * Pulls a stream to its end, logging its chunks (waiting for the log to catch up when it falls behind); returns
 * the final message. A streaming agent yields its final message and also returns it: a non-chunk item is held
 * back, and logged as a chunk only if something follows it.
 */
async function relayStream(
  stream: AsyncIterator<unknown> | Iterator<unknown>,
  log: RunLog,
  take: (event: LiveRunEvent) => void,
): Promise<unknown> {
  const encoder = new ChunkEncoder();
  let held: unknown;
  let hasHeld = false;
  let last: unknown;
  const emit = (chunk: unknown) => take(encoder.encode(chunk));
  for (;;) {
    let step = stream.next();
    if (isThenable(step)) step = await step;
    const { done, value } = step as IteratorResult<unknown>;
    if (done) {
      if (value === undefined || value === null) return last;
      if (hasHeld && held !== value) emit(held);
      return value;
    }
    last = value;
    if (hasHeld) {
      hasHeld = false;
      emit(held);
    }
    if (isChunk(value)) emit(value);
    else {
      held = value;
      hasHeld = true;
    }
    if (log.backlog) await log.drain();
  }
}

/**
 * A run started elsewhere (another process, or a queue worker), followed through its log: `events()`, `info()`,
 * `cancel()` as for a run started here, and `result` once its log says it rests. Rejects `ready` with a
 * `ValidationError` when the store has no such run.
 */
export function joinRun(
  place: Pick<RunPlace, 'store' | 'namespace'>,
  runId: string,
  sessionId?: SessionId,
): Run {
  const { store, namespace } = place;
  const ready = Promise.resolve(store.readRun(namespace, runId)).then((record) => {
    if (record === undefined) throw unknownRun(runId);
    return record;
  });
  const result = ready.then(async () => {
    let record: RunRecord | undefined;
    const follow = followRun(store, namespace, runId, { after: 0 });
    for (;;) {
      const step = await follow.next();
      if (step.done) {
        record = step.value;
        break;
      }
    }
    return replyOf(runId, record);
  });
  return new Run({
    id: runId,
    sessionId: sessionId ?? '',
    place,
    result,
    ready: ready.then(() => undefined),
  });
}

/** The reply a rested run's record holds, or the error it ended with. */
export function replyOf(runId: string, record: RunRecord | undefined): AgentMessage {
  if (record === undefined) throw unknownRun(runId);
  const outcome = record.result === undefined ? undefined : (JSON.parse(record.result) as RunOutcome);
  if (outcome?.reply !== undefined) return AgentMessage.from(outcome.reply as never);
  const status = record.status === 'cancelled' ? 'cancelled' : 'failed';
  throw new RunFailedError({
    message: `run ${JSON.stringify(runId)} ${status === 'cancelled' ? 'was cancelled' : `failed: ${outcome?.error?.detail ?? 'no reason was logged'}`}`,
    runId,
    status,
    errorName: outcome?.error?.error,
  });
}

/** What a run's record keeps with its status once it rests: its reply, or its error. */
export interface RunOutcome {
  reply?: unknown;
  error?: { detail: string; error: string } | undefined;
}

/** True for a resume message (a person's decisions for a waiting call). */
export function isResume(input: unknown): boolean {
  const items = Array.isArray(input) ? input : [input];
  if (items.length !== 1) return false;
  const item = items[0] as { type?: unknown } | undefined;
  return item?.type === RESUME_TYPE;
}
