import { RunWatchers } from '../../stores/run-log';
import type { RunEvent, RunLogStore, RunStatus, RunWrite, RunWritten } from '../../stores/types';
import { isThenable } from '../../utils/is';
import { errorMessage } from '../../utils/text';
import type { LiveRunEvent } from './run-events';

/*
 * How runs write their logs. Every store has one writer in this process: the events runs log are buffered and
 * written once per turn of the event loop, every run's at once (`appendRuns`: one transaction for a synchronous
 * store), so a run streaming many chunks costs one write per turn, not per chunk. Once written, a run's events
 * go to its feed here: readers in this process take them from it without reading the store again.
 */

type LogStore = RunLogStore;

/** Events buffered past which a run's writer waits for them to be written before taking more (`backlog`). */
const HIGH_WATER = 4_096;
/** Events a feed keeps for readers in this process (older ones are read from the store). */
const FEED_WINDOW = 4_096;
/** Failed writes tried again, at most, before their events are dropped (with a warning). */
const MAX_TRIES = 6;

/** @internal One run's writes waiting for the next flush. */
export interface Pending {
  log: RunLog;
  events: LiveRunEvent[];
  /** Taken to be written (or merged into another): a log that kept it buffers its next events afresh. */
  taken: boolean;
  status: RunStatus | undefined;
  result: string | undefined;
  statusSet: boolean;
  ttlMs: number;
  tries: number;
}

/**
 * The events of a run written in this process, kept for the readers in this process: a window of the last
 * ones (older ones come from the store), and the run's status as written.
 */
export class RunFeed {
  events: RunEvent[] = [];
  /** The number of the first event in `events` (lastSeq + 1 while it is empty). */
  firstSeq: number;
  lastSeq: number;
  status: RunStatus;

  constructor(lastSeq: number, status: RunStatus) {
    this.firstSeq = lastSeq + 1;
    this.lastSeq = lastSeq;
    this.status = status;
  }

  /** True when the feed holds every event after `after` (so a reader need not read the store). */
  covers(after: number): boolean {
    return after + 1 >= this.firstSeq && after <= this.lastSeq;
  }

  /** The events after `after` (which it covers). */
  after(after: number): RunEvent[] {
    const from = after + 1 - this.firstSeq;
    return from === 0 ? this.events.slice() : this.events.slice(from);
  }

  push(events: RunEvent[]): void {
    if (events.length === 0) return;
    for (const event of events) this.events.push(event);
    this.lastSeq = events.at(-1)!.seq;
    if (this.events.length > FEED_WINDOW * 2) {
      const drop = this.events.length - FEED_WINDOW;
      this.events.splice(0, drop);
    }
    this.firstSeq = this.events.length === 0 ? this.lastSeq + 1 : this.events[0]!.seq;
  }
}

/** The writer of a store's runs in this process, and the feeds of the runs it writes. */
export class RunWriter {
  readonly store: LogStore;
  /** Told (per namespace and run) after events were written and put in the run's feed. */
  readonly local = new RunWatchers();
  readonly #feeds = new Map<string, RunFeed>();
  readonly #pending = new Map<string, Pending>();
  #scheduled = false;
  #flushing: Promise<void> | undefined;
  /** How many batches were taken to be written; the one in flight is the last. */
  #taken = 0;
  /** Those waiting for a batch (and the ones before it) to be written. */
  #waiters: { batch: number; resolve: () => void }[] = [];

  constructor(store: LogStore) {
    this.store = store;
  }

  /** The feed of a run this process writes, if it writes it. */
  feed(namespace: string, runId: string): RunFeed | undefined {
    return this.#feeds.get(key(namespace, runId));
  }

  /** Starts writing a run: its feed starts after `lastSeq`. */
  open(log: RunLog, lastSeq: number, status: RunStatus): void {
    this.#feeds.set(key(log.namespace, log.runId), new RunFeed(lastSeq, status));
  }

  /** Stops writing a run (once its last events were written): readers read the store from then on. */
  close(log: RunLog): void {
    this.#feeds.delete(key(log.namespace, log.runId));
    this.local.notify(log.namespace, log.runId);
  }

  /**
   * Buffers an event of a run; it is written with the others at the end of this turn of the event loop, then
   * numbered and put in the run's feed as it is (the caller gives it up).
   */
  append(log: RunLog, event: LiveRunEvent): void {
    // The run's buffer of this turn, kept on its log: no look-up per chunk.
    const kept = log.pending;
    const pending = kept !== undefined && !kept.taken ? kept : this.#pendingOf(log);
    pending.events.push(event);
    log.buffered++;
    this.#schedule();
  }

  /** Buffers a run's new status (and its result), written with its events. */
  setStatus(log: RunLog, status: RunStatus, result: string | undefined, ttlMs: number): void {
    const pending = this.#pendingOf(log);
    pending.status = status;
    pending.result = result;
    pending.statusSet = true;
    pending.ttlMs = ttlMs;
    this.#schedule();
  }

  /** Resolves once everything buffered now has been written (or dropped after failing). */
  drain(): Promise<void> {
    if (this.#pending.size === 0 && this.#flushing === undefined) return Promise.resolve();
    // What is buffered goes in the next batch; else the batch in flight is the last to wait for.
    const batch = this.#pending.size > 0 ? this.#taken + 1 : this.#taken;
    return new Promise((resolve) => this.#waiters.push({ batch, resolve }));
  }

  #pendingOf(log: RunLog): Pending {
    const id = key(log.namespace, log.runId);
    let pending = this.#pending.get(id);
    if (pending === undefined) {
      pending = {
        log,
        events: [],
        taken: false,
        status: undefined,
        result: undefined,
        statusSet: false,
        ttlMs: log.ttlMs,
        tries: 0,
      };
      this.#pending.set(id, pending);
    }
    log.pending = pending;
    return pending;
  }

  #schedule(): void {
    if (this.#scheduled || this.#flushing !== undefined) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#pending.size === 0) return;
    const batch = [...this.#pending.values()];
    this.#pending.clear();
    for (const pending of batch) pending.taken = true;
    const number = ++this.#taken;
    const writes: RunWrite[] = batch.map((pending) => ({
      namespace: pending.log.namespace,
      runId: pending.log.runId,
      events: pending.events,
      status: pending.statusSet ? pending.status : undefined,
      result: pending.statusSet ? pending.result : undefined,
      ttlMs: pending.ttlMs,
    }));
    let written: RunWritten[] | Promise<RunWritten[]>;
    try {
      written = this.store.appendRuns(writes);
    } catch (error) {
      this.#failed(batch, number, error);
      return;
    }
    if (!isThenable(written)) {
      this.#done(batch, number, written);
      return;
    }
    this.#flushing = Promise.resolve(written).then(
      (value) => {
        this.#flushing = undefined;
        this.#done(batch, number, value);
      },
      (error: unknown) => {
        this.#flushing = undefined;
        this.#failed(batch, number, error);
      },
    );
  }

  #done(batch: Pending[], number: number, written: RunWritten[]): void {
    for (let i = 0; i < batch.length; i++) {
      const pending = batch[i]!;
      const log = pending.log;
      const result = written[i]!;
      log.buffered -= pending.events.length;
      if (result.lastSeq < 0) {
        log.gone = true;
        continue;
      }
      log.lastSeq = result.lastSeq;
      const feed = this.#feeds.get(key(log.namespace, log.runId));
      if (feed !== undefined) {
        const count = pending.events.length;
        if (count > 0) {
          const first = result.lastSeq - count + 1;
          // The events logged are the feed's: numbered now, not copied.
          const events = pending.events;
          for (let j = 0; j < count; j++) events[j]!.seq = first + j;
          // A feed that missed events (written by another process meanwhile) starts again after them.
          if (first !== feed.lastSeq + 1) {
            feed.events = [];
            feed.firstSeq = first;
            feed.lastSeq = first - 1;
          }
          feed.push(events);
        }
        if (pending.statusSet) feed.status = pending.status!;
      }
      if (result.cancelRequested) log.onCancelRequested();
      this.local.notify(log.namespace, log.runId);
    }
    this.#after(number);
  }

  #failed(batch: Pending[], number: number, error: unknown): void {
    // Tried again (the store may be back), in order before anything buffered since; dropped after MAX_TRIES.
    const retry: Pending[] = [];
    for (const pending of batch) {
      if (++pending.tries < MAX_TRIES && !/is closed/.test(errorMessage(error))) retry.push(pending);
      else {
        pending.log.buffered -= pending.events.length;
        pending.log.lost = error;
        process.emitWarning(
          `the log of run ${JSON.stringify(pending.log.runId)} could not be written to ${this.store.description}: ${errorMessage(error)}`,
          { code: 'LAGENT_RUN_LOG' },
        );
      }
    }
    if (retry.length > 0) {
      const later = [...this.#pending.values()];
      this.#pending.clear();
      for (const pending of retry) {
        pending.taken = false;
        pending.log.pending = pending;
        this.#pending.set(key(pending.log.namespace, pending.log.runId), pending);
      }
      for (const pending of later) {
        const id = key(pending.log.namespace, pending.log.runId);
        const earlier = this.#pending.get(id);
        if (earlier === undefined) this.#pending.set(id, pending);
        else {
          pending.taken = true;
          earlier.events.push(...pending.events);
          if (pending.statusSet) {
            earlier.status = pending.status;
            earlier.result = pending.result;
            earlier.statusSet = true;
          }
          earlier.ttlMs = pending.ttlMs;
        }
      }
      // Those waiting for this batch wait for the one that tries it again.
      for (const waiter of this.#waiters) if (waiter.batch >= number) waiter.batch++;
      const delay = Math.min(2_000, 50 * 2 ** Math.max(...retry.map((pending) => pending.tries)));
      this.#flushing = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        timer.unref?.();
      }).then(() => {
        this.#flushing = undefined;
        this.#flush();
      });
      return;
    }
    this.#after(number);
  }

  /** After batch `number` was written: those waiting for it are told; what was buffered meanwhile goes next. */
  #after(number: number): void {
    if (this.#waiters.length > 0) {
      const waiting = this.#waiters;
      this.#waiters = [];
      for (const waiter of waiting) {
        if (waiter.batch <= number) waiter.resolve();
        else this.#waiters.push(waiter);
      }
    }
    if (this.#pending.size > 0) this.#schedule();
  }
}

/** The writing end of one run's log, held by whoever runs it. */
export class RunLog {
  readonly writer: RunWriter;
  readonly namespace: string;
  readonly runId: string;
  /** How long the run is kept after each write while it runs, in ms. */
  ttlMs: number;
  /** The number of the last event written. */
  lastSeq = 0;
  /** Events buffered, not yet written. */
  buffered = 0;
  /** The run is gone from the store (expired, deleted): nothing more is written. */
  gone = false;
  /** Why events were dropped, if they were. */
  lost: unknown;
  /** Called when a write found that somebody asked for the run to be cancelled. */
  onCancelRequested: () => void = () => {};
  /** @internal The run's writes buffered this turn (the writer's; stale once taken). */
  pending: Pending | undefined;

  constructor(writer: RunWriter, namespace: string, runId: string, ttlMs: number) {
    this.writer = writer;
    this.namespace = namespace;
    this.runId = runId;
    this.ttlMs = ttlMs;
  }

  append(event: LiveRunEvent): void {
    this.writer.append(this, event);
  }

  setStatus(status: RunStatus, result: string | undefined, ttlMs = this.ttlMs): void {
    this.writer.setStatus(this, status, result, ttlMs);
  }

  /** True when so many events wait to be written that the run should wait for them ({@link drain}). */
  get backlog(): boolean {
    return this.buffered >= HIGH_WATER;
  }

  drain(): Promise<void> {
    return this.writer.drain();
  }
}

/** The writer of each store in this process. */
const writers = new WeakMap<object, RunWriter>();

/** The writer of a store's runs in this process. */
export function runWriterOf(store: LogStore): RunWriter {
  let writer = writers.get(store);
  if (writer === undefined) {
    writer = new RunWriter(store);
    writers.set(store, writer);
  }
  return writer;
}

/** The writer of a store, if this process has one (readers look for a run's feed there). */
export function existingRunWriter(store: LogStore): RunWriter | undefined {
  return writers.get(store);
}

function key(namespace: string, runId: string): string {
  return `${namespace}\u0000${runId}`;
}
