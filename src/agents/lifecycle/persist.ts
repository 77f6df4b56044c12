import { randomUUID } from 'node:crypto';
import type { CallFrame } from '../../core/call-context';
import { PromiseInSyncCall, type Steps } from '../../core/steps';
import type { Memory } from '../../memory/memory';
import type { MemoryManager } from '../../memory/memory-manager';
import { AgentMessage, type AgentMessageJSON, type LagentMessageJSON } from '../../schema/agent-message';
import { ConfigurationError, StoreError } from '../../schema/errors';
import { type SessionId, type SessionKey, sessionKey } from '../../schema/session';
import {
  type GroupedWrite,
  groupedWrites,
  type MaybePromise,
  type SessionStore,
  type SessionTurn,
  type StoredSession,
  type StoredState,
} from '../../stores/types';
import { isThenable } from '../../utils/is';
import { errorMessage } from '../../utils/text';
import type { AgentBase } from '../agent-base';
import { snakePath } from '../state-dict';

/*
 * Sessions kept in a store (`memory: { store }`). The outermost call of an agent that has a store (no call of
 * an agent with one encloses it) persists the whole agent tree's memories of its session:
 *
 * 1. before the call: take the session's lease in the store (waiting while another process holds it), and
 *    load the session's state when the store holds a version this process does not;
 * 2. the call runs in memory as always (a failed call takes its messages back);
 * 3. after it succeeded: commit what it changed in every memory of the tree as one turn (the appended
 *    messages, or a memory's whole history when it was edited otherwise), conditional on the version loaded
 *    and the lease; a commit that fails fails the call, which is then taken back in memory too.
 *
 * The lease is released with the commit, or when the call fails. Async calls renew it while they run.
 */

/** Options of a store in `memory: { store, ... }`. */
export interface MemoryStoreOptions {
  /** Where sessions are kept. */
  store: SessionStore;
  /** The namespace of this agent's sessions in the store. @default the agent's name */
  namespace?: string | undefined;
  /**
   * How long a call's lease on its session lasts, in ms; async calls renew it every third of that while they
   * run. Another process waits at most this long for a session whose holder died. @default 30000
   */
  leaseMs?: number | undefined;
  /** Sessions kept in this process (least recently used ones are dropped and reloaded when called). @default 1000 */
  maxSessions?: number | undefined;
}

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_CACHED_SESSIONS = 1000;
/** The longest wait between two tries of a busy session, in ms. */
const MAX_BUSY_WAIT_MS = 200;

/** What the process holds of one stored session. */
interface CachedSession {
  sessionId: SessionId;
  version: number;
  /** Per memory key, the messages as last committed or loaded (the objects memory holds). */
  committed: Map<string, readonly AgentMessage[]>;
  /** Calls of this session in progress in this process (a session in use is never dropped). */
  active: number;
}

/** A call's hold on its stored session, from {@link SessionBinding.begin} to its commit or release. */
export interface SessionHold {
  binding: SessionBinding;
  key: SessionKey;
  sessionId: SessionId;
  cached: CachedSession;
  released: boolean;
  renewal: ReturnType<typeof setInterval> | undefined;
}

/** An agent's store, and the sessions of it this process holds. */
export class SessionBinding {
  readonly store: SessionStore;
  readonly namespace: string;
  readonly leaseMs: number;
  readonly maxSessions: number;
  /** This process's (and agent's) name for its leases. */
  readonly owner = randomUUID();
  readonly #sessions = new Map<SessionKey, CachedSession>();

  constructor(agent: AgentBase, options: MemoryStoreOptions) {
    const { store, namespace = agent.name } = options;
    if (store === null || typeof store !== 'object' || typeof store.acquireSession !== 'function') {
      throw new ConfigurationError({
        message: `${agent.name}: memory.store must be a session store (MemoryStore, SQLiteStore, RedisStore, PostgresStore)`,
      });
    }
    this.store = store;
    this.namespace = namespace;
    this.leaseMs = positiveInteger('memory.leaseMs', options.leaseMs, DEFAULT_LEASE_MS);
    this.maxSessions = positiveInteger('memory.maxSessions', options.maxSessions, DEFAULT_CACHED_SESSIONS);
  }

  /**
   * Steps that take the session's lease and bring the tree's memories of it up to the store's version.
   * A sync store's steps yield only values, so sync agents run them; an async store's yield promises.
   */
  *begin(
    agent: AgentBase,
    key: SessionKey,
    sessionId: SessionId,
    signal?: AbortSignal | undefined,
  ): Steps<SessionHold> {
    let cached = this.#sessions.get(key);
    const known = cached?.version;
    let waited = 0;
    let acquired: { version: number; state: StoredState | undefined };
    const grouped = this.#groupedFor(agent);
    for (;;) {
      const options = { owner: this.owner, leaseMs: this.leaseMs, knownVersion: known };
      const acquire = () => this.store.acquireSession(this.namespace, String(key), options);
      const result = yield* grouped
        ? this.#grouped('acquireSession', String(sessionId), acquire, () =>
            grouped.acquireSessionGrouped(this.namespace, String(key), options),
          )
        : this.#call('acquireSession', String(sessionId), acquire);
      if (result.acquired) {
        acquired = result;
        break;
      }
      // Another process holds the session: wait for it (at most until its lease ends), then try again.
      signal?.throwIfAborted();
      const delay = Math.max(1, Math.min(MAX_BUSY_WAIT_MS, result.until - Date.now(), 5 * 2 ** waited++));
      yield* pause(delay);
    }
    if (cached === undefined) {
      cached = { sessionId, version: 0, committed: new Map(), active: 0 };
      this.#sessions.set(key, cached);
      this.#evict(agent);
    } else {
      // Most recently used last.
      this.#sessions.delete(key);
      this.#sessions.set(key, cached);
    }
    cached.active++;
    const hold: SessionHold = { binding: this, key, sessionId, cached, released: false, renewal: undefined };
    try {
      // The store sends the state unless this process holds its version.
      if (acquired.state !== undefined) load(agent, sessionId, acquired.state, cached);
      cached.version = acquired.version;
    } catch (error) {
      this.release(hold);
      throw error;
    }
    hold.renewal = this.#renewEvery(hold);
    return hold;
  }

  /** Steps that commit what the call changed in the tree's memories of the session, and release the lease. */
  *commit(agent: AgentBase, hold: SessionHold): Steps<void> {
    const { cached } = hold;
    const { turn, committed } = changesOf(agent, hold.sessionId, cached.committed);
    if (turn === undefined) {
      this.release(hold);
      return;
    }
    const options = { owner: this.owner, version: cached.version, turn };
    const commitTurn = () => this.store.commitTurn(this.namespace, String(hold.key), options);
    const grouped = this.#groupedFor(agent);
    const version = yield* grouped
      ? this.#grouped('commitTurn', String(hold.sessionId), commitTurn, () =>
          grouped.commitTurnGrouped(this.namespace, String(hold.key), options),
        )
      : this.#call('commitTurn', String(hold.sessionId), commitTurn);
    hold.released = true;
    this.#stop(hold);
    cached.version = version;
    cached.committed = committed;
    cached.active--;
  }

  /** Ends a hold without a commit (the call failed): the lease goes back; the store is as it was. */
  release(hold: SessionHold): void {
    if (hold.released) return;
    hold.released = true;
    this.#stop(hold);
    hold.cached.active--;
    try {
      const done = this.store.releaseSession(this.namespace, String(hold.key), this.owner);
      // Not waited for: the lease ends by itself if this fails.
      if (isThenable(done)) (done as Promise<void>).catch(() => undefined);
    } catch {
      // the lease ends by itself
    }
  }

  /** Forgets what this process holds of a session (after `agent.reset`): the next call reloads it. */
  forget(key: SessionKey): void {
    const cached = this.#sessions.get(key);
    if (cached !== undefined && cached.active === 0) this.#sessions.delete(key);
  }

  /** Number of sessions this process holds. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * The tree's memories of a session as the store has them (every committed turn), in Lagent's state-dict
   * shape; memories the store has nothing for are empty.
   */
  storedState(agent: AgentBase, sessionId: SessionId): MaybePromise<Record<string, LagentMessageJSON[]>> {
    const withTree = (session: StoredSession | undefined) => {
      const dict: Record<string, LagentMessageJSON[]> = {};
      for (const [key] of memoriesOf(agent)) dict[key] = session?.state[key] ?? [];
      return dict;
    };
    let read: MaybePromise<StoredSession | undefined>;
    try {
      read = this.store.readSession(this.namespace, String(sessionKey(sessionId)));
    } catch (error) {
      throw asStoreError(this.store, 'readSession', String(sessionId), error);
    }
    if (!isThenable(read)) return withTree(read);
    return (read as Promise<StoredSession | undefined>).then(withTree, (error: unknown) => {
      throw asStoreError(this.store, 'readSession', String(sessionId), error);
    });
  }

  /** A store method's result as a step; failures other than StoreErrors become StoreErrors naming the call. */
  *#call<T>(operation: string, sessionId: string, run: () => T | Promise<T>): Steps<T> {
    let result: T | Promise<T>;
    try {
      result = run();
    } catch (error) {
      throw asStoreError(this.store, operation, sessionId, error);
    }
    if (!isThenable(result)) return result;
    try {
      return (yield result) as T;
    } catch (error) {
      throw asStoreError(this.store, operation, sessionId, error);
    }
  }

  /** The store's grouped writes, for an agent whose calls can wait for them (not a sync agent's). */
  #groupedFor(agent: AgentBase) {
    return (agent as { [SYNC_AGENT]?: boolean })[SYNC_AGENT] === true ? undefined : groupedWrites(this.store);
  }

  /**
   * A write the store groups with those of other calls, as a step: an async driver awaits it; a sync driver
   * cannot, so it is taken back and made directly.
   */
  *#grouped<T>(
    operation: string,
    sessionId: string,
    direct: () => T | Promise<T>,
    queue: () => GroupedWrite<T>,
  ): Steps<T> {
    let write: GroupedWrite<T>;
    try {
      write = queue();
    } catch (error) {
      throw asStoreError(this.store, operation, sessionId, error);
    }
    const { made } = write;
    if (made !== undefined) {
      if ('error' in made) throw asStoreError(this.store, operation, sessionId, made.error);
      return made.value;
    }
    try {
      return (yield write.result) as T;
    } catch (error) {
      if (error instanceof PromiseInSyncCall && write.cancel())
        return yield* this.#call(operation, sessionId, direct);
      throw asStoreError(this.store, operation, sessionId, error);
    }
  }

  #renewEvery(hold: SessionHold): ReturnType<typeof setInterval> {
    const timer = setInterval(
      () => {
        try {
          const renewed = this.store.renewLease(this.namespace, String(hold.key), this.owner, this.leaseMs);
          if (isThenable(renewed)) (renewed as Promise<boolean>).catch(() => undefined);
        } catch {
          // a lease that cannot be renewed ends; the commit then says so
        }
      },
      Math.max(1, Math.floor(this.leaseMs / 3)),
    );
    timer.unref?.();
    return timer;
  }

  #stop(hold: SessionHold): void {
    if (hold.renewal !== undefined) clearInterval(hold.renewal);
    hold.renewal = undefined;
  }

  /** Drops the least recently used idle sessions past `maxSessions` from the tree's memories. */
  #evict(agent: AgentBase): void {
    if (this.#sessions.size <= this.maxSessions) return;
    for (const [key, cached] of this.#sessions) {
      if (this.#sessions.size <= this.maxSessions) break;
      if (cached.active > 0) continue;
      this.#sessions.delete(key);
      for (const [, manager] of memoriesOf(agent)) manager.reset(cached.sessionId);
    }
  }
}

/** The store binding of an agent with `memory: { store }`, where calls find it. */
export const SESSION_BINDING: unique symbol = Symbol('lagent-ts.sessionBinding');

/** The binding of an agent, if it keeps its sessions in a store. */
export function sessionBindingOf(agent: object): SessionBinding | undefined {
  return (agent as { [SESSION_BINDING]?: SessionBinding })[SESSION_BINDING];
}

/**
 * Gives an agent built without one a store for its sessions, as `memory: { store }` would have (for servers
 * and the command line, which get agents already built). Before its first call only.
 */
export function attachStore(agent: AgentBase, options: MemoryStoreOptions): SessionBinding {
  if (sessionBindingOf(agent) !== undefined) {
    throw new ConfigurationError({
      message: `${agent.name} already keeps its sessions in ${sessionBindingOf(agent)!.store.description}`,
    });
  }
  if (agent.memory === null) {
    throw new ConfigurationError({
      message: `${agent.name} has no memory (memory: null) to keep in a store`,
    });
  }
  const binding = new SessionBinding(agent, options);
  (agent as { [SESSION_BINDING]?: SessionBinding })[SESSION_BINDING] = binding;
  checkSyncStore(agent);
  return binding;
}

/** The binding whose store persists a call of `agent`: its own, unless a call of an agent with one encloses it. */
export function bindingFor(agent: AgentBase, parent: CallFrame | undefined): SessionBinding | undefined {
  const binding = (agent as { [SESSION_BINDING]?: SessionBinding })[SESSION_BINDING];
  if (binding === undefined) return undefined;
  for (let frame = parent; frame !== undefined; frame = frame.parent) {
    if (
      (frame.owner as { [SESSION_BINDING]?: SessionBinding } | undefined)?.[SESSION_BINDING] !== undefined
    ) {
      return undefined;
    }
  }
  return binding;
}

/** Every memory of the tree with its state-dict key in Lagent's shape (`memory`, `writer.memory`). */
function memoriesOf(agent: AgentBase): [string, MemoryManager][] {
  const found: [string, MemoryManager][] = [];
  for (const [path, node] of agent.namedAgents()) {
    if (node.memory) found.push([snakePath(`${path}memory`), node.memory]);
  }
  return found;
}

/** Puts a stored state into the tree's memories of one session (every memory: missing keys are empty). */
function load(agent: AgentBase, sessionId: SessionId, state: StoredState, cached: CachedSession): void {
  // Everything is checked before any memory changes.
  const plan: [MemoryManager, string, LagentMessageJSON[]][] = [];
  for (const [key, manager] of memoriesOf(agent)) {
    const entries = state[key] ?? [];
    if (!Array.isArray(entries)) throw unreadable(agent, sessionId, `"${key}" is not a list of messages`);
    for (const [index, entry] of entries.entries()) {
      try {
        AgentMessage.from(entry);
      } catch (error) {
        throw unreadable(agent, sessionId, `"${key}"[${index}] is not a message: ${errorMessage(error)}`);
      }
    }
    plan.push([manager, key, entries]);
  }
  cached.committed = new Map();
  for (const [manager, key, entries] of plan) {
    const memory = manager.getOrCreate(sessionId);
    memory.load(entries as unknown as AgentMessageJSON[]);
    cached.committed.set(key, allMessages(memory));
  }
}

/** Every message of a memory, whatever its `recentN`. */
function allMessages(memory: Memory): AgentMessage[] {
  return memory.getMemory({ recentN: Number.MAX_SAFE_INTEGER });
}

function unreadable(agent: AgentBase, sessionId: SessionId, detail: string): StoreError {
  const store = (agent as { [SESSION_BINDING]?: SessionBinding })[SESSION_BINDING]?.store;
  return new StoreError({
    message: `${store?.description ?? 'store'}: session ${JSON.stringify(String(sessionId))} cannot be loaded: ${detail}`,
    store: store?.description ?? 'store',
    operation: 'acquireSession',
    sessionId: String(sessionId),
  });
}

/**
 * What the tree's memories of a session hold now that they did not when last committed: per memory, the
 * messages added after what was committed, or the whole history when an earlier message changed.
 */
function changesOf(
  agent: AgentBase,
  sessionId: SessionId,
  before: Map<string, readonly AgentMessage[]>,
): { turn: SessionTurn | undefined; committed: Map<string, readonly AgentMessage[]> } {
  let append: Record<string, LagentMessageJSON[]> | undefined;
  let replace: Record<string, LagentMessageJSON[]> | undefined;
  const committed = new Map<string, readonly AgentMessage[]>();
  for (const [key, manager] of memoriesOf(agent)) {
    const memory = manager.get(sessionId);
    const now = memory === undefined ? [] : allMessages(memory);
    const then = before.get(key) ?? [];
    committed.set(key, now);
    let prefix = now.length >= then.length;
    for (let i = 0; prefix && i < then.length; i++) prefix = now[i] === then[i];
    if (prefix) {
      if (now.length > then.length) {
        append ??= {};
        append[key] = now.slice(then.length).map(toStored);
      }
    } else {
      replace ??= {};
      replace[key] = now.map(toStored);
    }
  }
  const turn = append === undefined && replace === undefined ? undefined : { append, replace };
  return { turn, committed };
}

function toStored(message: AgentMessage): LagentMessageJSON {
  return message.toJSON({ format: 'lagent' });
}

function asStoreError(store: SessionStore, operation: string, sessionId: string, error: unknown): unknown {
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
function* pause(ms: number): Steps<void> {
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

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isSafeInteger(value) && value > 0)) {
    throw new ConfigurationError({ message: `${name} must be a positive integer, got ${value}` });
  }
  return value;
}

/** Marks the sync agent classes (on their prototypes): their calls cannot wait for a promise. */
export const SYNC_AGENT: unique symbol = Symbol('lagent-ts.syncAgent');

/** Throws for a sync agent given an async store: its calls could not wait for the store. */
export function checkSyncStore(agent: AgentBase): void {
  const store = (agent as { [SESSION_BINDING]?: SessionBinding })[SESSION_BINDING]?.store;
  if (
    store !== undefined &&
    !store.synchronous &&
    (agent as { [SYNC_AGENT]?: boolean })[SYNC_AGENT] === true
  ) {
    throw new ConfigurationError({
      message: `${agent.name}: ${store.description} is asynchronous, and a synchronous agent cannot wait for it: use an Async* agent, or a synchronous store (MemoryStore, SQLiteStore)`,
    });
  }
}
