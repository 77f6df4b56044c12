import { randomUUID } from 'node:crypto';
import { PromiseInSyncCall, type Steps } from '../../../core/steps';
import { StoreConflictError, StoreError } from '../../../schema/errors';
import type {
  AcquiredSession,
  AcquireOptions,
  BusySession,
  GroupedWrite,
  JournalFence,
  SessionStore,
} from '../../../stores/types';
import { isThenable } from '../../../utils/is';
import { errorMessage } from '../../../utils/text';

/*
 * Leases on stored sessions, as calls hold them (`memory: { store }` for the session's turns, `durable` for its
 * journal). Each acquisition has an owner of its own, the fencing token: every commit and fenced journal write
 * names it, and the store refuses it once another owner has taken the lease, even if this process later holds
 * the session again. A holder renews its lease every third of `leaseMs` while it runs; a renewal that is
 * refused or fails marks the hold lost, and the call's next step stops with that error.
 */

/**
 * How long a session's lease lasts unless renewed, in ms: 10 s. A holder renews it every ~3.3 s, so a process
 * that died (or stopped) is taken over within 10 s, while a pause of a few seconds (a garbage collection, a
 * busy stretch of synchronous code) loses nothing; a holder whose lease ran out with nobody waiting goes on.
 */
export const DEFAULT_LEASE_MS = 10_000;

/** The longest wait between two tries of a busy session, in ms. */
const MAX_BUSY_WAIT_MS = 200;

/**
 * The leases this process holds, renewed by one timer (a timer per call would cost more than a durable call's
 * journal): it ticks every third of the shortest lease held, and renews each lease a third of its time after
 * its last renewal. It keeps no process alive, and stops while no lease is held.
 */
class Renewals {
  readonly #leases = new Set<SessionLease>();
  #timer: ReturnType<typeof setInterval> | undefined = undefined;
  #every = Number.POSITIVE_INFINITY;

  add(lease: SessionLease): void {
    this.#leases.add(lease);
    const every = lease.renewEvery;
    if (this.#timer !== undefined && every >= this.#every) return;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#every = every;
    this.#timer = setInterval(() => this.#tick(), every);
    this.#timer.unref?.();
  }

  delete(lease: SessionLease): void {
    if (!this.#leases.delete(lease) || this.#leases.size > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#every = Number.POSITIVE_INFINITY;
  }

  #tick(): void {
    const now = Date.now();
    for (const lease of this.#leases) if (now >= lease.renewAt) lease.renew(now);
  }
}

const renewals = new Renewals();

/**
 * Releases on their way to an async store, per store and session: the next acquisition of the session in this
 * process waits for its release first (it would otherwise find the lease still held, by the call before it).
 */
const releasing = new WeakMap<SessionStore, Map<string, Promise<void>>>();

function releaseKey(namespace: string, sessionId: string): string {
  return `${namespace}\u0000${sessionId}`;
}

/** One acquisition of a session's lease: its fence, its renewal, and whether it was lost. */
export class SessionLease {
  /** What fenced writes name: this acquisition's owner, and the lease time each write extends it by. */
  readonly fence: JournalFence;
  /** Why the lease is no longer this call's (a renewal refused or failed); the call stops at its next step. */
  lost: Error | undefined = undefined;
  released = false;
  /** How often the lease is renewed, in ms: a third of its time. */
  readonly renewEvery: number;
  /** When it is renewed next (epoch ms, this process's clock). */
  renewAt = 0;
  #renewing = false;

  constructor(
    readonly store: SessionStore,
    readonly namespace: string,
    readonly sessionId: string,
    owner: string,
    leaseMs: number,
  ) {
    this.fence = { owner, leaseMs };
    this.renewEvery = Math.max(1, Math.floor(leaseMs / 3));
  }

  get owner(): string {
    return this.fence.owner;
  }

  /** Throws why the lease was lost, if it was. */
  check(): void {
    if (this.lost !== undefined) throw this.lost;
  }

  /** Renews the lease every third of its time while the call runs. */
  startRenewal(): void {
    if (this.#renewing || this.released) return;
    this.#renewing = true;
    this.renewAt = Date.now() + this.renewEvery;
    renewals.add(this);
  }

  /** Ends the hold: the renewal stops, and the lease goes back (not waited for: it ends by itself anyway). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.stopRenewal();
    try {
      const done = this.store.releaseSession(this.namespace, this.sessionId, this.owner);
      if (!isThenable(done)) return;
      let pending = releasing.get(this.store);
      if (pending === undefined) {
        pending = new Map();
        releasing.set(this.store, pending);
      }
      const key = releaseKey(this.namespace, this.sessionId);
      const released: Promise<void> = (done as Promise<void>)
        .catch(() => undefined)
        .then(() => {
          if (pending.get(key) === released) pending.delete(key);
        });
      pending.set(key, released);
    } catch {
      // the lease ends by itself
    }
  }

  stopRenewal(): void {
    if (!this.#renewing) return;
    this.#renewing = false;
    renewals.delete(this);
  }

  /** Renews the lease now (called by the process's renewal timer); a refusal or failure marks it lost. */
  renew(now: number): void {
    this.renewAt = now + this.renewEvery;
    if (this.released || this.lost !== undefined) return;
    const lose = (error: Error) => {
      this.lost ??= error;
      this.stopRenewal();
    };
    const refused = () =>
      new StoreConflictError({
        message: `${this.store.description}: session ${JSON.stringify(this.sessionId)} of ${JSON.stringify(this.namespace)} is no longer held by this call: another owner took its lease (it ran out: was this process stopped or busy longer than leaseMs?), or the session was deleted or expired; the call stops before its next step`,
        store: this.store.description,
        operation: 'renewLease',
        sessionId: this.sessionId,
      });
    const failed = (error: unknown) =>
      new StoreError({
        message: `${this.store.description}: the lease on session ${JSON.stringify(this.sessionId)} of ${JSON.stringify(this.namespace)} could not be renewed (${errorMessage(error)}); the call stops before its next step`,
        store: this.store.description,
        operation: 'renewLease',
        sessionId: this.sessionId,
        cause: error,
      });
    try {
      const renewed = this.store.renewLease(this.namespace, this.sessionId, this.owner, this.fence.leaseMs);
      if (isThenable(renewed)) {
        (renewed as Promise<boolean>).then(
          (kept) => {
            if (!kept && !this.released) lose(refused());
          },
          (error: unknown) => {
            if (!this.released) lose(failed(error));
          },
        );
      } else if (!renewed) lose(refused());
    } catch (error) {
      lose(failed(error));
    }
  }
}

/** What {@link acquireLease} takes. */
export interface LeaseRequest {
  store: SessionStore;
  namespace: string;
  sessionId: string;
  /** The holder's name (per process and agent); each acquisition's owner is made from it. */
  holder: string;
  /**
   * The owner to acquire as, instead of a new one: the call's other lease's (a store holding both takes it as
   * re-entry, where a new owner would wait for the call itself).
   */
  owner?: string | undefined;
  leaseMs: number;
  knownVersion?: number | undefined;
  signal?: AbortSignal | undefined;
  /** Takes the lease through the store's grouped writes (async callers of SQLiteStore). */
  grouped?: ((options: AcquireOptions) => GroupedWrite<AcquiredSession | BusySession>) | undefined;
}

let acquisitions = 0;

/**
 * Steps that take a session's lease, waiting while another owner holds it (at most until its lease runs out:
 * a holder that died is taken over then). A wait says once, as a process warning (`LAGENT_SESSION_WAIT`),
 * which session it waits for and until when. Store failures are `StoreError`s naming the session.
 */
export function* acquireLease(
  request: LeaseRequest,
): Steps<{ lease: SessionLease; acquired: AcquiredSession }> {
  const { store, namespace, sessionId, leaseMs, signal } = request;
  const owner = request.owner ?? `${request.holder}.${(++acquisitions).toString(36)}`;
  const options: AcquireOptions = { owner, leaseMs, knownVersion: request.knownVersion };
  const released = releasing.get(store)?.get(releaseKey(namespace, sessionId));
  if (released !== undefined) yield released;
  let waited = 0;
  for (;;) {
    const acquire = () => store.acquireSession(namespace, sessionId, options);
    const result = request.grouped
      ? yield* groupedStep(store, sessionId, acquire, () => request.grouped!(options))
      : yield* storeStep(store, 'acquireSession', sessionId, acquire);
    if (result.acquired) {
      const lease = new SessionLease(store, namespace, sessionId, owner, leaseMs);
      return { lease, acquired: result };
    }
    // Another owner holds the session: wait for it (at most until its lease ends), then try again.
    signal?.throwIfAborted();
    if (waited === 0) {
      process.emitWarning(
        `${store.description}: session ${JSON.stringify(sessionId)} of ${JSON.stringify(namespace)} is held by another call until ${new Date(result.until).toISOString()} (its lease); waiting for it (a holder that stopped is taken over when its lease runs out)`,
        { code: 'LAGENT_SESSION_WAIT' },
      );
    }
    const delay = Math.max(1, Math.min(MAX_BUSY_WAIT_MS, result.until - Date.now(), 5 * 2 ** waited++));
    yield* pause(delay);
  }
}

/** A new holder name: one per process and agent. */
export function holderName(): string {
  return randomUUID();
}

/** A store method's result as a step; failures other than StoreErrors become StoreErrors naming the call. */
export function* storeStep<T>(
  store: SessionStore,
  operation: string,
  sessionId: string,
  run: () => T | Promise<T>,
): Steps<T> {
  let result: T | Promise<T>;
  try {
    result = run();
  } catch (error) {
    throw asStoreError(store, operation, sessionId, error);
  }
  if (!isThenable(result)) return result;
  try {
    return (yield result) as T;
  } catch (error) {
    throw asStoreError(store, operation, sessionId, error);
  }
}

/**
 * A write the store groups with those of other calls, as a step: an async driver awaits it; a sync driver
 * cannot, so it is taken back and made directly.
 */
export function* groupedStep<T>(
  store: SessionStore,
  sessionId: string,
  direct: () => T | Promise<T>,
  queue: () => GroupedWrite<T>,
  operation = 'acquireSession',
): Steps<T> {
  let write: GroupedWrite<T>;
  try {
    write = queue();
  } catch (error) {
    throw asStoreError(store, operation, sessionId, error);
  }
  const { made } = write;
  if (made !== undefined) {
    if ('error' in made) throw asStoreError(store, operation, sessionId, made.error);
    return made.value;
  }
  try {
    return (yield write.result) as T;
  } catch (error) {
    if (error instanceof PromiseInSyncCall && write.cancel())
      return yield* storeStep(store, operation, sessionId, direct);
    throw asStoreError(store, operation, sessionId, error);
  }
}

export function asStoreError(
  store: SessionStore,
  operation: string,
  sessionId: string,
  error: unknown,
): unknown {
  if (error instanceof StoreError) return error;
  return new StoreError({
    message: `${store.description}: ${operation} of session ${JSON.stringify(sessionId)} failed: ${errorMessage(error)}`,
    store: store.description,
    operation,
    sessionId,
    cause: error,
  });
}

/**
 * Waits `ms`: an async driver awaits a timer; a sync driver cannot (it throws `PromiseInSyncCall` into the
 * steps), so a sync agent's thread sleeps. The holder is then another thread or process: a call of this
 * thread cannot be running.
 */
export function* pause(ms: number): Steps<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    yield new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
  } catch (error) {
    if (!(error instanceof PromiseInSyncCall)) throw error;
    clearTimeout(timer);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  }
}
