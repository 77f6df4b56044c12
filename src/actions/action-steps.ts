import { currentFrame } from '../core/call-context';
import { runChain } from '../core/interceptors';
import { PromiseInSyncCall, type Steps } from '../core/steps';
import { ActionReturn } from '../schema/action-return';
import { BudgetExceededError, GuardrailTripped, TimeoutError } from '../schema/errors';
import { InterruptSignal } from '../schema/interrupts';
import { ActionStatusCode } from '../schema/status';
import { isThenable } from '../utils/is';
import { thrownText } from '../utils/text';
import { type ArgumentRules, type CheckedArguments, checkArguments } from './arguments';
import type { ApiSchemaInfo } from './describe';
import { toActionReturn } from './results';
import { ToolCallContext, UNMETERED } from './tool-call-context';
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
  /** The call is driven synchronously (a sync executor or action): plain hooks get values from `next`. */
  sync?: boolean | undefined;
  /**
   * The place the call's steps take in program order, when not their own (an executor called by a user's
   * `forward` takes its place when it is called: see `executeSteps` and `PLACES` in core/call-context.ts).
   */
  place?: unknown;
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

export { UNMETERED };

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

/** What a tool call made outside any agent call goes through (see {@link wrapToolCallsOutside}). */
let outside: ((label: string, call: () => Steps<ActionReturn>) => Steps<ActionReturn>) | undefined;

/**
 * Sets what a tool call made outside any agent call goes through: the tracing concern's `execute_tool` span
 * (the agents register it when they load; the concerns of agent calls are theirs alone).
 */
export function wrapToolCallsOutside(
  wrap: (label: string, call: () => Steps<ActionReturn>) => Steps<ActionReturn>,
): void {
  outside = wrap;
}

/**
 * One tool call, as steps: {@link untracedActionSteps}, through the hooks in force for tool calls inside the
 * agent call it is made in (its concerns' — durable journal, budget, guardrails, tracing — and users'
 * interceptors: `frame.toolLinks`). Outside any agent call it is traced (with a tracer registered) and nothing
 * else. The executors' built-in answers go through the chain too (journaled, traced), marked `builtin`: a budget
 * does not count them, tool guardrails do not check them.
 */
export function actionCallSteps(
  action: CallableAction,
  parameters: unknown,
  apiName: string,
  settings: CallSettings,
): Steps<ActionReturn> {
  const frame = currentFrame();
  if (frame === undefined) {
    if (outside === undefined) return untracedActionSteps(action, parameters, apiName, settings, undefined);
    return outside(apiLabel(action, apiName), () =>
      untracedActionSteps(action, parameters, apiName, settings, undefined),
    );
  }
  if (frame.toolLinks.length === 0)
    return untracedActionSteps(action, parameters, apiName, settings, undefined);
  const context = new ToolCallContext(frame, action, apiName, parameters, settings);
  return runChain(frame.toolLinks, 0, context, toolCall, settings.sync === true ? 'sync' : 'async');
}

/** The end of a tool call's chain: the call itself, with the arguments the context holds now. */
function toolCall(context: ToolCallContext): Steps<ActionReturn> {
  return untracedActionSteps(
    context.action,
    context.toolCall.arguments,
    context.api,
    context.settings,
    context,
  );
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
  context: ToolCallContext | undefined,
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
  // What the call's concerns do just before the tool runs (count it, journal that it started, ...).
  if (context !== undefined) yield* context.beforeRun();
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
