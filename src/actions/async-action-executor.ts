import { driveAsync, type Steps } from '../core/steps';
import type { AsyncHook } from '../hooks/hook';
import type { ActionReturn } from '../schema/action-return';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import type { CallSettings } from './action-steps';
import { ActionBase, callSettings, checkTimeout } from './base-action';
import { type ActionExecutorOptions, ExecutorBase } from './executor-base';
import { CALL_STEPS, executeSteps, FORWARD_STEPS, isPlanned } from './executor-steps';
import type { AsyncActionCallOptions, ExecutorReply } from './types';

/** Options of {@link AsyncActionExecutor}: also a default per-call timeout for async tools. */
export interface AsyncActionExecutorOptions<H extends AsyncHook = AsyncHook>
  extends ActionExecutorOptions<ActionBase, H> {
  /** Default `timeoutMs` of every call (a call's own option wins). */
  timeoutMs?: number | undefined;
}

/**
 * The asynchronous executor: runs sync and async tools and hooks, for many sessions at once. Each call
 * takes `signal` (aborting rejects the call) and `timeoutMs` (an async tool that takes longer gives an
 * `API_ERROR` result; its `context.signal` is aborted so it can stop). A model's native tool calls
 * (`formatted: { toolCalls }`) run in parallel and are answered in one message, results in the calls'
 * order. Replies are typed as in {@link ActionExecutor}.
 *
 * @example
 * const executor = new AsyncActionExecutor({ actions: [search], timeoutMs: 10_000 });
 * const replies = await Promise.all(calls.map((call, i) => executor.call(call, { sessionId: i })));
 */
export class AsyncActionExecutor<H extends AsyncHook = AsyncHook> extends ExecutorBase<
  ActionBase,
  AsyncHook
> {
  /** The default per-call timeout, in ms. */
  readonly timeoutMs: number | undefined;

  constructor(options: AsyncActionExecutorOptions<H>) {
    super(options);
    this.timeoutMs = options.timeoutMs;
    if (this.timeoutMs !== undefined) checkTimeout(this.timeoutMs);
  }

  protected checkAction(action: unknown): asserts action is ActionBase {
    if (!(action instanceof ActionBase)) {
      throw new ConfigurationError({ message: `AsyncActionExecutor: ${typeof action} is not an action` });
    }
  }

  #settings(options: AsyncActionCallOptions | undefined): CallSettings {
    if (this.timeoutMs === undefined || options?.timeoutMs !== undefined) return callSettings(options ?? {});
    const withTimeout = Object.assign({}, options); // not a spread: slower on Node 20 when keys follow
    withTimeout.timeoutMs = this.timeoutMs;
    return callSettings(withTimeout);
  }

  /**
   * Runs the tool call in `message` through the hooks and resolves to the executor's reply. A message with
   * native tool calls (`formatted.toolCalls`) has all its calls run at once, each with the call's `signal`
   * and its own `timeoutMs`; one reply holds the results in the calls' order.
   */
  call<M extends MessageInput>(message: M, options?: AsyncActionCallOptions): Promise<ExecutorReply<H, M>> {
    try {
      return driveAsync(this[CALL_STEPS](message, options)) as Promise<ExecutorReply<H, M>>;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The steps of {@link call} (internal). */
  [CALL_STEPS](message: MessageInput, options?: AsyncActionCallOptions): Steps<AgentMessage> {
    return executeSteps(this, message, this.#settings(options), 'parallel', isPlanned(options));
  }

  /** Runs one call by name (`Name` or `Name.api`) without hooks. */
  forward(name: string, parameters?: unknown, options?: AsyncActionCallOptions): Promise<ActionReturn> {
    try {
      return driveAsync(this[FORWARD_STEPS](name, parameters, this.#settings(options)));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
