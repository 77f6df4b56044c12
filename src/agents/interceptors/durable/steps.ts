import { hash } from 'node:crypto';
import { currentFrame, type DurableScope } from '../../../core/call-context';
import type { Steps } from '../../../core/steps';
import { ActionReturn } from '../../../schema/action-return';
import type { OpenAITool } from '../../../schema/chat-message';
import { NonDeterminismError } from '../../../schema/errors';
import { ActionStatusCode } from '../../../schema/status';
import { isThenable } from '../../../utils/is';
import type { CallUsage, Meter } from '../budget/meter';
import { SPAN } from '../slots';

/*
 * The steps of durable calls (see journal.ts for how a call opens and replays its journal, index.ts for the
 * interceptor):
 * a model call or a tool call made inside a durable call is a step with a key, its place in the tree of
 * calls (`r.0`, `r.1.3`: the 4th step of the call that was the root's 2nd). A deterministic `forward` gives
 * every step the same key on every run, parallel branches included: keys are taken when a step starts, and
 * steps start in program order. A recorded step returns its result; a tool step is recorded when it starts
 * and when it ends, so a replay knows a tool that was running when the process died.
 *
 * Every write is fenced by the session's lease (the store refuses it once another process took the lease),
 * and every step first checks that the lease was not lost: a call whose lease another process took never
 * records a step, and never starts a tool, after that.
 */

/** What fences a journal write: the owner of one acquisition of the session's lease (see the stores). */
export interface StepFence {
  readonly owner: string;
  readonly leaseMs: number;
}

/** A call's hold on a session's lease, as the steps see it: its fence, and why it was lost if it was. */
export interface StepHold {
  readonly fence: StepFence;
  readonly lost: Error | undefined;
}

/** What a journal is written to: the journal part of a session store. */
export interface JournalStore {
  appendJournal(
    namespace: string,
    sessionId: string,
    callId: string,
    data: unknown,
    fence?: StepFence,
  ): unknown;
}

/** A journal entry as written. */
export interface StepEntry {
  key: string;
  kind: 'begin' | 'model' | 'tool' | 'started' | 'resume' | 'interrupted' | 'retry' | 'end';
  name: string;
  digest: string;
  result?: unknown;
  /** What the call had spent when the step was recorded (budgeted calls): a replay counts it again. */
  spent?: CallUsage | undefined;
  /**
   * The version of the call's stored session when it began (or was resumed), when it has one: its turn is
   * committed at that version, so a replay never commits over turns made since.
   */
  version?: number | undefined;
}

/** The first entry of a journal: what the call was given and where each memory stood. */
export interface BeginEntry extends StepEntry {
  kind: 'begin';
  result: {
    inputs: unknown[];
    lengths: Record<string, number>;
    /** The call's own `budget`, which a replay (recover, resume, retry) keeps. */
    budget?: object | undefined;
    /** The call's `clientTools` (checked), which a replay given none keeps. */
    clientTools?: readonly OpenAITool[] | undefined;
  };
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
  /** How many resume messages the call was given. */
  resumes = 0;
  /** The version of the stored session this run of the call commits at (see {@link StepEntry.version}). */
  version: number | undefined = undefined;
  begin: BeginEntry | undefined;
  /** The lease the journal's writes are fenced by. */
  hold: StepHold | undefined = undefined;
  /** Another lease the call holds (its session's turns, in another store or namespace): checked as well. */
  alsoHeld: StepHold | undefined = undefined;
  /**
   * The budget's meter of the call, when it has a budget of its own: steps record what was spent, replays count
   * it again (set by the durable interceptor: the budget concern makes the meter inside it).
   */
  meterOf: (() => Meter | undefined) | undefined = undefined;
  /** Puts back what a replay took out of the memories (its call failed): set by the replay. */
  undo: (() => void) | undefined = undefined;

  constructor(
    readonly store: JournalStore,
    readonly namespace: string,
    readonly sessionId: string,
    readonly callId: string,
  ) {}

  /** Loads a stored journal's entries (outcome and pause marks are not steps). */
  load(stored: { entries: readonly { data: unknown }[] }): void {
    for (const { data } of stored.entries) {
      const entry = data as StepEntry;
      const kind = entry.kind;
      if (kind === 'begin') {
        this.begin = entry as BeginEntry;
        this.version = entry.version;
      } else if (kind === 'started') this.started.add(entry.key);
      else if (kind === 'resume') {
        this.decisions.push(...(entry.result as unknown[]));
        this.resumes++;
        this.version = entry.version;
      } else if (kind === 'model' || kind === 'tool') this.done.set(entry.key, entry);
    }
  }

  /** Throws why the call's lease was lost, if it was: the call takes no further step. */
  check(): void {
    const lost = this.hold?.lost ?? this.alsoHeld?.lost;
    if (lost !== undefined) throw lost;
  }

  /** Appends an entry, fenced by the lease: a value for sync stores, a promise for async ones. */
  write(entry: StepEntry): unknown {
    this.check();
    return this.store.appendJournal(this.namespace, this.sessionId, this.callId, entry, this.hold?.fence);
  }

  /** What the call has spent so far, for a step's entry (budgeted calls only). */
  spent(): CallUsage | undefined {
    return this.meterOf?.()?.usage();
  }

  /** The recorded result of the step at `key`, checked against what runs now; undefined when none. */
  recorded(key: string, kind: StepEntry['kind'], name: string, digest: string): StepEntry | undefined {
    this.check();
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
    if (entry.spent !== undefined) {
      const meter = this.meterOf?.();
      if (meter !== undefined) charge(meter, entry.spent);
    }
    return entry;
  }
}

/** A replayed step: the meter counts what had been spent up to it (what it has not counted yet). */
function charge(meter: Meter, spent: CallUsage): void {
  const now = meter.spent;
  const more: Partial<CallUsage> = {
    promptTokens: Math.max(0, spent.promptTokens - now.promptTokens),
    completionTokens: Math.max(0, spent.completionTokens - now.completionTokens),
    modelCalls: Math.max(0, spent.modelCalls - now.modelCalls),
    toolCalls: Math.max(0, spent.toolCalls - now.toolCalls),
    usd: Math.max(0, spent.usd - now.usd),
  };
  more.totalTokens = more.promptTokens! + more.completionTokens!;
  meter.add(more);
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
  currentFrame()?.find(SPAN)?.addEvent?.('lagent.step.replayed', {
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
    const journal = journalOf(scope);
    const spent = journal.spent();
    const written = journal.write({ key, kind: 'model', name, digest, result: value, spent });
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
  // Written before the tool runs, and fenced: a call whose lease another process took never starts it.
  yield* settled(journal.write({ key, kind: 'started', name: tool.name, digest }));
  const result = yield* tool.run();
  const spent = journal.spent();
  yield* settled(
    journal.write({ key, kind: 'tool', name: tool.name, digest, result: result.toJSON(), spent }),
  );
  return result;
}

/** A store result as a step: a promise goes through the driver. */
export function* settled(value: unknown): Steps<unknown> {
  return isThenable(value) ? yield value : value;
}
