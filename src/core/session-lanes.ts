import type { SessionKey } from '../schema/session';

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

/** The calls of one session: one runs, the others wait in call order. */
interface Lane {
  waiters: Waiter[];
  /** Index of the next waiter to resume (a queue without `shift`, so a long queue stays O(1) a call). */
  head: number;
}

/** A session with a call running and nobody waiting: shared, so the common case allocates nothing. */
const RUNNING: Lane = Object.freeze({ waiters: Object.freeze([]) as unknown as Waiter[], head: 0 });

/** A place in a session's lane that is not ours yet: await `ready`, or `cancel` it. */
export interface PendingTurn {
  readonly ready: Promise<void>;
  cancel(): void;
}

/**
 * One call at a time per session, in call order. `acquire` returns `undefined` when the session was idle
 * (the common case costs one map lookup and no promise), or a {@link PendingTurn} to wait for. Every
 * successful acquire must be paired with one `release`. Idle sessions take no memory.
 */
export class SessionLanes {
  readonly #lanes = new Map<SessionKey, Lane>();
  /**
   * A session whose call runs with nobody waiting, kept out of the map: an agent called on one session at a
   * time (the common case) takes and frees it without touching the map. Never also a key of `#lanes`.
   */
  #solo: SessionKey | undefined = undefined;

  /**
   * Takes the session, or queues for it. A queued call whose `signal` aborts leaves the queue and its
   * `ready` rejects with the abort reason.
   */
  acquire(key: SessionKey, signal?: AbortSignal): PendingTurn | undefined {
    let lane: Lane | undefined;
    if (key === this.#solo) {
      this.#solo = undefined;
      lane = { waiters: [], head: 0 };
      this.#lanes.set(key, lane);
    } else {
      lane = this.#lanes.get(key);
      if (lane === undefined) {
        if (this.#solo === undefined) this.#solo = key;
        else this.#lanes.set(key, RUNNING);
        return undefined;
      }
      if (lane === RUNNING) {
        lane = { waiters: [], head: 0 };
        this.#lanes.set(key, lane);
      }
    }
    const waiter = new Waiter(signal);
    lane.waiters.push(waiter);
    return waiter;
  }

  /** Ends the running call of a session: the next waiting call (in call order) runs, else the lane goes. */
  release(key: SessionKey): void {
    if (key === this.#solo) {
      this.#solo = undefined;
      return;
    }
    const lane = this.#lanes.get(key);
    if (lane === undefined) return;
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
        return;
      }
    }
    this.#lanes.delete(key);
  }
}
