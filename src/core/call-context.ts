import { AsyncLocalStorage } from 'node:async_hooks';
import type { SessionKey } from '../schema/session';
import { unwatchAbort, watchAbort } from './abort-watch';
import { type ChainLink, type Slot, type SlotHolder, slot } from './interceptors';

/** A memory that a failed call can take its messages back from (structurally: `Memory`). */
export interface Retractable<M = unknown> {
  remove(messages: readonly M[]): void;
}

/** Messages one call added to one memory. */
export interface JournalEntry<M = unknown> {
  memory: Retractable<M>;
  messages: M[];
}

/**
 * One agent call in progress, as seen by the calls made inside it: the abort signal they inherit, the journal
 * of memory additions made by the sub-calls that already succeeded (so a failure of this call can take them
 * back too), its concerns' state (slots: see `interceptors.ts`) and the hooks in force for tool calls made
 * inside it.
 */
export interface CallFrame extends SlotHolder {
  readonly parent: CallFrame | undefined;
  /** Who is running: the owner object (an agent) and the session key, to refuse self-waiting calls. */
  readonly owner: object;
  readonly sessionKey: SessionKey;
  /** The call's effective signal: its own combined with every enclosing call's. */
  readonly signal: AbortSignal | undefined;
  /** Additions of finished sub-calls, oldest first; created on first use. */
  journal: JournalEntry[] | undefined;
  /** Set when the call failed and took its turns back: sub-calls finishing later take theirs back too. */
  failed: boolean;
  /** The hooks tool calls made inside this call go through: its concerns', then users' interceptors. */
  readonly toolLinks: readonly ChainLink[];
}

/** A durable call's journal, and where a call stands in it: its key and the number of its next step. */
export interface DurableScope {
  readonly journal: object;
  readonly key: string;
  next: number;
}

/**
 * What keeps the work made inside a call in program order (a durable journal): a unit of work (an executor
 * called by a `forward`) takes its place when it is made, before it awaits anything, so units made at once keep
 * their places whatever order they finish in (internal).
 */
export interface Places {
  reserve(): unknown;
}

/** Where a call keeps its {@link Places}. */
export const PLACES: Slot<Places> = slot('places');

const storage = new AsyncLocalStorage<CallFrame>();

/** The innermost agent call running here (sync code, promise continuations and streams alike). */
export function currentFrame(): CallFrame | undefined {
  return storage.getStore();
}

/** Runs `fn` as part of `frame`: calls made inside it (now or in its continuations) see the frame. */
export function runInFrame<T>(frame: CallFrame, fn: () => T): T {
  return storage.run(frame, fn);
}

/**
 * `signal` combined with the inherited one: either aborts the result. Returns one of them as it is when
 * the other is missing or the same, so the common cases allocate nothing.
 */
export function combineSignals(
  own: AbortSignal | undefined,
  inherited: AbortSignal | undefined,
): AbortSignal | undefined {
  if (inherited === undefined || inherited === own) return own;
  if (own === undefined || follows(inherited, own)) return inherited;
  if (follows(own, inherited)) return own;
  return AbortSignal.any([own, inherited]);
}

/** Where a {@link followingSignal} keeps the signal it follows (a property of ours, cheaper than a WeakMap). */
const FOLLOWS: unique symbol = Symbol('lagent-ts.follows');

type Following = AbortSignal & { [FOLLOWS]?: AbortSignal };

/** True when `signal` aborts whenever `other` does: it follows it (through any number of steps). */
function follows(signal: AbortSignal, other: AbortSignal): boolean {
  for (let current = (signal as Following)[FOLLOWS]; current !== undefined; ) {
    if (current === other) return true;
    current = (current as Following)[FOLLOWS];
  }
  return false;
}

/** What aborts a following controller, kept on its signal so that {@link stopFollowing} finds it. */
const ABORTS: unique symbol = Symbol('lagent-ts.aborts');

type Follower = AbortSignal & { [ABORTS]?: () => void };

/**
 * A controller of its own whose signal aborts when `base` does (with its reason), until
 * {@link stopFollowing}: a call's cancellation, which its failure can abort without aborting its caller.
 * Cheaper than `AbortSignal.any`, and {@link combineSignals} knows the result already follows `base`.
 */
export function followingSignal(base: AbortSignal | undefined): AbortController {
  const controller = new AbortController();
  if (base === undefined) return controller;
  (controller.signal as Following)[FOLLOWS] = base;
  if (base.aborted) {
    controller.abort(base.reason);
    return controller;
  }
  const abort = () => controller.abort(base.reason);
  (controller.signal as Follower)[ABORTS] = abort;
  watchAbort(base, abort);
  return controller;
}

/** The call is over: its controller no longer follows the signal it followed (which keeps nothing of ours). */
export function stopFollowing(controller: AbortController): void {
  const signal = controller.signal as Following & Follower;
  const abort = signal[ABORTS];
  if (abort !== undefined) unwatchAbort(signal[FOLLOWS]!, abort);
}

/** The caller's signal merged with the inherited one: what a tool or sub-call made here should obey. */
export function effectiveSignal(own: AbortSignal | undefined): AbortSignal | undefined {
  return combineSignals(own, storage.getStore()?.signal);
}

/** True when `owner` is already running a call on `sessionKey` in this chain of calls. */
export function isRunningIn(frame: CallFrame | undefined, owner: object, sessionKey: SessionKey): boolean {
  for (let current = frame; current !== undefined; current = current.parent) {
    if (current.owner === owner && current.sessionKey === sessionKey) return true;
  }
  return false;
}

/** Records messages a finished call added, in its parent's journal, so the parent can take them back. */
export function journal(frame: CallFrame, entry: JournalEntry): void {
  if (frame.journal === undefined) frame.journal = [entry];
  else frame.journal.push(entry);
}

/** Takes back every addition in a journal, newest first. */
export function retract(entries: readonly JournalEntry[] | undefined): void {
  if (entries === undefined) return;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    entry.memory.remove(entry.messages);
  }
}

/**
 * Wraps a stream so that each step of it runs inside `frame`: the code of a streaming `forward` runs when
 * its consumer pulls, which is outside the call's frame otherwise.
 */
export function streamInFrame<T>(
  frame: CallFrame,
  stream: Iterator<T> | AsyncIterator<T>,
): Iterator<T> | AsyncIterator<T> {
  const wrapped = {
    next: (value?: unknown) => storage.run(frame, () => stream.next(value as never)),
    return: (value?: unknown) =>
      stream.return ? storage.run(frame, () => stream.return!(value as never)) : { done: true, value },
    throw: (error?: unknown) => {
      if (!stream.throw) throw error;
      return storage.run(frame, () => stream.throw!(error));
    },
  };
  const key = Symbol.asyncIterator in stream ? Symbol.asyncIterator : Symbol.iterator;
  return Object.assign(wrapped, {
    [key]() {
      return this;
    },
  }) as Iterator<T> | AsyncIterator<T>;
}

/** The outermost call of this chain (the agent that was called from outside any call). */
export function rootFrame(frame: CallFrame | undefined): CallFrame | undefined {
  let current = frame;
  while (current?.parent !== undefined) current = current.parent;
  return current;
}
