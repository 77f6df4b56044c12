import { StoreError } from '../schema/errors';
import { errorMessage } from '../utils/text';
import { checkStoreKey, RUN_PAGE, type RunStatus, type RunWrite } from './types';

/*
 * What every store's run log shares: checking what it is given, and telling the watchers of a run in this
 * process that it changed.
 */

const STATUSES: ReadonlySet<string> = new Set([
  'queued',
  'running',
  'waiting',
  'done',
  'failed',
  'cancelled',
]);

/** Throws a `StoreError` for a status that is not a {@link RunStatus}. */
export function checkRunStatus(store: string, operation: string, status: unknown): RunStatus {
  if (typeof status !== 'string' || !STATUSES.has(status)) {
    throw new StoreError({
      message: `${store}.${operation}: status must be one of ${[...STATUSES].join(', ')}, got ${JSON.stringify(status)}`,
      store,
      operation,
    });
  }
  return status as RunStatus;
}

/** Throws a `StoreError` for a run's time to live that is not a positive whole number of ms. */
export function checkRunTtl(store: string, operation: string, ttlMs: unknown): number {
  if (!(typeof ttlMs === 'number' && Number.isSafeInteger(ttlMs) && ttlMs > 0)) {
    throw new StoreError({
      message: `${store}.${operation}: ttlMs must be a positive whole number of ms, got ${String(ttlMs)}`,
      store,
      operation,
    });
  }
  return ttlMs;
}

/** Checks a write of `appendRuns`: its keys, events (a type and JSON text each), status and time to live. */
export function checkRunWrite(store: string, write: RunWrite): void {
  const operation = 'appendRuns';
  checkStoreKey(store, operation, write?.namespace);
  checkStoreKey(store, operation, write.runId);
  checkRunTtl(store, operation, write.ttlMs);
  if (write.status !== undefined) checkRunStatus(store, operation, write.status);
  if (write.result !== undefined && typeof write.result !== 'string') {
    throw new StoreError({ message: `${store}.${operation}: result must be JSON text`, store, operation });
  }
  if (!Array.isArray(write.events)) {
    throw new StoreError({ message: `${store}.${operation}: events must be a list`, store, operation });
  }
  for (const event of write.events) {
    if (typeof event?.type !== 'string' || event.type === '' || typeof event.data !== 'string') {
      throw new StoreError({
        message: `${store}.${operation}: an event is { type, data } with a non-empty type and its data as JSON text`,
        store,
        operation,
      });
    }
  }
}

/** The `after` and `limit` of `readRunEvents`, checked. */
export function checkRunRange(store: string, after: unknown, limit: unknown): number {
  const operation = 'readRunEvents';
  if (!(typeof after === 'number' && Number.isSafeInteger(after) && after >= 0)) {
    throw new StoreError({
      message: `${store}.${operation}: after must be a whole number (0 or more), got ${String(after)}`,
      store,
      operation,
    });
  }
  if (limit === undefined) return RUN_PAGE;
  if (!(typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0)) {
    throw new StoreError({
      message: `${store}.${operation}: limit must be a positive whole number, got ${String(limit)}`,
      store,
      operation,
    });
  }
  return limit;
}

/**
 * The watchers of runs in this process (`watchRun`), told after each change. A listener that throws is
 * reported as a process warning; the others are still told.
 */
export class RunWatchers {
  readonly #listeners = new Map<string, Set<() => void>>();

  /** How many runs are watched. */
  get size(): number {
    return this.#listeners.size;
  }

  watch(namespace: string, runId: string, listener: () => void): () => void {
    const key = watchKey(namespace, runId);
    let set = this.#listeners.get(key);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(key, set);
    }
    set.add(listener);
    return () => {
      const current = this.#listeners.get(key);
      if (current === undefined) return;
      current.delete(listener);
      if (current.size === 0) this.#listeners.delete(key);
    };
  }

  /** Tells the watchers of a run (nothing when it has none). */
  notify(namespace: string, runId: string): void {
    if (this.#listeners.size === 0) return;
    const set = this.#listeners.get(watchKey(namespace, runId));
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        listener();
      } catch (error) {
        process.emitWarning(`a watcher of run ${JSON.stringify(runId)} threw: ${errorMessage(error)}`, {
          code: 'LAGENT_LISTENER_ERROR',
        });
      }
    }
  }

  /**
   * Tells every watcher: what a store does when it starts hearing other processes (a change made before
   * that was not heard, so each reader reads again).
   */
  notifyAll(): void {
    for (const set of [...this.#listeners.values()]) {
      for (const listener of [...set]) {
        try {
          listener();
        } catch {
          // reported by notify() when it matters: a spurious call may be ignored
        }
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}

function watchKey(namespace: string, runId: string): string {
  return `${namespace}\u0000${runId}`;
}

/** Watchers shared by every store object of one place in this process (one SQLite file and prefix, ...). */
const shared = new Map<string, { watchers: RunWatchers; users: number }>();

/** The watchers of the stores of `place` in this process; `release()` when the store closes. */
export function sharedRunWatchers(place: string): { watchers: RunWatchers; release(): void } {
  let entry = shared.get(place);
  if (entry === undefined) {
    entry = { watchers: new RunWatchers(), users: 0 };
    shared.set(place, entry);
  }
  entry.users++;
  const held = entry;
  let released = false;
  return {
    watchers: held.watchers,
    release: () => {
      if (released) return;
      released = true;
      held.users--;
      if (held.users === 0 && shared.get(place) === held) shared.delete(place);
    },
  };
}
