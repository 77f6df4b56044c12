import { driveSync, type Steps } from '../core/steps';
import type { SyncHook } from '../hooks/hook';
import type { ActionReturn } from '../schema/action-return';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import type { CallSettings } from './action-steps';
import { BaseAction } from './base-action';
import { type ActionExecutorOptions, ExecutorBase } from './executor-base';
import { CALL_STEPS, executeSteps, FORWARD_STEPS, isPlanned } from './executor-steps';
import type { ActionCallOptions, ExecutorReply, ToolContext } from './types';

const DEFAULT_SETTINGS: CallSettings = Object.freeze({
  context: Object.freeze({ sessionId: 0 }) as ToolContext,
  sync: true,
});

function settingsOf(options: ActionCallOptions | undefined): CallSettings {
  return options?.sessionId === undefined
    ? DEFAULT_SETTINGS
    : { context: { sessionId: options.sessionId }, sync: true };
}

/**
 * Runs synchronous tools for an agent. A message's content names the tool and its arguments
 * (`{ name: 'Calculator.add', parameters: { a: 1, b: 2 } }`, a `FunctionCall`, or that as JSON); sync hooks
 * may convert messages before and after. The reply is a message from `'ActionExecutor'` whose content is
 * the {@link ActionReturn} (or what an `afterAction` hook made of it; see {@link ExecutorReply}: the type
 * follows the hooks given to the constructor). A model's native tool calls (`formatted: { toolCalls }`)
 * run one after another and are answered in one message: `content[i]` is the result of
 * `formatted.toolCalls[i]`. Nothing a tool throws escapes: errors come back as `ARGS_ERROR` / `API_ERROR`
 * results, unknown tools as `InvalidAction` results.
 *
 * @example
 * const executor = new ActionExecutor({ actions: [calculator] });
 * const reply = executor.call(new AgentMessage({ sender: 'Agent', content: { name: 'Calculator.add', parameters: { a: 1, b: 2 } } }));
 * reply.content.formatResult(); // '3'
 */
export class ActionExecutor<H extends SyncHook = SyncHook> extends ExecutorBase<BaseAction, SyncHook> {
  constructor(options: ActionExecutorOptions<BaseAction, H>) {
    super(options);
  }

  protected checkAction(action: unknown): asserts action is BaseAction {
    if (!(action instanceof BaseAction)) {
      const what = (action as { name?: unknown })?.name ?? typeof action;
      throw new ConfigurationError({
        message: `ActionExecutor runs synchronous actions (BaseAction) only; ${String(what)} is not one — use AsyncActionExecutor for async tools`,
      });
    }
  }

  /**
   * Runs the tool call in `message` through the hooks and returns the executor's reply. A message with
   * native tool calls (`formatted.toolCalls`) has each call run in order, and one reply holds all results.
   */
  call<M extends MessageInput>(message: M, options?: ActionCallOptions): ExecutorReply<H, M> {
    return driveSync(this[CALL_STEPS](message, options)) as ExecutorReply<H, M>;
  }

  /** The steps of {@link call} (internal). */
  [CALL_STEPS](message: MessageInput, options?: ActionCallOptions): Steps<AgentMessage> {
    return executeSteps(this, message, settingsOf(options), 'sequential', isPlanned(options));
  }

  /** Runs one call by name (`Name` or `Name.api`) without hooks. */
  forward(name: string, parameters?: unknown, options?: ActionCallOptions): ActionReturn {
    return driveSync(this[FORWARD_STEPS](name, parameters, settingsOf(options)));
  }
}
