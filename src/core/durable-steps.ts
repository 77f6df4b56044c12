import { hash } from 'node:crypto';
import { ActionReturn } from '../schema/action-return';
import { NonDeterminismError } from '../schema/errors';
import { ActionStatusCode } from '../schema/status';
import { isThenable } from '../utils/is';
import { currentFrame, type DurableScope } from './call-context';
import type { Steps } from './steps';

/*
 * The steps of durable calls (see agents/lifecycle/durable.ts for how a call opens and replays its journal):
 * a model call or a tool call made inside a durable call is a step with a key, its place in the tree of
 * calls (`r.0`, `r.1.3`: the 4th step of the call that was the root's 2nd). A deterministic `forward` gives
 * every step the same key on every run, parallel branches included: keys are taken when a step starts, and
 * steps start in program order. A recorded step returns its result; a tool step is recorded when it starts
 * and when it ends, so a replay knows a tool that was running when the process died.
 */

/** What a journal is written to: the journal part of a session store. */
export interface JournalStore {
  appendJournal(namespace: string, sessionId: string, callId: string, data: unknown): unknown;
}

/** A journal entry as written. */
export interface StepEntry {
  key: string;
  kind: 'begin' | 'model' | 'tool' | 'started' | 'resume' | 'interrupt';
  name: string;
  digest: string;
  result?: unknown;
}

/** The first entry of a journal: what the call was given and where each memory stood. */
export interface BeginEntry extends StepEntry {
  kind: 'begin';
  result: { inputs: unknown[]; lengths: Record<string, number> };
}

/** One durable call's journal: what was recorded, and the writes of what happens now. */
export class CallJournal {
  readonly done = new Map<string, StepEntry>();
  /** Told of each step a replay returns from the journal (the agents layer emits it as an event). */
  onReplay: ((entry: StepEntry) => void) | undefined = undefined;
  readonly started = new Set<string>();
  /** The decisions of the resume messages the call was given, oldest first. */
  readonly decisions: unknown[] = [];
  /** Told of each step about to run live (none recorded): may refuse it by throwing (see approvals). */
  beforeLive: ((key: string, kind: StepEntry['kind'], name: string) => void) | undefined = undefined;
  begin: BeginEntry | undefined;

  constructor(
    readonly store: JournalStore,
    readonly namespace: string,
    readonly sessionId: string,
    readonly callId: string,
  ) {}

  /** Loads a stored journal's entries. */
  load(stored: { entries: readonly { data: unknown }[] }): void {
    for (const { data } of stored.entries) {
      const entry = data as StepEntry;
      if (entry.kind === 'begin') this.begin = entry as BeginEntry;
      else if (entry.kind === 'started') this.started.add(entry.key);
      else if (entry.kind === 'resume') this.decisions.push(...(entry.result as unknown[]));
      // The interrupts the call returned are for readers of the journal (pendingInterrupts), not its replay.
      else if (entry.kind !== 'interrupt') this.done.set(entry.key, entry);
    }
  }

  /** Appends an entry: a value for sync stores, a promise for async ones. */
  write(entry: StepEntry): unknown {
    return this.store.appendJournal(this.namespace, this.sessionId, this.callId, entry);
  }

  /** The recorded result of the step at `key`, checked against what runs now; undefined when none. */
  recorded(key: string, kind: StepEntry['kind'], name: string, digest: string): StepEntry | undefined {
    const entry = this.done.get(key);
    if (entry === undefined) {
      this.beforeLive?.(key, kind, name);
      return undefined;
    }
    if (entry.kind !== kind || entry.name !== name || entry.digest !== digest) {
      throw new NonDeterminismError({
        message: `call ${this.callId}: step ${key} was ${describe(entry)} when recorded, but now is ${describe({ key, kind, name, digest })}; a durable forward must make the same calls in the same order on every run`,
        callId: this.callId,
        step: key,
      });
    }
    return entry;
  }
}

function describe(entry: Pick<StepEntry, 'kind' | 'name' | 'digest'> & { key?: string }): string {
  return `a ${entry.kind} call of ${JSON.stringify(entry.name)} (input ${entry.digest.slice(0, 12)})`;
}

/** A short digest of a step's input (it tells a replay whether a step is the one recorded). */
export function digestOf(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? 'undefined';
  } catch {
    text = String(value);
  }
  return text.length > SHORT_INPUT ? hash('sha256', text, 'base64url').slice(0, 22) : shortDigest(text);
}

/** Inputs up to this many characters are digested in JavaScript, which beats a native call for them. */
const SHORT_INPUT = 1_024;

/** A 64-bit mix of the text's UTF-16 units (cyrb53's), with its length: not a cryptographic hash. */
function shortDigest(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ unit, 2654435761);
    h2 = Math.imul(h2 ^ unit, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `${text.length.toString(36)}-${(h2 >>> 0).toString(36)}-${(h1 >>> 0).toString(36)}`;
}

/** A step returned from the journal: an event of the call's span (when tracing) and the journal's listener. */
export function replayed(scope: DurableScope, entry: StepEntry): void {
  currentFrame()?.span?.addEvent?.('lagent.step.replayed', {
    'lagent.step.key': entry.key,
    'lagent.step.kind': entry.kind,
    'lagent.step.name': entry.name,
  });
  (scope.journal as CallJournal).onReplay?.(entry);
}

/** The key of the next step of `scope`. */
export function nextKey(scope: DurableScope): string {
  return `${scope.key}.${scope.next++}`;
}

/** A scope for a sub-call's frame, inside `parent`. */
export function childScope(parent: DurableScope): DurableScope {
  return { journal: parent.journal, key: nextKey(parent), next: 0 };
}

/** The journal of a scope. */
function journalOf(scope: DurableScope): CallJournal {
  return scope.journal as CallJournal;
}

/**
 * A model step: the recorded answer, or `ask()`'s answer recorded. `ask` returns a value or a promise
 * (what the built-in forward's model call gives).
 */
export function modelStep(scope: DurableScope, name: string, input: unknown, ask: () => unknown): unknown {
  const key = nextKey(scope);
  const digest = digestOf(input);
  const entry = journalOf(scope).recorded(key, 'model', name, digest);
  if (entry !== undefined) {
    replayed(scope, entry);
    return entry.result;
  }
  const answer = ask();
  const record = (value: unknown) => {
    const written = journalOf(scope).write({ key, kind: 'model', name, digest, result: value });
    return isThenable(written) ? written.then(() => value) : value;
  };
  return isThenable(answer) ? answer.then(record) : record(answer);
}

/** What a tool step needs to run the tool. */
export interface ToolRun {
  name: string;
  input: unknown;
  retrySafe: boolean;
  run(): Steps<ActionReturn>;
}

/** A tool step: the recorded result, or the tool run once with its start and result recorded. */
export function* toolStep(scope: DurableScope, tool: ToolRun): Steps<ActionReturn> {
  const key = nextKey(scope);
  const digest = digestOf(tool.input);
  const journal = journalOf(scope);
  const entry = journal.recorded(key, 'tool', tool.name, digest);
  if (entry !== undefined) {
    replayed(scope, entry);
    return ActionReturn.from(entry.result);
  }
  if (journal.started.has(key) && !tool.retrySafe) {
    const result = new ActionReturn({
      args: tool.input as Record<string, unknown>,
      type: tool.name,
      errmsg: `${tool.name} was running when the process stopped, and its outcome is unknown (it is not marked retrySafe, so it was not run again). Check before calling it again.`,
      state: ActionStatusCode.API_ERROR,
    });
    yield* settled(journal.write({ key, kind: 'tool', name: tool.name, digest, result: result.toJSON() }));
    return result;
  }
  yield* settled(journal.write({ key, kind: 'started', name: tool.name, digest }));
  const result = yield* tool.run();
  yield* settled(journal.write({ key, kind: 'tool', name: tool.name, digest, result: result.toJSON() }));
  return result;
}

/** A store result as a step: a promise goes through the driver. */
export function* settled(value: unknown): Steps<unknown> {
  return isThenable(value) ? yield value : value;
}
