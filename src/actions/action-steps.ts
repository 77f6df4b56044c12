import type { Meter } from '../core/budget';
import { type CallFrame, currentFrame, type DurableScope } from '../core/call-context';
import { toolStep } from '../core/durable-steps';
import { CheckContext, type GuardSpec, runCheck, toolCallMessage } from '../core/guards';
import { PromiseInSyncCall, type Steps } from '../core/steps';
import { activeTracer, endSpan, startToolSpan } from '../core/tracing';
import { ActionReturn } from '../schema/action-return';
import { BudgetExceededError, GuardrailTripped, TimeoutError } from '../schema/errors';
import { InterruptSignal } from '../schema/interrupts';
import { ActionStatusCode } from '../schema/status';
import { isThenable } from '../utils/is';
import { thrownText } from '../utils/text';
import { type ArgumentRules, type CheckedArguments, checkArguments } from './arguments';
import type { ApiSchemaInfo } from './describe';
import { toActionReturn } from './results';
import type { ApprovalRule, ToolContext } from './types';

/** One API of an action, resolved when the action is built. */
export interface ResolvedApi extends ArgumentRules {
  readonly name: string;
  /** The Lagent description, JSON Schema and signature derived from the schema. */
  readonly info: ApiSchemaInfo;
  readonly run: (args: Record<string, unknown>, context: ToolContext) => unknown;
  /** Whether a call must be approved first (see `ToolApiSpec.needsApproval`). */
  readonly needsApproval?: ApprovalRule<any> | undefined;
  /** Whether a call may run twice (see `ToolApiSpec.retrySafe`). */
  readonly retrySafe?: boolean | undefined;
}

/** What the shared call steps need from an action. */
export interface CallableAction {
  readonly name: string;
  readonly isToolkit: boolean;
  readonly apis: ReadonlyMap<string, ResolvedApi>;
}

/** Per-call settings of the call steps. */
export interface CallSettings {
  context: ToolContext;
  /** The caller's signal: when it is aborted the call rejects instead of returning an error. */
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  /** Aborted on timeout so the tool can stop; its signal is `context.signal`. */
  controller?: AbortController | undefined;
  /**
   * Where the calls' steps go in a durable journal, when not the frame's own scope: an executor called by a
   * user's `forward` takes its place when it is called (see `executeSteps`).
   */
  scope?: DurableScope | undefined;
}

/**
 * The next key of `scope`, taken now, as a scope of its own whose next key is that one: a step that awaits
 * something before it journals (a check) keeps the key of its place in program order.
 */
export function reserveStep(scope: DurableScope): DurableScope {
  return { journal: scope.journal, key: scope.key, next: scope.next++ };
}

function isPromiseInSyncCall(error: unknown): boolean {
  try {
    return error instanceof PromiseInSyncCall;
  } catch {
    return false; // a Proxy whose getPrototypeOf trap throws
  }
}

/**
 * True for what a tool call passes on rather than answering as an error result: a sub-agent's question for a
 * person, a budget passed, a guardrail tripped (each ends the whole call, not just the tool's).
 */
function escapes(error: unknown): boolean {
  try {
    return (
      error instanceof InterruptSignal ||
      error instanceof BudgetExceededError ||
      error instanceof GuardrailTripped
    );
  } catch {
    return false; // a Proxy whose getPrototypeOf trap throws
  }
}

/** Marks an action whose calls are not tool calls of a budget (the executors' built-in answers). */
export const UNMETERED: unique symbol = Symbol('lagent-ts.unmetered');

/** The name a model uses for an API: `Name` for a simple tool, `Name.api` for a toolkit's. */
export function apiLabel(action: CallableAction, api: string): string {
  return action.isToolkit || api !== 'run' ? `${action.name}.${api}` : action.name;
}

/**
 * Settles with the tool's promise, or rejects with a `TimeoutError` after `timeoutMs`, or with the caller's
 * abort reason, whichever comes first. Timers and listeners are released when it settles.
 */
function withDeadline<T>(promise: PromiseLike<T>, settings: CallSettings, label: string): Promise<T> {
  const { signal, timeoutMs, controller } = settings;
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      cleanup();
      controller?.abort(signal?.reason);
      reject(signal?.reason);
    };
    const cleanup = () => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        cleanup();
        const error = new TimeoutError({ timeoutMs, message: `${label} timed out after ${timeoutMs} ms` });
        controller?.abort(error);
        reject(error);
      }, timeoutMs);
    }
    if (signal) {
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
    }
    promise.then(
      (value) => {
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        cleanup();
        reject(error);
      },
    );
  });
}

/**
 * One tool call, as steps: {@link untracedActionSteps}, inside an `execute_tool` span when tracing is on
 * (a tool that answers with an error marks its span failed). Without tracing it adds nothing.
 */
export function actionCallSteps(
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
): Steps<ActionReturn> {
  const frame = currentFrame();
  const scope = settings.scope ?? frame?.durable;
  // The executors' built-in answers are neither counted by a budget nor checked by tool guardrails.
  const builtin = (action as { [UNMETERED]?: boolean })[UNMETERED] === true;
  const meter = builtin ? undefined : frame?.meter;
  const guards = builtin ? undefined : frame?.toolGuards;
  if (guards !== undefined)
    return guardedActionSteps(guards, frame!, scope, action, parameters, apiName, settings, meter);
  return journaledActionSteps(scope, action, parameters, apiName, settings, meter);
}

/** A tool call: a journaled step inside a durable call, else as it is. */
function journaledActionSteps(
  scope: DurableScope | undefined,
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
  meter: Meter | undefined,
): Steps<ActionReturn> {
  return scope !== undefined
    ? durableActionSteps(scope, action, parameters, apiName, settings, meter)
    : plainActionSteps(action, parameters, apiName, settings, meter);
}

/** A tool call without a journal: traced when tracing is on. */
function plainActionSteps(
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
  meter: Meter | undefined,
): Steps<ActionReturn> {
  const tracer = activeTracer();
  return tracer === undefined
    ? untracedActionSteps(action, parameters, apiName, settings, meter)
    : tracedActionSteps(tracer, action, parameters, apiName, settings, meter);
}

/** A tool call checked first by the tool guardrails of the calls it is made in: a trip fails the whole call. */
function* guardedActionSteps(
  guards: readonly GuardSpec[],
  frame: CallFrame,
  scope: DurableScope | undefined,
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
  meter: Meter | undefined,
): Steps<ActionReturn> {
  // The call's journal key is taken now, in program order: the checks of calls run at once may answer in
  // any order, and a replay must find each call under the key it had.
  const own = scope === undefined ? undefined : reserveStep(scope);
  const toolCall = { name: apiLabel(action, apiName), arguments: parameters };
  const owner = (frame.owner as { name?: unknown }).name;
  const name = typeof owner === 'string' ? owner : action.name;
  const message = toolCallMessage(name, toolCall);
  const signal = settings.signal ?? frame.signal;
  for (const guard of guards) {
    const verdict = runCheck(
      guard,
      message,
      new CheckContext(name, frame.sessionKey, 'tool', signal, toolCall),
    );
    if (verdict !== undefined) yield verdict;
  }
  return yield* journaledActionSteps(own, action, parameters, apiName, settings, meter);
}

/** A tool call inside a durable call: a journaled step (see core/durable-steps.ts). */
function durableActionSteps(
  scope: DurableScope,
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
  meter: Meter | undefined,
): Steps<ActionReturn> {
  return toolStep(scope, {
    name: apiLabel(action, apiName),
    input: parameters,
    retrySafe: action.apis.get(apiName)?.retrySafe === true,
    run: () => plainActionSteps(action, parameters, apiName, settings, meter),
  });
}

function* tracedActionSteps(
  tracer: NonNullable<ReturnType<typeof activeTracer>>,
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
  meter: Meter | undefined,
): Steps<ActionReturn> {
  const span = startToolSpan(tracer, apiLabel(action, apiName), undefined, currentFrame()?.span);
  let result: ActionReturn;
  try {
    result = yield* untracedActionSteps(action, parameters, apiName, settings, meter);
  } catch (error) {
    endSpan(span, error);
    throw error;
  }
  endSpan(
    span,
    result.state === ActionStatusCode.SUCCESS
      ? undefined
      : new Error(result.errmsg ?? `state ${result.state}`),
  );
  return result;
}

/**
 * One tool call, written once for sync and async actions: look up the API, check the arguments, run it,
 * and turn its output (or what it threw) into an {@link ActionReturn}. Yields only a promise to await.
 * Nothing the tool throws escapes; only the caller's own abort does.
 */
function* untracedActionSteps(
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
  meter?: Meter | undefined,
): Steps<ActionReturn> {
  if (settings.signal?.aborted) throw settings.signal.reason;
  const api = action.apis.get(apiName);
  if (!api) {
    const known = [...action.apis.keys()].join(', ');
    return new ActionReturn({
      args: { inputs: parameters as unknown, name: apiName },
      type: action.name,
      errmsg: `invalid API: ${action.name} has no API "${apiName}" (it has: ${known})`,
      state: ActionStatusCode.API_ERROR,
    });
  }
  const label = apiLabel(action, apiName);
  let checked: CheckedArguments;
  try {
    checked = checkArguments(api, parameters, label);
  } catch (error) {
    checked = {
      ok: false,
      errmsg: `Invalid arguments for ${label}: they could not be read (${thrownText(error, 'reading them')}).`,
    };
  }
  if (!checked.ok) {
    return new ActionReturn({
      args: { inputs: parameters, name: apiName },
      type: action.name,
      errmsg: checked.errmsg,
      state: ActionStatusCode.ARGS_ERROR,
    });
  }
  // A call past the budget is not made: the whole call fails.
  meter?.beginTool();
  let output: unknown;
  try {
    output = api.run(checked.args, settings.context);
  } catch (error) {
    return failedCall(error, action, label, checked.input, settings);
  }
  let thenable = false;
  try {
    thenable = isThenable(output);
  } catch {
    // An output that cannot even be inspected is reported by toActionReturn.
  }
  if (thenable) {
    const promise = output as PromiseLike<unknown>;
    try {
      output = yield settings.timeoutMs !== undefined || settings.signal
        ? withDeadline(promise, settings, label)
        : promise;
    } catch (error) {
      return failedCall(error, action, label, checked.input, settings);
    }
  }
  return toActionReturn(output, checked.input, action.name, label);
}

/**
 * The result of a call whose tool threw or rejected; the caller's own abort is thrown instead. (A function
 * rather than a closure in the steps: every call would make one.)
 */
function failedCall(
  error: unknown,
  action: CallableAction,
  label: string,
  input: Record<string, unknown>,
  settings: CallSettings,
): ActionReturn {
  if (settings.signal?.aborted) throw settings.signal.reason;
  // A sub-agent run by the tool stopped to ask a person: the question goes up to the outermost call.
  if (escapes(error)) throw error;
  const message = isPromiseInSyncCall(error)
    ? `${label} returned a Promise, which a synchronous call cannot wait for; declare it with asyncTool() / AsyncBaseAction and use an AsyncActionExecutor`
    : thrownText(error, `the tool ${label}`);
  return new ActionReturn({
    args: input,
    type: action.name,
    errmsg: message,
    state: ActionStatusCode.API_ERROR,
  });
}
