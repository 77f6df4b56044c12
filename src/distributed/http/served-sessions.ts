import { type SessionId, type SessionKey, sessionKey } from '../../schema/session';

/**
 * The sessions a server's clients used, least recently used first, for an agent that keeps them in memory
 * only (no store): past `max`, the least recently used sessions with no call in flight are forgotten (`forget`
 * resets them in the whole agent tree), so clients inventing session ids cannot grow the process without end.
 * A session with a call in flight (running or waiting for its turn) is never forgotten.
 */
export class ServedSessions {
  readonly max: number;
  readonly #forget: (sessionId: SessionId) => unknown;
  readonly #sessions = new Map<SessionKey, { id: SessionId; active: number }>();
  #warned = false;

  constructor(max: number, forget: (sessionId: SessionId) => unknown) {
    this.max = max;
    this.#forget = forget;
  }

  /** Sessions known now. */
  get size(): number {
    return this.#sessions.size;
  }

  /** A call on `sessionId` begins; the function returned ends it (then sessions past `max` are forgotten). */
  begin(sessionId: SessionId): () => void {
    const key = sessionKey(sessionId);
    let entry = this.#sessions.get(key);
    if (entry === undefined) entry = { id: sessionId, active: 0 };
    else this.#sessions.delete(key); // to the most recent end
    this.#sessions.set(key, entry);
    entry.active++;
    const session = entry;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      session.active--;
      if (this.#sessions.size > this.max) this.#evict();
    };
  }

  #evict(): void {
    for (const [key, session] of this.#sessions) {
      if (this.#sessions.size <= this.max) return;
      if (session.active > 0) continue;
      this.#sessions.delete(key);
      if (!this.#warned) {
        this.#warned = true;
        process.emitWarning(
          `HTTPAgentServer: more than ${this.max} sessions in memory: the least recently used idle ones are forgotten (their memory is reset). Give the server a store to keep every session, or raise maxSessions.`,
          { code: 'LAGENT_SESSIONS_FORGOTTEN' },
        );
      }
      try {
        const done = this.#forget(session.id);
        if (done instanceof Promise) done.catch(() => undefined);
      } catch {
        // a session that cannot be reset stays in the agent's memory; it is no longer counted here
      }
    }
  }
}
