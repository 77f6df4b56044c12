import { unwatchAbort, watchAbort } from '../../../core/abort-watch';
import { AgentMessage } from '../../../schema/agent-message';
import { GuardrailTripped } from '../../../schema/errors';
import { isPlainObject, isThenable } from '../../../utils/is';
import { thrownText } from '../../../utils/text';

/*
 * Guardrails as the call lifecycle sees them (`guardrail()` builds them; the interceptor: index.ts). A check that returns a
 * reason (a non-empty string) trips its guardrail: the call fails with `GuardrailTripped` and is taken back.
 * Input checks run before `forward` (in parallel mode, while it runs: a trip aborts the call's signal, so the
 * model stops answering, and no tool call inside the call starts before they passed); output checks see the
 * reply, and a streaming call's chunks before each is delivered; tool checks run before every tool call made
 * inside the call, sub-agents' and remote agents' included. Every check is given the call's signal and a
 * deadline: one that does not answer in time trips (a guardrail fails closed), and a call aborted while a
 * check is pending ends with the abort's reason without waiting for it.
 */

/** Where a guardrail looks. */
export type GuardrailStage = 'input' | 'output' | 'tool';

/** What a guardrail's check returns: nothing to pass, a reason to trip (or a promise of either). */
// biome-ignore lint/suspicious/noConfusingVoidType: `void` lets checks that return nothing type-check
export type GuardrailVerdict = string | undefined | null | void;

/** How long a check may take by default before its guardrail trips, in milliseconds. */
export const DEFAULT_CHECK_TIMEOUT_MS = 30_000;

/** A guardrail, as the lifecycle runs it. */
export interface GuardSpec {
  readonly name: string;
  readonly on: GuardrailStage;
  readonly parallel: boolean;
  /** Milliseconds a check may take before the guardrail trips; `Infinity` for no limit. */
  readonly timeoutMs: number;
  check(message: unknown, context: CheckContext): GuardrailVerdict | PromiseLike<GuardrailVerdict>;
}

/** Where a hook made by `guardrail()` keeps its spec. */
export const GUARDRAIL: unique symbol = Symbol('lagent-ts.guardrail');

/** The guardrail a hook is, if it is one. */
export function guardOf(hook: unknown): GuardSpec | undefined {
  return (hook as { [GUARDRAIL]?: GuardSpec } | null | undefined)?.[GUARDRAIL];
}

/** The error of a tripped guardrail. */
export function trippedBy(guard: GuardSpec, reason: string): GuardrailTripped {
  return new GuardrailTripped({
    message: `guardrail ${guard.name} tripped on the ${guard.on}: ${reason}`,
    guardrail: guard.name,
    reason,
  });
}

function isTrip(error: unknown): boolean {
  try {
    return error instanceof GuardrailTripped;
  } catch {
    return false; // a Proxy whose getPrototypeOf trap throws: not ours
  }
}

/** A check that threw trips its guardrail; one that threw a trip (a guarded sub-call's) passes it on. */
function failedCheck(guard: GuardSpec, error: unknown): unknown {
  return isTrip(error) ? error : trippedBy(guard, `its check failed: ${thrownText(error, 'it')}`);
}

/**
 * What a check is told besides the message (the `GuardrailContext` of `guardrail()`): who is checked, the
 * session, the stage, the tool call, and a signal aborted when the call is, or when the check runs out of
 * time. The signal is made when a check first reads it, so a check that does not costs nothing.
 */
export class CheckContext {
  readonly name: string;
  readonly sessionId: unknown;
  readonly on: GuardrailStage;
  readonly toolCall: { readonly name: string; readonly arguments: unknown } | undefined;
  /** The call's signal. */
  readonly callSignal: AbortSignal | undefined;
  #controller: AbortController | undefined = undefined;
  #follow: (() => void) | undefined = undefined;

  constructor(
    name: string,
    sessionId: unknown,
    on: GuardrailStage,
    callSignal: AbortSignal | undefined,
    toolCall?: { readonly name: string; readonly arguments: unknown },
  ) {
    this.name = name;
    this.sessionId = sessionId;
    this.on = on;
    this.toolCall = toolCall;
    this.callSignal = callSignal;
  }

  /** Aborted when the call is, or when the check did not answer in time (the reason is the trip). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController();
      this.#controller = controller;
      const call = this.callSignal;
      if (call?.aborted) controller.abort(call.reason);
      else if (call !== undefined) {
        const follow = () => controller.abort(call.reason);
        this.#follow = follow;
        watchAbort(call, follow);
      }
    }
    return this.#controller.signal;
  }

  /** The check answered (or will not be waited for): stop following the call's signal. */
  release(): void {
    if (this.#follow !== undefined) {
      unwatchAbort(this.callSignal!, this.#follow);
      this.#follow = undefined;
    }
  }

  /** The check ran out of time: its signal aborts with the trip. */
  expire(trip: GuardrailTripped): void {
    this.release();
    this.#controller?.abort(trip);
  }
}

/**
 * Runs a check: throws when it tripped at once (or the call is aborted already), returns a promise for a
 * check that answers later (rejected with `GuardrailTripped` when it trips or times out, with the abort's
 * reason when the call's signal aborts first), else undefined. A check that throws trips with what it threw.
 */
export function runCheck(
  guard: GuardSpec,
  message: unknown,
  context: CheckContext,
): Promise<void> | undefined {
  const signal = context.callSignal;
  if (signal?.aborted) throw signal.reason;
  let verdict: unknown;
  try {
    verdict = guard.check(message, context);
  } catch (error) {
    context.release();
    throw failedCheck(guard, error);
  }
  if (isThenable(verdict)) return awaitVerdict(guard, verdict as PromiseLike<unknown>, context);
  context.release();
  judge(guard, verdict);
  return undefined;
}

/** The verdict of a check that answers later, within its deadline and the call's signal. */
function awaitVerdict(guard: GuardSpec, verdict: PromiseLike<unknown>, context: CheckContext): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const signal = context.callSignal;
    const timeoutMs = guard.timeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      if (signal !== undefined) unwatchAbort(signal, onAbort);
      context.release();
      return true;
    };
    const onAbort = () => {
      if (finish()) reject(signal!.reason);
    };
    if (timeoutMs !== Number.POSITIVE_INFINITY) {
      timer = setTimeout(() => {
        if (!finish()) return;
        const trip = trippedBy(guard, `its check did not answer within ${timeoutMs} ms`);
        context.expire(trip);
        reject(trip);
      }, timeoutMs);
    }
    if (signal !== undefined) {
      if (signal.aborted) {
        onAbort();
        return;
      }
      watchAbort(signal, onAbort);
    }
    const settle = (value: unknown) => {
      if (!finish()) return;
      try {
        judge(guard, value);
        resolve();
      } catch (trip) {
        reject(trip);
      }
    };
    const fail = (error: unknown) => {
      if (finish()) reject(failedCheck(guard, error));
    };
    try {
      verdict.then(settle, fail);
    } catch (error) {
      fail(error); // a thenable whose then throws
    }
  });
}

function judge(guard: GuardSpec, verdict: unknown): void {
  if (typeof verdict === 'string' && verdict !== '') throw trippedBy(guard, verdict);
}

/**
 * Runs `check` on each item: undefined when every check answered at once, else one promise of those that
 * answer later. A check that trips at once throws, and the checks already started are left to end unobserved
 * (their verdicts no longer matter).
 */
export function checkEach<T>(
  items: readonly T[],
  check: (item: T) => Promise<void> | undefined,
): Promise<void> | undefined {
  let waiting: Promise<void>[] | undefined;
  try {
    for (const item of items) {
      const pending = check(item);
      if (pending === undefined) continue;
      if (waiting === undefined) waiting = [pending];
      else waiting.push(pending);
    }
  } catch (error) {
    if (waiting !== undefined) for (const pending of waiting) pending.catch(noop);
    throw error;
  }
  if (waiting === undefined) return undefined;
  if (waiting.length === 1) return waiting[0];
  return Promise.all(waiting).then(noop);
}

function noop(): void {}

/** The message a tool guardrail checks for one call: `formatted` is `{ name, arguments }`. */
export function toolCallMessage(
  sender: string,
  toolCall: { name: string; arguments: unknown },
): AgentMessage {
  return new AgentMessage({ sender, content: JSON.stringify(toolCall), formatted: toolCall });
}

/*
 * Tool checks of a remote caller. A client whose caller has tool guardrails calls its remote agent with
 * `askBeforeTools`: that call stops before every round of tool calls it would run (an interrupt of kind
 * `'check'`, asked by the loops and executors where approvals are), and runs a round only once resumed with
 * the caller's approval of each call. A tool call that could not stop to be asked (a custom forward that runs
 * a tool directly) is refused: the caller's checks would not have seen it.
 */

/** The tool guard of a call made with `askBeforeTools`: a tool call runs only once its caller approved it. */
export class CallerChecks implements GuardSpec {
  readonly name = 'caller-checks';
  readonly on = 'tool';
  readonly parallel = false;
  readonly timeoutMs = Number.POSITIVE_INFINITY;
  /** The calls the caller approved and not yet run, by {@link toolCallKey}: each may run once. */
  readonly #approved = new Map<string, number>();

  /** The caller approved this call: it may run once. */
  approve(name: string, args: unknown): void {
    const key = toolCallKey(name, args);
    this.#approved.set(key, (this.#approved.get(key) ?? 0) + 1);
  }

  check(_message: unknown, context: CheckContext): GuardrailVerdict {
    const call = context.toolCall;
    const key = call === undefined ? undefined : toolCallKey(call.name, call.arguments);
    const left = key === undefined ? 0 : (this.#approved.get(key) ?? 0);
    if (left > 0) {
      if (left === 1) this.#approved.delete(key!);
      else this.#approved.set(key!, left - 1);
      return undefined;
    }
    return 'the caller checks every tool call (askBeforeTools), and this one could not stop to be checked (only the agent loops and executors can)';
  }
}

/** The caller's checks among a call's tool guards, when it was made with `askBeforeTools`. */
export function callerChecksIn(guards: readonly GuardSpec[] | undefined): CallerChecks | undefined {
  if (guards === undefined) return undefined;
  for (const guard of guards) if (guard instanceof CallerChecks) return guard;
  return undefined;
}

/**
 * A tool call by what it does: the tool (`Name`, `Name.api`; `Name__api` and `Name.run` read as those) and
 * its arguments (JSON text read, keys sorted), so the call a loop asked about matches the one that runs.
 */
export function toolCallKey(name: string, args: unknown): string {
  let tool = name.replace('__', '.');
  if (tool.endsWith('.run')) tool = tool.slice(0, -4);
  let value = args;
  if (typeof args === 'string') {
    const text = args.trim();
    try {
      value = text === '' ? {} : JSON.parse(text);
    } catch {
      value = args;
    }
  } else if (args === undefined) value = {};
  return `${tool}\u0000${canonicalJSON(value)}`;
}

function canonicalJSON(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(',')}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJSON(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
