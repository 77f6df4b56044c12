import { randomUUID } from 'node:crypto';
import type { DurableScope } from '../../core/call-context';
import { checkGiven, waitingIn } from '../../core/decisions';
import { type BeginEntry, CallJournal, settled } from '../../core/durable-steps';
import type { Steps } from '../../core/steps';
import { AgentMessage } from '../../schema/agent-message';
import { ConfigurationError, ValidationError } from '../../schema/errors';
import type { Decision } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import type { SessionStore, StoredJournal } from '../../stores/types';
import type { AgentBase } from '../agent-base';
import { SYNC_AGENT } from './persist';

/*
 * Durable calls. With `durable: { store }`, the outermost such call keeps a journal in the store: first its
 * inputs and the length of every memory of the tree for its session, then one entry per model call and tool
 * call made inside it, as each completes (a tool call also when it starts). Each entry has a key: its place
 * in the tree of calls (`r.0`, `r.1.3`: the 4th step of the call that was the root's 2nd), which a
 * deterministic `forward` gives the same on every run, parallel branches included (keys are taken when a
 * step starts, and steps start in program order).
 *
 * Run again with the same `callId` (after a crash, `recover()`; after an interrupt, the resume message), the
 * call puts every memory back to its recorded length, takes its recorded inputs, and runs `forward` from the
 * top: a step with a recorded result returns it without asking the model or running the tool; the first step
 * without one runs live. A tool step that started but has no result ran when the process died: it runs again
 * only when the tool is `retrySafe`, else the model is told its outcome is unknown.
 */

/** The `durable` option of agents and calls. */
export interface DurableOptions {
  /** Where journals are kept: `MemoryStore`, or a store of `lagent-ts/stores`. */
  store: SessionStore;
  /** The namespace of the journals in the store. @default the agent's name */
  namespace?: string | undefined;
}

/** Where an agent keeps its `durable` option (internal). */
export const DURABLE: unique symbol = Symbol('lagent-ts.durable');

/** Checks a `durable` option. */
export function checkDurable(owner: string, value: unknown): DurableOptions | undefined {
  if (value === undefined) return undefined;
  const store = (value as { store?: SessionStore } | null)?.store;
  if (store === null || typeof store !== 'object' || typeof store.appendJournal !== 'function') {
    throw new ConfigurationError({
      message: `${owner}: durable must be { store } with a store (MemoryStore, or one of lagent-ts/stores)`,
    });
  }
  return value as DurableOptions;
}

/** What the durable begin of a call needs of its Turn. */
export interface DurableTurn {
  readonly agent: AgentBase;
  readonly options: { sessionId: SessionId; callId?: unknown };
}

/**
 * Opens the journal of an outermost durable call: a new one, or the recorded one of `callId` (or, for a
 * resume message, the session's latest unfinished call) to replay. Returns the scope, the inputs to run, and
 * the decisions earlier resumes of the call gave (a replay takes them again). The decisions given now
 * (`decisions`, for a resume message) are checked against what the journal says waits, before anything is
 * replayed, then journaled. `inProcess`: the store is a composite's in-process journal; resumed without a
 * paused call there (`fallback`), the call runs afresh (see `in-process-journal.ts`).
 */
export function* beginDurable(
  turn: DurableTurn,
  options: DurableOptions,
  messages: AgentMessage[],
  decisions: readonly Decision[] | undefined,
  inProcess = false,
): Steps<{ scope: DurableScope; messages: AgentMessage[]; earlier: readonly Decision[]; fallback: boolean }> {
  const resuming = decisions !== undefined;
  const { agent } = turn;
  const { store } = options;
  if (isSync(agent) && !store.synchronous) {
    throw new ConfigurationError({
      message: `${agent.name}: ${store.description} is asynchronous; a synchronous agent needs a synchronous store (MemoryStore, SQLiteStore) for durable calls`,
    });
  }
  const namespace = options.namespace ?? agent.name;
  const sessionId = String(turn.options.sessionId);
  let callId = turn.options.callId as string | undefined;
  let fallback = false;
  if (callId === undefined && resuming) {
    const unfinished = (yield* settled(
      store.listJournals(namespace, sessionId, { unfinished: true }),
    )) as string[];
    callId = unfinished.at(-1);
  }
  callId ??= randomUUID();
  if (typeof callId !== 'string' || callId === '') {
    throw new ConfigurationError({ message: `${agent.name}: callId must be a non-empty string` });
  }
  const journal = new CallJournal(store, namespace, sessionId, callId);
  const stored = (yield* settled(store.readJournal(namespace, callId))) as StoredJournal | undefined;
  if (stored !== undefined && !stored.finished) journal.load(stored);
  if (resuming && journal.begin === undefined) {
    // Nothing of the session waits: its paused call was resumed already (or superseded). Only a composite's
    // in-process journal, lost with the process that paused, goes on (see in-process-journal.ts).
    if (!inProcess) throw nothingWaits(agent.name, sessionId, store.description);
    fallback = true;
  }
  const earlier = journal.decisions.slice() as Decision[];
  if (journal.begin !== undefined) {
    // A resume answers what the journal says waits (not a pause a copy of the session answered already).
    if (decisions !== undefined) checkGiven(agent.name, decisions, waitingIn(stored!.entries));
    // A replay: every memory back where it stood, and the recorded inputs.
    restoreLengths(agent, turn.options.sessionId, journal.begin.result.lengths);
    messages = journal.begin.result.inputs.map((json) => AgentMessage.from(json));
  } else {
    if (stored?.finished) yield* settled(store.deleteJournal(namespace, callId));
    // The session goes on without the calls of it that failed or died before: replayed after this one,
    // such a call would take the session back to where it began, losing this call. They are closed.
    const earlierCalls = (yield* settled(
      store.listJournals(namespace, sessionId, { unfinished: true }),
    )) as string[];
    for (const id of earlierCalls) if (id !== callId) yield* settled(store.finishJournal(namespace, id));
    const begin: BeginEntry = {
      key: 'r',
      kind: 'begin',
      name: agent.name,
      digest: '',
      result: { inputs: messages.map((m) => m.toJSON()), lengths: lengthsOf(agent, turn.options.sessionId) },
    };
    yield* settled(journal.write(begin));
    journal.begin = begin;
  }
  // The decisions given now are kept with the call: replayed after a crash, it has them again.
  if (decisions !== undefined && decisions.length > 0) {
    const key = `r.resume.${journal.decisions.length}`;
    yield* settled(journal.write({ key, kind: 'resume', name: agent.name, digest: '', result: decisions }));
    journal.decisions.push(...decisions);
  }
  return { scope: { journal, key: 'r', next: 0 }, messages, earlier, fallback };
}

/** A resume of a durable call when nothing of the session waits for a decision. */
function nothingWaits(owner: string, sessionId: string, store: string): ValidationError {
  return new ValidationError({
    message: `${owner}: no call of session ${JSON.stringify(sessionId)} waits for a decision in ${store} (the paused call was resumed already, by this or another copy of the session, or went on with a new message)`,
    field: 'decisions',
  });
}

/** Marks a durable call's journal finished. */
export function* finishDurable(scope: DurableScope): Steps<void> {
  const journal = scope.journal as CallJournal;
  yield* settled((journal.store as SessionStore).finishJournal(journal.namespace, journal.callId));
}

/**
 * Journals the interrupts an interrupted durable call returned: what a resume may answer (and only once), and
 * what readers of the journal (`pendingInterrupts`, another process, a reloaded page) show as waiting.
 */
export function* recordInterrupts(scope: DurableScope, name: string, reply: AgentMessage): Steps<void> {
  const journal = scope.journal as CallJournal;
  const interrupts = (reply.formatted as { interrupts?: unknown } | null)?.interrupts ?? [];
  const key = `r.interrupt.${journal.decisions.length}`;
  yield* settled(journal.write({ key, kind: 'interrupt', name, digest: '', result: interrupts }));
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

/** Takes every memory of the tree back to its recorded length (what a suspended call added goes). */
function restoreLengths(agent: AgentBase, sessionId: SessionId, lengths: Record<string, number>): void {
  for (const [prefix, node] of agent.namedAgents()) {
    const memory = node.memory?.get(sessionId);
    const length = lengths[`${prefix}memory`] ?? 0;
    if (memory !== undefined && memory.length > length) memory.remove(memory.getMemory().slice(length));
  }
}

function isSync(agent: AgentBase): boolean {
  return (agent as unknown as Record<symbol, unknown>)[SYNC_AGENT] === true;
}

/** The `durable` option that applies to an outermost call: the call's own, or the agent's. */
export function durableOf(agent: AgentBase, options: object): DurableOptions | undefined {
  const own = (options as { durable?: unknown }).durable;
  if (own !== undefined) return checkDurable(agent.name, own);
  return agent[DURABLE];
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
