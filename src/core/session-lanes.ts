import type { SessionKey } from '../schema/session';
import { keepShape } from '../utils/keep-shape';

/**
 * A call waiting for its session: `ready` resolves when `grant` gives it the session, or rejects when its
 * signal aborts first (which takes it out of the queue). One object per waiting call, with the promise.
 */
class Waiter implements PendingTurn {
  readonly ready: Promise<void>;
  cancelled = false;
  #resolve!: () => void;
  readonly #signal: AbortSignal | undefined;
  #onAbort: (() => void) | undefined = undefined;

  constructor(signal: AbortSignal | undefined) {
    this.#signal = signal;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      if (signal) {
        this.#onAbort = () => {
          this.cancelled = true;
          reject(signal.reason);
        };
        signal.addEventListener('abort', this.#onAbort, { once: true });
      }
    });
  }

  grant(): void {
    if (this.#onAbort) this.#signal!.removeEventListener('abort', this.#onAbort);
    this.#resolve();
  }

  cancel(): void {
    if (this.#onAbort) this.#signal!.removeEventListener('abort', this.#onAbort);
    this.cancelled = true;
  }
}

// A waiter lives while its call waits, so a drained queue leaves none: see keepShape.
keepShape(new Waiter(undefined));

/** The calls of one session: one runs, the others wait in call order. */
interface Lane {
  waiters: Waiter[];
  /** Index of the next waiter to resume (a queue without `shift`, so a long queue stays O(1) a call). */
  head: number;
}

/** A place in a session's lane that is not ours yet: await `ready`, or `cancel` it. */
export interface PendingTurn {
  readonly ready: Promise<void>;
  cancel(): void;
}

/**
 * One call at a time per session, in call order. `acquire` returns `undefined` when the session was idle
 * (the common case costs one set insertion and no promise), or a {@link PendingTurn} to wait for. Every
 * successful acquire must be paired with one `release`. Idle sessions take no memory.
 */
export class SessionLanes {
  /** Sessions with a call running (except `#solo`). */
  readonly #running = new Set<SessionKey>();
  /** The calls waiting, for the sessions that have any. */
  readonly #queues = new Map<SessionKey, Lane>();
  /**
   * A session whose call runs, kept out of `#running`: an agent called on one session at a time (the
   * common case) takes and frees it without touching a set. Never also in `#running`.
   */
  #solo: SessionKey | undefined = undefined;

  /**
   * Takes the session, or queues for it. A queued call whose `signal` aborts leaves the queue and its
   * `ready` rejects with the abort reason. A free session costs one set insertion (none for `#solo`).
   */
  acquire(key: SessionKey, signal?: AbortSignal): PendingTurn | undefined {
    if (key === this.#solo) return this.#enqueue(key, signal);
    const running = this.#running;
    if (this.#solo === undefined) {
      if (running.size === 0 || !running.has(key)) {
        this.#solo = key;
        return undefined;
      }
      return this.#enqueue(key, signal);
    }
    const size = running.size;
    running.add(key);
    return running.size !== size ? undefined : this.#enqueue(key, signal);
  }

  /**
   * Ends the running call of a session: the next waiting call (in call order) runs, else the session is
   * free. Without anybody waiting anywhere, that is one set deletion (none for `#solo`).
   */
  release(key: SessionKey): void {
    if (this.#queues.size !== 0 && this.#grantNext(key)) return;
    if (key === this.#solo) this.#solo = undefined;
    else this.#running.delete(key);
  }

  /** Whether a call of the session runs now (others may be waiting for it). */
  isBusy(key: SessionKey): boolean {
    return key === this.#solo || this.#running.has(key);
  }

  #enqueue(key: SessionKey, signal: AbortSignal | undefined): PendingTurn {
    let lane = this.#queues.get(key);
    if (lane === undefined) {
      lane = { waiters: [], head: 0 };
      this.#queues.set(key, lane);
    }
    const waiter = new Waiter(signal);
    lane.waiters.push(waiter);
    return waiter;
  }

  /** Gives the session to its next waiting call; false when none is left (the queue then goes). */
  #grantNext(key: SessionKey): boolean {
    const lane = this.#queues.get(key);
    if (lane === undefined) return false;
    const { waiters } = lane;
    while (lane.head < waiters.length) {
      const waiter = waiters[lane.head]!;
      waiters[lane.head++] = undefined as unknown as Waiter;
      if (lane.head > 1024 && lane.head * 2 > waiters.length) {
        waiters.splice(0, lane.head);
        lane.head = 0;
      }
      if (!waiter.cancelled) {
        waiter.grant();
        return true;
      }
    }
    this.#queues.delete(key);
    return false;
  }
}
