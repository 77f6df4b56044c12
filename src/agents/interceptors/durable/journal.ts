import { randomUUID } from 'node:crypto';
import { QUIET } from '../../../core/quiet';
import { checkDurable, DEFAULT_RETAIN_MS, DURABLE, type DurableOptions, durableOf } from './option';

export { checkDurable, DEFAULT_RETAIN_MS, DURABLE, type DurableOptions, durableOf };

import type { CallFrame, DurableScope } from '../../../core/call-context';
import type { Slot } from '../../../core/interceptors';
import type { Steps } from '../../../core/steps';
import type { Memory } from '../../../memory/memory';
import { AgentMessage } from '../../../schema/agent-message';
import { ConfigurationError, ValidationError } from '../../../schema/errors';
import type { Decision } from '../../../schema/interrupts';
import type { SessionId, SessionKey } from '../../../schema/session';
import type { SessionStore, StoredJournal } from '../../../stores/types';
import { isThenable } from '../../../utils/is';
import { errorMessage } from '../../../utils/text';
import type { AgentBase } from '../../agent-base';
import { checkGiven, waitingIn } from '../approvals/decisions';
import type { Budget } from '../budget/meter';
import { acquireLease, DEFAULT_LEASE_MS, holderName, type SessionLease } from '../session-store/lease';
import { type SessionHold, SYNC_AGENT, UNKNOWN_OUTCOME } from '../session-store/persist';
import { CLIENT_TOOLS, METER, RECORDED_BUDGET } from '../slots';
import { isInProcess } from './in-process';
import { type BeginEntry, CallJournal, digestOf, type StepEntry, settled } from './steps';

/*
 * Durable calls. With `durable: { store }`, the outermost such call holds its session's lease in the store (the
 * one of `memory: { store }` when that is the same store and namespace) and keeps a journal there: first its
 * inputs, the length of every memory of the tree for its session and its budget, then one entry per model call
 * and tool call made inside it, as each completes (a tool call also when it starts), and last its outcome: its
 * reply, or that it failed. Every write is fenced by the lease: a process whose lease another took (it was
 * stopped, or busy, past `leaseMs`) records nothing more and starts no tool. Each entry has a key: its place in
 * the tree of calls (`r.0`, `r.1.3`: the 4th step of the call that was the root's 2nd), which a deterministic
 * `forward` gives the same on every run, parallel branches included (keys are taken when a step starts, and
 * steps start in program order).
 *
 * Run again with the same `callId`, the call is replayed: it puts every memory back to its recorded length,
 * takes its recorded inputs, and runs `forward` from the top; a step with a recorded result returns it without
 * asking the model or running the tool; the first step without one runs live. A tool step that started but has
 * no result ran when the process died: it runs again only when the tool is `retrySafe`, else the model is told
 * its outcome is unknown. A call id belongs to its session and its input:
 *
 * - a call that finished is kept `retainMs` with its reply, which a retry gets back (nothing runs);
 * - a call that failed keeps what it did: a retry replays it (while the session had no other call since);
 * - a call that a process left unfinished (it died) is recovered by `recover()`, by a retry, or first thing
 *   by the session's next call;
 * - a call waiting for approval goes on with a resume message, whose decisions must answer what its journal
 *   says waits (once: a copy of the session resumed elsewhere cannot answer the same pause again); any other
 *   message on the session ends it.
 *
 * A composite's in-process journal (`in-process-journal.ts`) goes through the same steps without a lease.
 */

/** The call option that marks a call made by `recover()` (internal). */
export const RECOVERING: unique symbol = Symbol('lagent-ts.recovering');

/**
 * Thrown by a call `recover()` made for a call that needs no recovery after all (it finished without a reply to
 * give back, or it is waiting for a person): `recover()` skips it. Internal.
 */
export class CallNotRecovered extends Error {
  readonly [QUIET] = true;
}

/** What the durable begin of a call needs of its Turn. */
export interface DurableTurn {
  readonly agent: AgentBase;
  readonly options: { sessionId: SessionId; callId?: unknown; signal?: AbortSignal | undefined };
  readonly sessionKey: SessionKey;
  readonly parent: CallFrame | undefined;
  readonly given: Readonly<Record<string, unknown>>;
  get<T>(key: Slot<T>): T | undefined;
  set<T>(key: Slot<T>, value: T | undefined): void;
}

/** How a durable call begins: the lease its journal is fenced by, and whether the call took it itself. */
export interface DurableLease {
  lease: SessionLease;
  /** True when the call took the lease (and releases it); false when it is the session hold's. */
  own: boolean;
}

/** Holder names of agents' own durable leases, one per agent in this process. */
const holders = new WeakMap<AgentBase, string>();

/**
 * Steps that give a durable call its session's lease: the hold of `memory: { store }` when that is on the same
 * store and namespace, else a lease of its own in the durable store (waited for while another process holds it).
 */
export function* durableLease(
  turn: DurableTurn,
  options: DurableOptions,
  hold: SessionHold | undefined,
): Steps<DurableLease> {
  const { agent } = turn;
  const { store } = options;
  if (isSync(agent) && !store.synchronous) {
    throw new ConfigurationError({
      message: `${agent.name}: ${store.description} is asynchronous; a synchronous agent needs a synchronous store (MemoryStore, SQLiteStore) for durable calls`,
    });
  }
  const namespace = options.namespace ?? agent.name;
  if (hold !== undefined && hold.binding.store === store && hold.binding.namespace === namespace) {
    return { lease: hold.lease, own: false };
  }
  let holder = holders.get(agent);
  if (holder === undefined) {
    holder = holderName();
    holders.set(agent, holder);
  }
  // As the session hold's owner: the same store behind another object (a wrapper) takes it as re-entry.
  const { lease } = yield* acquireLease({
    store,
    namespace,
    sessionId: String(turn.sessionKey),
    holder,
    owner: hold?.lease.owner,
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    signal: turn.options.signal,
  });
  lease.startRenewal();
  return { lease, own: true };
}

/** How a durable call goes on (see {@link beginDurable}). */
export interface DurableStart {
  /** The call finished before: its recorded reply, which is returned (nothing runs). */
  finished?: AgentMessage | undefined;
  /** A call of the session that a process left unfinished: recovered first, then this call begins again. */
  recover?: string | undefined;
  scope?: DurableScope | undefined;
  messages: AgentMessage[];
  /** The decisions earlier resumes of the call gave (a replay takes them again, round by round). */
  earlier: readonly Decision[];
  /**
   * A composite's in-process journal resumed without a paused call in it (paused in another process, or lost
   * with `loadStateDict`): the call runs afresh (see `in-process-journal.ts`).
   */
  fallback: boolean;
}

/** How a call's journal ended, or that it has not. */
type Outcome =
  | { status: 'running' | 'waiting' }
  | { status: 'done'; reply: unknown }
  | { status: 'failed' | 'superseded'; error?: string | undefined };

/**
 * Opens the journal of an outermost durable call, under its session's lease: a new one, or the recorded one of
 * `callId` (or, for a resume message, the session's latest unfinished call) to replay or answer from. A new
 * call first ends the session's calls that wait for a person, and asks for those a process left unfinished to
 * be recovered (`recover`): replayed later, they would take the session back to where they began. `lease` is
 * undefined for a composite's in-process journal (this process's alone).
 */
export function* beginDurable(
  turn: DurableTurn,
  options: DurableOptions,
  lease: DurableLease | undefined,
  hold: SessionHold | undefined,
  messages: AgentMessage[],
  decisions: readonly Decision[] | undefined,
  recovering: boolean,
): Steps<DurableStart> {
  const resuming = decisions !== undefined;
  const { agent } = turn;
  const { store } = options;
  const namespace = options.namespace ?? agent.name;
  const sessionId = String(turn.options.sessionId);
  let callId = turn.options.callId as string | undefined;
  if (callId !== undefined && (typeof callId !== 'string' || callId === '')) {
    throw new ConfigurationError({ message: `${agent.name}: callId must be a non-empty string` });
  }
  let fallback = false;
  if (callId === undefined && resuming) {
    const unfinished = (yield* settled(
      store.listJournals(namespace, sessionId, { unfinished: true }),
    )) as string[];
    callId = unfinished.at(-1);
    if (callId === undefined) {
      // Nothing of the session waits: its paused call was resumed already (or superseded). Only a composite's
      // in-process journal, lost with the process that paused, goes on (see in-process-journal.ts).
      if (!isInProcess(options)) throw nothingWaits(agent.name, sessionId, store.description);
      fallback = true;
    }
  }
  const retainMs = options.retainMs ?? DEFAULT_RETAIN_MS;
  const fence = lease?.lease.fence;
  if (callId !== undefined) {
    const stored = (yield* settled(store.readJournal(namespace, callId))) as StoredJournal | undefined;
    if (stored !== undefined) {
      return yield* continueCall(turn, options, lease, hold, stored, messages, decisions, recovering);
    }
    if (recovering) throw new CallNotRecovered();
  }
  callId ??= randomUUID();
  // The session's earlier calls: those waiting for a person end (this message answers them); one a process
  // left unfinished is recovered first.
  const earlier = (yield* settled(
    store.listJournals(namespace, sessionId, { unfinished: true }),
  )) as string[];
  for (const id of earlier) {
    if (id === callId) continue;
    const other = (yield* settled(store.readJournal(namespace, id))) as StoredJournal | undefined;
    if (other === undefined) continue;
    const outcome = outcomeOf(other);
    if (outcome.status === 'running' && beginOf(other) !== undefined) {
      return { recover: id, messages, earlier: [], fallback };
    }
    const ended: StepEntry = {
      key: 'r.end',
      kind: 'end',
      name: agent.name,
      digest: '',
      result: { status: 'superseded', error: 'a later message on the session ended it' },
    };
    yield* settled(store.finishJournal(namespace, id, { entry: ended, retainMs, fence }));
  }
  const journal = openJournal(turn, options, lease, hold, callId);
  const begin: BeginEntry = {
    key: 'r',
    kind: 'begin',
    name: agent.name,
    digest: '',
    version: hold?.cached.version,
    result: {
      inputs: messages.map((m) => m.toJSON()),
      lengths: lengthsOf(agent, turn.options.sessionId),
      budget: turn.given.budget as object | undefined,
      clientTools: turn.get(CLIENT_TOOLS),
    },
  };
  yield* settled(journal.write(begin));
  journal.begin = begin;
  journal.version = begin.version;
  return { scope: { journal, key: 'r', next: 0 }, messages, earlier: [], fallback };
}

/** A resume of a durable call when nothing of the session waits for a decision. */
function nothingWaits(owner: string, sessionId: string, store: string): ValidationError {
  return new ValidationError({
    message: `${owner}: no call of session ${JSON.stringify(sessionId)} waits for a decision in ${store} (the paused call was resumed already, by this or another copy of the session, or went on with a new message)`,
    field: 'decisions',
  });
}

/** A call whose journal exists: answered from it, replayed, or refused. */
function* continueCall(
  turn: DurableTurn,
  options: DurableOptions,
  lease: DurableLease | undefined,
  hold: SessionHold | undefined,
  stored: StoredJournal,
  messages: AgentMessage[],
  decisions: readonly Decision[] | undefined,
  recovering: boolean,
): Steps<DurableStart> {
  const { agent } = turn;
  const { store } = options;
  const namespace = options.namespace ?? agent.name;
  const { callId } = stored;
  const sessionId = String(turn.options.sessionId);
  if (stored.sessionId !== sessionId) {
    throw new ValidationError({
      field: 'callId',
      message: `${agent.name}: callId ${JSON.stringify(callId)} names a call of another session; a call id belongs to the session it was made on (leave callId out for a new call)`,
    });
  }
  const begin = beginOf(stored);
  if (begin === undefined) {
    throw new ValidationError({
      field: 'callId',
      message: `${agent.name}: the journal of call ${JSON.stringify(callId)} has no beginning to replay`,
    });
  }
  if (messages.length > 0 && digestOf(messages.map((m) => m.toJSON())) !== digestOf(begin.result.inputs)) {
    throw new ValidationError({
      field: 'callId',
      message: `${agent.name}: call ${JSON.stringify(callId)} was made with another input; the same callId must come with the same message (leave callId out for a new call)`,
    });
  }
  const outcome = outcomeOf(stored);
  const journal = openJournal(turn, options, lease, hold, callId);
  if (stored.finished) {
    if (outcome.status === 'done') {
      const reply = AgentMessage.from(outcome.reply);
      return {
        finished: withExtraInfo(reply, 'idempotentReplay', true),
        messages,
        earlier: [],
        fallback: false,
      };
    }
    if (recovering) throw new CallNotRecovered();
    if (outcome.status !== 'failed' || decisions !== undefined) {
      throw new ValidationError({
        field: 'callId',
        message: `${agent.name}: call ${JSON.stringify(callId)} ended (${outcome.status === 'superseded' ? 'a later message on its session ended it' : outcome.status}) and cannot go on; leave callId out for a new call`,
      });
    }
    // A call that failed goes on from what it did, unless its session moved on since.
    if (yield* movedOn(turn, store, namespace, sessionId, callId, begin)) {
      throw new ValidationError({
        field: 'callId',
        message: `${agent.name}: call ${JSON.stringify(callId)} failed${outcome.error ? ` (${outcome.error})` : ''}, and its session has had another call since: going on with it would take the session back to where that call began; make a new call`,
      });
    }
    journal.load(stored);
    const retry: StepEntry = { key: 'r.retry', kind: 'retry', name: agent.name, digest: '' };
    yield* settled(journal.write(retry));
  } else {
    if (recovering && outcome.status === 'waiting') throw new CallNotRecovered();
    // A resume answers what the journal says waits (not a pause a copy of the session answered already),
    // checked before anything is replayed.
    if (decisions !== undefined) checkGiven(agent.name, decisions, waitingIn(stored.entries));
    journal.load(stored);
  }
  const earlier = journal.decisions.slice() as Decision[];
  // A replay: every memory back where it stood (put back if it fails), the recorded inputs, and the call's own
  // budget.
  journal.undo = restoreLengths(agent, turn.options.sessionId, begin.result.lengths);
  const inputs = begin.result.inputs.map((json) => AgentMessage.from(json));
  if (turn.given.budget === undefined && begin.result.budget !== undefined)
    turn.set(RECORDED_BUDGET, begin.result.budget as Budget);
  // And the client tools it was made with, when not given again: its model calls replay as they were made.
  if (turn.get(CLIENT_TOOLS) === undefined && begin.result.clientTools !== undefined)
    turn.set(CLIENT_TOOLS, begin.result.clientTools);
  // The decisions given now are kept with the call: replayed after a crash, it has them again.
  if (decisions !== undefined && decisions.length > 0) {
    const key = `r.resume.${journal.decisions.length}`;
    const version = hold?.cached.version;
    yield* settled(
      journal.write({ key, kind: 'resume', name: agent.name, digest: '', result: decisions, version }),
    );
    journal.decisions.push(...decisions);
    journal.resumes++;
    journal.version = version;
  }
  return { scope: { journal, key: 'r', next: 0 }, messages: inputs, earlier, fallback: false };
}

/** The journal object of a call: its lease (and the session hold's, when that is another), and its meter. */
function openJournal(
  turn: DurableTurn,
  options: DurableOptions,
  lease: DurableLease | undefined,
  hold: SessionHold | undefined,
  callId: string,
): CallJournal {
  const namespace = options.namespace ?? turn.agent.name;
  const journal = new CallJournal(options.store, namespace, String(turn.options.sessionId), callId);
  journal.hold = lease?.lease;
  if (hold !== undefined && hold.lease !== lease?.lease) journal.alsoHeld = hold.lease;
  journal.meterOf = () => turn.get(METER);
  return journal;
}

/** True when the session had another call since `callId` began (a later journal, or a longer memory). */
function* movedOn(
  turn: DurableTurn,
  store: SessionStore,
  namespace: string,
  sessionId: string,
  callId: string,
  begin: BeginEntry,
): Steps<boolean> {
  const now = lengthsOf(turn.agent, turn.options.sessionId);
  for (const [path, length] of Object.entries(now))
    if (length > (begin.result.lengths[path] ?? 0)) return true;
  const ids = (yield* settled(store.listJournals(namespace, sessionId))) as string[];
  const at = ids.indexOf(callId);
  return at !== -1 && at < ids.length - 1;
}

/** The begin entry of a stored journal. */
function beginOf(stored: StoredJournal): BeginEntry | undefined {
  const first = stored.entries[0]?.data as StepEntry | undefined;
  return first?.kind === 'begin' ? (first as BeginEntry) : undefined;
}

/** How a stored journal ended (its last outcome), or whether it waits for a person or runs. */
function outcomeOf(stored: StoredJournal): Outcome {
  let outcome: Outcome = { status: 'running' };
  for (const { data } of stored.entries) {
    const entry = data as StepEntry;
    if (entry.kind === 'end') outcome = entry.result as Outcome;
    else if (entry.kind === 'interrupted') outcome = { status: 'waiting' };
    else if (entry.kind === 'resume' || entry.kind === 'retry') outcome = { status: 'running' };
  }
  return outcome;
}

/**
 * Steps that mark a durable call finished with its reply (as returned, `extraInfo.callId` included), kept
 * `retainMs` for retries of the same call id. Fenced by the call's lease.
 */
export function* finishDurable(
  scope: DurableScope,
  reply: AgentMessage,
  options: DurableOptions,
): Steps<void> {
  const journal = scope.journal as CallJournal;
  journal.check();
  const entry: StepEntry = {
    key: 'r.end',
    kind: 'end',
    name: '',
    digest: '',
    // The message itself: the store's JSON.stringify calls its toJSON (no copy made before).
    result: { status: 'done', reply },
  };
  yield* settled(
    (journal.store as SessionStore).finishJournal(journal.namespace, journal.callId, {
      entry,
      retainMs: options.retainMs ?? DEFAULT_RETAIN_MS,
      fence: journal.hold?.fence,
    }),
  );
}

/**
 * Steps that mark a durable call failed, keeping what it did for a retry with its call id: best effort (a
 * journal left unfinished is recovered as a crashed call). Not when its lease was lost (the journal is another
 * process's now) or its commit's outcome is unknown (its recovery finds out).
 */
export function* failDurable(scope: DurableScope, error: unknown, options: DurableOptions): Steps<void> {
  const journal = scope.journal as CallJournal;
  if (journal.hold?.lost !== undefined || journal.alsoHeld?.lost !== undefined) return;
  if (typeof error === 'object' && error !== null && UNKNOWN_OUTCOME.has(error)) return;
  const entry: StepEntry = {
    key: 'r.end',
    kind: 'end',
    name: '',
    digest: '',
    result: { status: 'failed', error: errorMessage(error) },
  };
  try {
    const done = (journal.store as SessionStore).finishJournal(journal.namespace, journal.callId, {
      entry,
      retainMs: options.retainMs ?? DEFAULT_RETAIN_MS,
      fence: journal.hold?.fence,
    });
    if (isThenable(done)) yield (done as Promise<void>).catch(() => undefined);
  } catch {
    // left unfinished: recovered as a call a process left
  }
}

/**
 * Steps that mark a durable call waiting for a person (not a crash to recover), with the interrupts it returned:
 * what a resume may answer (once), and what readers of the journal (`pendingInterrupts`, another process, a
 * reloaded page) show as waiting. Best effort.
 */
export function* interruptDurable(scope: DurableScope, name: string, reply: AgentMessage): Steps<void> {
  const journal = scope.journal as CallJournal;
  const interrupts = (reply.formatted as { interrupts?: unknown } | null)?.interrupts ?? [];
  const key = `r.interrupted.${journal.resumes}`;
  const entry: StepEntry = { key, kind: 'interrupted', name, digest: '', result: interrupts };
  try {
    const done = journal.write(entry);
    if (isThenable(done)) yield (done as Promise<unknown>).catch(() => undefined);
  } catch {
    // unmarked: its recovery asks the same question again, and the next message ends it; a resume is checked
    // round by round only
  }
}

/** The length of every memory of the tree for a session, by dotted path. */
function lengthsOf(agent: AgentBase, sessionId: SessionId): Record<string, number> {
  const lengths: Record<string, number> = {};
  for (const [prefix, node] of agent.namedAgents()) {
    const memory = node.memory?.get(sessionId);
    lengths[`${prefix}memory`] = memory?.length ?? 0;
  }
  return lengths;
}

/**
 * Takes every memory of the tree back to its recorded length (what a suspended call added goes); returns what
 * puts the messages taken out back, once the call's own are gone (a replay that failed).
 */
function restoreLengths(
  agent: AgentBase,
  sessionId: SessionId,
  lengths: Record<string, number>,
): (() => void) | undefined {
  const removed: [Memory, AgentMessage[]][] = [];
  for (const [prefix, node] of agent.namedAgents()) {
    const memory = node.memory?.get(sessionId);
    const length = lengths[`${prefix}memory`] ?? 0;
    if (memory !== undefined && memory.length > length) {
      const tail = memory.getMemory({ recentN: Number.MAX_SAFE_INTEGER }).slice(length);
      memory.remove(tail);
      removed.push([memory, tail]);
    }
  }
  if (removed.length === 0) return undefined;
  return () => {
    for (const [memory, tail] of removed) memory.add(tail);
  };
}

/** Puts back what a failed replay took out of the memories (after the call took its own messages back). */
export function undoReplay(scope: DurableScope | undefined): void {
  const journal = scope?.journal as CallJournal | undefined;
  const undo = journal?.undo;
  if (undo === undefined) return;
  journal!.undo = undefined;
  undo();
}

function isSync(agent: AgentBase): boolean {
  return (agent as unknown as Record<symbol, unknown>)[SYNC_AGENT] === true;
}

/** The reply with its call's id in `extraInfo.callId` (an object `extraInfo` keeps its other keys). */
export function withCallId(reply: AgentMessage, scope: DurableScope): AgentMessage {
  return withExtraInfo(reply, 'callId', (scope.journal as CallJournal).callId);
}

/** The reply with `key` set in its `extraInfo` (an object `extraInfo` keeps its other keys). */
export function withExtraInfo(reply: AgentMessage, key: string, value: unknown): AgentMessage {
  const extra = reply.extraInfo;
  reply.extraInfo =
    extra !== null && typeof extra === 'object' && !Array.isArray(extra)
      ? { ...extra, [key]: value }
      : { [key]: value };
  return reply;
}
