import { ConfigurationError } from '../schema/errors';
import { isThenable } from '../utils/is';

/**
 * Lifecycles that have a sync and an async variant (agent calls, tool calls, executor calls) are written
 * once, as generators that `yield` only when a step produced a promise (or, for agents, a stream). A
 * driver decides what that means: the sync one refuses it, the async one awaits it.
 */
export type Steps<T> = Generator<unknown, T, unknown>;

/**
 * Thrown into the steps by {@link driveSync} when a step produced a promise. The steps turn it into a
 * message for whoever wrote the async part (a `HookError`, a tool's `API_ERROR`).
 */
export class PromiseInSyncCall extends ConfigurationError {
  override readonly name: string = 'PromiseInSyncCall';
}

/** Raised when a non-streaming variant meets a stream it cannot relay. */
export function streamNotAllowed(): ConfigurationError {
  return new ConfigurationError({
    message:
      'got a stream inside a non-streaming agent (a streaming forward or sub-agent?); use a Streaming variant',
  });
}

/** What the sync drivers throw into the steps for a promise; the promise's own rejection is silenced. */
export function promiseNotAllowed(value: PromiseLike<unknown>): PromiseInSyncCall {
  Promise.resolve(value).catch(() => {});
  return new PromiseInSyncCall({
    message:
      'got a Promise inside a synchronous call (an async hook, tool, forward or sub-agent?); use the Async variant',
  });
}

/** Runs steps synchronously; anything that would need awaiting or relaying is refused. */
export function driveSync<T>(steps: Steps<T>): T {
  let step = steps.next();
  while (!step.done) {
    const value = step.value;
    step = steps.throw(isThenable(value) ? promiseNotAllowed(value) : streamNotAllowed());
  }
  return step.value;
}

/**
 * Runs steps, awaiting the promises they yield. `started` continues steps whose first step was already
 * taken (e.g. several tool calls started in turn, then awaited together).
 *
 * Most steps yield one promise (an agent's model call, a tool's run): that one is followed with a single
 * `then`, whose promise is the result. Only steps that yield again continue in an async loop. An agent
 * call in flight thus holds one promise reaction instead of an async function's frame and its awaits,
 * which is what 10,000 concurrent sessions keep alive at once.
 */
export function driveAsync<T>(steps: Steps<T>, started?: IteratorResult<unknown, T>): Promise<T> {
  let step: IteratorResult<unknown, T>;
  try {
    step = untilPromise(steps, started ?? steps.next());
  } catch (error) {
    return Promise.reject(error);
  }
  if (step.done) return Promise.resolve(step.value);
  return Promise.resolve(step.value).then(
    (value) => afterFirst(steps, steps.next(value)),
    (error: unknown) => afterFirst(steps, steps.throw(error)),
  );
}

/** Refuses what the async driver cannot relay (a stream) until the steps yield a promise or end. */
function untilPromise<T>(steps: Steps<T>, step: IteratorResult<unknown, T>): IteratorResult<unknown, T> {
  while (!step.done && !isThenable(step.value)) step = steps.throw(streamNotAllowed());
  return step;
}

/** After the first promise: the result when the steps ended, else the loop over the promises left. */
function afterFirst<T>(steps: Steps<T>, step: IteratorResult<unknown, T>): T | Promise<T> {
  step = untilPromise(steps, step);
  return step.done ? step.value : driveLoop(steps, step);
}

async function driveLoop<T>(steps: Steps<T>, step: IteratorResult<unknown, T>): Promise<T> {
  while (!step.done) {
    let resolved: unknown;
    try {
      resolved = await step.value;
    } catch (error) {
      step = untilPromise(steps, steps.throw(error));
      continue;
    }
    step = untilPromise(steps, steps.next(resolved));
  }
  return step.value;
}
