import { unwatchAbort, watchAbort } from '../../../core/abort-watch';
import type { Steps } from '../../../core/steps';
import type { AgentMessage } from '../../../schema/agent-message';
import { ConfigurationError, TimeoutError } from '../../../schema/errors';
import { isThenable } from '../../../utils/is';
import type { Turn } from '../../lifecycle/turn';
import { AGENT } from '../chain-bits';
import type { BuiltinConcern } from '../concern';

/*
 * A per-call deadline: `agent.call(input, { timeoutMs })` ends the call with a `TimeoutError` when it has not
 * finished within that many milliseconds, however deep it is (a model request, a tool, a sub-agent, a lease it
 * waits for): the call's signal aborts with the error, so everything made inside it stops, and what the call
 * waits for ends at once even when it does not listen to the signal. The call is taken back, as every failed
 * call is. The timer starts when the call begins (after it waited for its session's earlier calls).
 */

/** The `timeoutMs` call option, checked. */
function timeoutOf(turn: Turn): number {
  const value = turn.given.timeoutMs;
  if (!(typeof value === 'number' && value > 0 && Number.isFinite(value))) {
    throw new ConfigurationError({
      message: `${turn.agent.name}: timeoutMs must be a positive number of milliseconds, got ${String(value)}`,
    });
  }
  return value;
}

const interceptor = {
  name: 'timeout',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const timeoutMs = timeoutOf(turn);
    const signal = turn.cancellable();
    const error = new TimeoutError({
      timeoutMs,
      message: `${turn.agent.name}.call timed out after ${timeoutMs} ms`,
    });
    const timer = setTimeout(() => turn.stop(error), timeoutMs);
    try {
      const steps = next();
      let step = steps.next();
      while (!step.done) {
        let value = step.value;
        // What the call waits for ends at the deadline, whether it listens to the signal or not.
        if (isThenable(value)) value = untilAborted(value, signal);
        let input: unknown;
        try {
          input = yield value;
        } catch (thrown) {
          step = steps.throw(thrown);
          continue;
        }
        step = steps.next(input);
      }
      return step.value;
    } catch (thrown) {
      throw signal.aborted && signal.reason === error ? error : thrown;
    } finally {
      clearTimeout(timer);
    }
  },
};

/** `waiting`, or the signal's reason once it aborts, whichever comes first. */
function untilAborted<T>(waiting: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) {
      Promise.resolve(waiting).then(undefined, () => {});
      return onAbort();
    }
    watchAbort(signal, onAbort);
    Promise.resolve(waiting).then(
      (value) => {
        unwatchAbort(signal, onAbort);
        resolve(value);
      },
      (reason: unknown) => {
        unwatchAbort(signal, onAbort);
        reject(reason);
      },
    );
  });
}

export const timeout: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  static: () => 0,
  callOptions: ['timeoutMs'],
  perCall: (turn) => (turn.given.timeoutMs !== undefined ? AGENT : 0),
};
