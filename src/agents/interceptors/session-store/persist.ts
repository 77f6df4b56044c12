import { randomUUID } from 'node:crypto';
import type { CallFrame } from '../../../core/call-context';
import type { Steps } from '../../../core/steps';
import type { Memory } from '../../../memory/memory';
import type { MemoryManager } from '../../../memory/memory-manager';
import { AgentMessage, type AgentMessageJSON, type LagentMessageJSON } from '../../../schema/agent-message';
import { ConfigurationError, StoreConflictError, StoreError } from '../../../schema/errors';
import { type SessionId, type SessionKey, sessionKey } from '../../../schema/session';
import {
  type CommitOptions,
  groupedWrites,
  type MaybePromise,
  type SessionStore,
  type SessionTurn,
  type StoredSession,
  type StoredState,
} from '../../../stores/types';
import { isThenable } from '../../../utils/is';
import { errorMessage } from '../../../utils/text';
import type { AgentBase } from '../../agent-base';
import { snakePath } from '../../state-dict';
import { sessionRecordsOf } from '../working-memory/symbol';
import {
  acquireLease,
  asStoreError,
  DEFAULT_LEASE_MS,
  groupedStep,
  holderName,
  pause,
  type SessionLease,
  storeStep,
} from './lease';

/*
 * Sessions kept in a store (`memory: { store }`). The outermost call of an agent that has a store (no call of
 * an agent with one encloses it) persists the whole agent tree's memories of its session:
 *
 * 1. before the call: take the session's lease in the store (waiting while another process holds it), and
 *    load the session's state when the store holds a version this process does not;
 * 2. the call runs in memory as always (a failed call takes its messages back);
 * 3. after it succeeded: commit what it changed in every memory of the tree as one turn (the appended
 *    messages, or a memory's whole history when it was edited otherwise), conditional on the version loaded
 *    and the lease; a commit that fails fails the call, which is then taken back in memory too. A commit whose
 *    answer was lost (a timeout, a broken connection: it may have landed) is tried again with the same turn id
 *    until the store answers, which tells whether it landed, so the call never reports a turn that landed as
 *    failed (and a retry never writes it twice).
 *
 * The lease is released with the commit, or when the call fails. Async calls renew it while they run (see
 * lease.ts); a renewal refused or failed stops the call before its commit.
 */

/** Options of a store in `memory: { store, ... }`. */
export interface MemoryStoreOptions {
  /** Where sessions are kept. */
  store: SessionStore;
  /** The namespace of this agent's sessions in the store. @default the agent's name */
  namespace?: string | undefined;
  /**
   * How long a call's lease on its session lasts, in ms; async calls renew it every third of that while they
   * run. Another process waits at most this long for a session whose holder died or stopped. A holder whose
   * lease ran out with nobody taking it goes on (a long synchronous model call of a sync agent). @default 10000
   */
  leaseMs?: number | undefined;
  /** Sessions kept in this process (least recently used ones are dropped and reloaded when called). @default 1000 */
  maxSessions?: number | undefined;
}

const DEFAULT_CACHED_SESSIONS = 1000;
/** Tries of a commit whose answer was lost, after the first, and the wait before each (doubling), in ms. */
const COMMIT_RETRIES = 3;
const COMMIT_RETRY_MS = 50;

/** Errors of commits whose outcome stayed unknown (the store never answered whether the turn landed). */
export const UNKNOWN_OUTCOME = new WeakSet<object>();

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
  /** The session's lease: its fence names this acquisition. */
  lease: SessionLease;
}

/** An agent's store, and the sessions of it this process holds. */
export class SessionBinding {
  readonly store: SessionStore;
  readonly namespace: string;
  #leaseMs: number;
  /** Whether `memory.leaseMs` was given (else the default, which {@link SessionBinding.defaultLeaseMs} sets). */
  readonly #leaseMsGiven: boolean;
  readonly maxSessions: number;
  /** This process's (and agent's) name for its leases (each acquisition's owner is made from it). */
  readonly owner = holderName();
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
    this.#leaseMs = positiveInteger('memory.leaseMs', options.leaseMs, DEFAULT_LEASE_MS);
    this.#leaseMsGiven = options.leaseMs !== undefined;
    this.maxSessions = positiveInteger('memory.maxSessions', options.maxSessions, DEFAULT_CACHED_SESSIONS);
  }

  /** How long a call's lease on its session lasts, in ms (`memory.leaseMs`). */
  get leaseMs(): number {
    return this.#leaseMs;
  }

  /**
   * Makes `leaseMs` the lease of calls from now on, unless the agent's `memory` option gave one: the command
   * line's `--lease-ms` for an agent module that keeps its sessions in a store of its own.
   */
  defaultLeaseMs(leaseMs: number): void {
    if (!this.#leaseMsGiven) this.#leaseMs = positiveInteger('leaseMs', leaseMs, DEFAULT_LEASE_MS);
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
    const grouped = this.#groupedFor(agent);
    const { lease, acquired } = yield* acquireLease({
      store: this.store,
      namespace: this.namespace,
      sessionId: String(key),
      holder: this.owner,
      leaseMs: this.leaseMs,
      knownVersion: cached?.version,
      signal,
      grouped: grouped && ((options) => grouped.acquireSessionGrouped(this.namespace, String(key), options)),
    });
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
    const hold: SessionHold = { binding: this, key, sessionId, cached, released: false, lease };
    try {
      // The store sends the state unless this process holds its version.
      if (acquired.state !== undefined) load(agent, sessionId, acquired.state, cached);
      cached.version = acquired.version;
    } catch (error) {
      this.release(hold);
      throw error;
    }
    lease.startRenewal();
    return hold;
  }

  /**
   * Steps that commit what the call changed in the tree's memories of the session and release the lease (kept
   * with `release: false`: a call recovered before the one that holds the session). `turnId` names the turn
   * (a durable call's id; random otherwise).
   */
  *commit(
    agent: AgentBase,
    hold: SessionHold,
    options: {
      turnId?: string | undefined;
      release?: boolean | undefined;
      /** The version to commit at, when not the one loaded (a replayed call's, as it began). */
      version?: number | undefined;
    } = {},
  ): Steps<void> {
    const release = options.release !== false;
    hold.lease.check();
    const { cached } = hold;
    const { turn, committed } = changesOf(agent, hold.sessionId, cached.committed);
    if (turn === undefined) {
      if (release) this.release(hold);
      return;
    }
    const commit: CommitOptions = {
      owner: hold.lease.owner,
      version: options.version ?? cached.version,
      turn,
      release,
      turnId: options.turnId ?? randomUUID(),
    };
    const id = String(hold.sessionId);
    const commitTurn = () => this.store.commitTurn(this.namespace, String(hold.key), commit);
    const grouped = this.#groupedFor(agent);
    let version: number;
    try {
      version = yield* grouped
        ? groupedStep(
            this.store,
            id,
            commitTurn,
            () => grouped.commitTurnGrouped(this.namespace, String(hold.key), commit),
            'commitTurn',
          )
        : storeStep(this.store, 'commitTurn', id, commitTurn);
    } catch (error) {
      // A refusal is an answer: nothing was written. A sync store's failure is one too (its transaction ended).
      if (error instanceof StoreConflictError || this.store.synchronous) throw error;
      version = yield* this.#settleCommit(commitTurn, id, error);
    }
    if (release) {
      hold.released = true;
      hold.lease.stopRenewal();
      cached.active--;
    }
    cached.version = version;
    cached.committed = committed;
  }

  /**
   * A commit whose answer was lost: tried again with the same turn id (the store writes a turn once) until the
   * store answers, which says whether it landed. Still no answer: a `StoreError` saying the outcome is unknown.
   */
  *#settleCommit(commitTurn: () => MaybePromise<number>, sessionId: string, lost: unknown): Steps<number> {
    let last = lost;
    for (let attempt = 0; attempt < COMMIT_RETRIES; attempt++) {
      yield* pause(COMMIT_RETRY_MS * 2 ** attempt);
      try {
        return yield* storeStep(this.store, 'commitTurn', sessionId, commitTurn);
      } catch (error) {
        if (error instanceof StoreConflictError) throw error;
        last = error;
      }
    }
    const unknown = new StoreError({
      message: `${this.store.description}: commitTurn of session ${JSON.stringify(sessionId)} got no answer (${errorMessage(last)}), also when tried again ${COMMIT_RETRIES} times: whether the turn was committed is unknown (a durable call finds out when it is recovered)`,
      store: this.store.description,
      operation: 'commitTurn',
      sessionId,
      cause: last,
    });
    UNKNOWN_OUTCOME.add(unknown);
    throw unknown;
  }

  /** Ends a hold without a commit (the call failed): the lease goes back; the store is as it was. */
  release(hold: SessionHold): void {
    if (hold.released) return;
    hold.released = true;
    hold.cached.active--;
    hold.lease.release();
  }

  /**
   * After a call that committed and then failed (its memories are taken back): the next call reloads the
   * session rather than trusting what this process holds.
   */
  stale(hold: SessionHold): void {
    hold.cached.version = -1;
    hold.cached.committed = new Map();
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

  /** The store's grouped writes, for an agent whose calls can wait for them (not a sync agent's). */
  #groupedFor(agent: AgentBase) {
    return (agent as { [SYNC_AGENT]?: boolean })[SYNC_AGENT] === true ? undefined : groupedWrites(this.store);
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
    const records = sessionRecordsOf(node);
    if (records !== undefined) found.push([snakePath(`${path}workingMemory`), records]);
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
