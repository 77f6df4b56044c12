import { AgentMessage } from '../schema/agent-message';
import { GuardrailTripped, HookError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { isThenable } from '../utils/is';
import { thrownText } from '../utils/text';
import { PromiseInSyncCall, type Steps } from './steps';

/** The four points where a hook may step in. */
export type HookStage = HookError['stage'];

/** What the step needs of a hook: an object with (some of) the four stage methods. */
export type HookLike = { readonly [S in HookStage]?: unknown };

/** The name to show for a hook in errors: `hookName`, else its class name. */
export function hookNameOf(hook: object): string {
  const named = (hook as { hookName?: unknown }).hookName;
  return typeof named === 'string' ? named : (hook.constructor?.name ?? 'hook');
}

function isTrip(error: unknown): boolean {
  try {
    return error instanceof GuardrailTripped;
  } catch {
    return false; // a Proxy whose getPrototypeOf trap throws: not ours
  }
}

/** The HookError for what a hook threw; building it never throws, whatever was thrown. */
function hookError(error: unknown, hook: object, stage: HookStage): HookError {
  let hookName: string;
  try {
    hookName = hookNameOf(hook);
  } catch {
    hookName = 'hook';
  }
  let promiseInSync = false;
  try {
    promiseInSync = error instanceof PromiseInSyncCall;
  } catch {
    // a Proxy whose getPrototypeOf trap throws: not ours
  }
  const reason = promiseInSync
    ? 'it returned a Promise, which a synchronous agent or executor cannot wait for (use the Async variant)'
    : thrownText(error, 'it');
  return new HookError({
    hookName,
    stage,
    message: `hook ${hookName}.${stage} failed: ${reason}`,
    cause: error,
  });
}

/**
 * Calls one hook method as a lifecycle step (agents and executors share it): a promise it returns is
 * yielded to the driver, a failure becomes a {@link HookError} naming the hook and the stage, and the
 * result must be what the stage allows (messages for `beforeAgent`, one message otherwise) or nothing.
 */
export function* hookStep<T extends AgentMessage | AgentMessage[]>(
  hook: HookLike,
  stage: HookStage,
  target: unknown,
  payload: T,
  sessionId: SessionId,
): Steps<T | undefined> {
  let result: unknown;
  try {
    result = (hook[stage] as (target: unknown, payload: T, sessionId: SessionId) => unknown).call(
      hook,
      target,
      payload,
      sessionId,
    );
    if (isThenable(result)) result = yield result;
  } catch (error) {
    // A guardrail's trip is the call's failure, not the hook's.
    if (isTrip(error)) throw error;
    throw hookError(error, hook, stage);
  }
  if (!result) return undefined;
  const valid =
    stage === 'beforeAgent'
      ? Array.isArray(result) && result.every((item) => item instanceof AgentMessage)
      : result instanceof AgentMessage;
  if (!valid) {
    const hookName = hookNameOf(hook);
    const expected = stage === 'beforeAgent' ? 'AgentMessage[]' : 'an AgentMessage';
    throw new HookError({
      hookName,
      stage,
      message: `hook ${hookName}.${stage} must return ${expected} or nothing`,
    });
  }
  return result as T;
}
