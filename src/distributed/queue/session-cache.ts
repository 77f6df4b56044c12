import type { SessionId } from '../../schema/session';
import type { LoadedState } from './session-state';

interface Entry {
  epoch: string;
  version: number;
  loaded: LoadedState;
}

/**
 * The sessions a worker committed last, kept between calls up to a total size, least recently used first
 * out: the next call of such a session skips reading and parsing its whole history from Redis. An entry is
 * used only for the exact state it holds (the session record's epoch and version, read under the lease), so
 * a session changed elsewhere is read again. The states are frozen, so sharing them is safe.
 */
export class SessionCache {
  readonly #limit: number;
  readonly #entries = new Map<string, Entry>();
  #size = 0;

  /** @param limit the most state (in UTF-16 units of its JSON) kept; 0 keeps nothing. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** The epoch and version of the session's kept state, if any. */
  peek(sessionId: SessionId): { epoch: string; version: number } | undefined {
    const entry = this.#entries.get(String(sessionId));
    return entry && { epoch: entry.epoch, version: entry.version };
  }

  /** Removes and returns the session's state when it is the one at `epoch` and `version`. */
  take(sessionId: SessionId, epoch: string, version: number): LoadedState | undefined {
    const key = String(sessionId);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    this.#size -= entry.loaded.size;
    return entry.epoch === epoch && entry.version === version && epoch !== '' ? entry.loaded : undefined;
  }

  /** Keeps the session's state as committed at `epoch` and `version`. */
  set(sessionId: SessionId, epoch: string, version: number, loaded: LoadedState): void {
    const key = String(sessionId);
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#entries.delete(key);
      this.#size -= old.loaded.size;
    }
    if (epoch === '' || loaded.state === undefined || loaded.size > this.#limit) return;
    this.#entries.set(key, { epoch, version, loaded });
    this.#size += loaded.size;
    for (const [oldest, entry] of this.#entries) {
      if (this.#size <= this.#limit) break;
      this.#entries.delete(oldest);
      this.#size -= entry.loaded.size;
    }
  }

  clear(): void {
    this.#entries.clear();
    this.#size = 0;
  }
}
