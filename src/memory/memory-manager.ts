import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import { type SessionId, type SessionKey, sessionKey } from '../schema/session';
import { type GetMemoryOptions, Memory } from './memory';

/**
 * `manager[MEMORY_AT](key, sessionId)` is `getOrCreate(sessionId)` for a caller that already has the
 * session's key, `sessionKey(sessionId)` (an agent call does), so it is not made twice.
 */
export const MEMORY_AT: unique symbol = Symbol('lagent.memory.at');

/**
 * `manager[SESSION_IN_USE] = (key) => boolean`: set by the agent that owns the manager, so that a bound
 * (`maxSessions`) never drops a session whose call is running.
 */
export const SESSION_IN_USE: unique symbol = Symbol('lagent.memory.sessionInUse');

/**
 * The default factory: one function for every manager, so code optimized for one agent's calls still
 * fits the next agent's (a factory per manager would be a new function to V8 each time).
 */
const newMemory = (): Memory => new Memory();

/** Options of {@link MemoryManager}. */
export interface MemoryManagerOptions {
  /**
   * Bound on live sessions; when a new session would exceed it, the least recently used idle one is dropped
   * (an agent's session is idle when none of its calls runs on it; when every one is busy, the bound waits for
   * the next new session). Unset means unbounded: a library keeps what you give it until you `reset` it
   * (servers bound what their clients create: `HTTPAgentServer`'s `maxSessions`).
   */
  maxSessions?: number | undefined;
}

interface Session {
  id: SessionId;
  memory: Memory;
}

/**
 * One {@link Memory} per session, created on first use. Sessions are compared by `String(sessionId)`,
 * so `0` and `'0'` are the same session.
 */
export class MemoryManager {
  readonly maxSessions: number | undefined;
  /** See {@link SESSION_IN_USE}. */
  [SESSION_IN_USE]: ((key: SessionKey) => boolean) | undefined = undefined;
  readonly #create: () => Memory;
  readonly #sessions = new Map<SessionKey, Session>();

  constructor(create: () => Memory = newMemory, options: MemoryManagerOptions = {}) {
    const { maxSessions } = options;
    if (maxSessions !== undefined && !(Number.isInteger(maxSessions) && maxSessions > 0)) {
      throw new ConfigurationError({ message: `maxSessions must be a positive integer, got ${maxSessions}` });
    }
    this.#create = create;
    this.maxSessions = maxSessions;
  }

  /** The memory of a session, or undefined when the session has none yet. */
  get(sessionId: SessionId = 0): Memory | undefined {
    const key = sessionKey(sessionId);
    const session = this.#sessions.get(key);
    if (session && this.maxSessions !== undefined) this.#touch(key, session);
    return session?.memory;
  }

  /** The memory of a session, created when missing. */
  getOrCreate(sessionId: SessionId = 0): Memory {
    return this[MEMORY_AT](sessionKey(sessionId), sessionId);
  }

  /** See {@link MEMORY_AT}. */
  [MEMORY_AT](key: SessionKey, sessionId: SessionId): Memory {
    const session = this.#sessions.get(key);
    if (session) {
      if (this.maxSessions !== undefined) this.#touch(key, session);
      return session.memory;
    }
    const memory = this.#create();
    if (!(memory instanceof Memory)) {
      throw new ConfigurationError({ message: 'The memory factory must return a Memory instance' });
    }
    this.#sessions.set(key, { id: sessionId, memory });
    if (this.maxSessions !== undefined && this.#sessions.size > this.maxSessions) this.#evict(key);
    return memory;
  }

  /** The messages of a session (empty when it has none). */
  getMemory(sessionId: SessionId = 0, options?: GetMemoryOptions): AgentMessage[] {
    return this.get(sessionId)?.getMemory(options) ?? [];
  }

  /** Adds messages to a session, creating it when missing. */
  add(input: MessageInput | readonly MessageInput[], sessionId: SessionId = 0): void {
    this.getOrCreate(sessionId).add(input);
  }

  /** Forgets a session entirely. */
  reset(sessionId: SessionId = 0): void {
    this.#sessions.delete(sessionKey(sessionId));
  }

  /** The ids of the live sessions, least recently created (or used, with `maxSessions`) first. */
  sessions(): SessionId[] {
    return Array.from(this.#sessions.values(), (session) => session.id);
  }

  /** Number of live sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Drops the least recently used idle session, never `created` (the session being made). */
  #evict(created: SessionKey): void {
    const inUse = this[SESSION_IN_USE];
    for (const key of this.#sessions.keys()) {
      if (key === created || inUse?.(key)) continue;
      this.#sessions.delete(key);
      return;
    }
  }

  #touch(key: SessionKey, session: Session): void {
    this.#sessions.delete(key);
    this.#sessions.set(key, session);
  }
}
