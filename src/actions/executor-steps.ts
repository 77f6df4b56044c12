import { type GatePlan, PLANNED, ROUND_PLANNER } from '../core/approval-rules';
import { currentFrame, PLACES } from '../core/call-context';
import { hookStep } from '../core/hook-step';
import type { Steps } from '../core/steps';
import type { Hook, HookExecutor } from '../hooks/hook';
import { parseLenientJSON } from '../prompts/parsers/json-text';
import type { ActionReturn } from '../schema/action-return';
import { AgentMessage, type MessageInput, toAgentMessage } from '../schema/agent-message';
import type { ToolCall } from '../schema/chat-message';
import { toolCallsOf } from '../schema/tool-calls';
import { isPlainObject } from '../utils/is';
import { kindOf, shorten } from '../utils/text';
import type { CallSettings } from './action-steps';
import { answeredCall, ownSettings, parallelSteps } from './tool-call-steps';

/** True for the options of a round a loop planned already (see `PLANNED`): its executor runs it as it is. */
export function isPlanned(options: object | undefined): boolean {
  return (options as { [PLANNED]?: unknown } | undefined)?.[PLANNED] === true;
}

/** A tool call read from a message's content. */
export interface TextToolCall {
  name: string;
  parameters: unknown;
}

/** Where executors keep their dispatch steps: symbol-keyed, so they stay out of the public API. */
export const FORWARD_STEPS: unique symbol = Symbol('lagent-ts.forwardSteps');
export const INVALID_CALL_STEPS: unique symbol = Symbol('lagent-ts.invalidCallSteps');
export const TOOL_CALL_STEPS: unique symbol = Symbol('lagent-ts.toolCallSteps');
/** An executor's `call` as steps: what its `call` drives (agent loops run them with their own driver). */
export const CALL_STEPS: unique symbol = Symbol('lagent-ts.callSteps');

const RUN_AS_IS: GatePlan = Object.freeze({ run: true });

/** What the executor steps need from an executor. */
export interface StepsExecutor extends HookExecutor {
  readonly hooks: readonly Hook[];
  [FORWARD_STEPS](name: string, parameters: unknown, settings: CallSettings): Steps<ActionReturn>;
  [INVALID_CALL_STEPS](errMsg: string, settings: CallSettings): Steps<ActionReturn>;
  [TOOL_CALL_STEPS](call: ToolCall, settings: CallSettings): Steps<ActionReturn>;
}

/** How an executor runs the calls of one native tool-call message. */
export type CallOrder = 'sequential' | 'parallel';

/** Every call of a tool-call message, one result per call in the calls' order. */
function* toolCallsSteps(
  executor: StepsExecutor,
  calls: readonly ToolCall[],
  settings: CallSettings,
  order: CallOrder,
): Steps<ActionReturn[]> {
  if (order === 'parallel') {
    // One call runs alone: its steps directly, without the bookkeeping of running several at once.
    if (calls.length === 1) return [yield* executor[TOOL_CALL_STEPS](calls[0]!, ownSettings(settings))];
    return yield* parallelSteps(calls.map((call) => executor[TOOL_CALL_STEPS](call, ownSettings(settings))));
  }
  const results: ActionReturn[] = [];
  for (const call of calls) results.push(yield* executor[TOOL_CALL_STEPS](call, settings));
  return results;
}

/**
 * Reads `{ name, parameters }` (or a `FunctionCall`, or the same as JSON text) from message content; `null`
 * when there is no call in it (or it cannot be read).
 */
export function readToolCall(content: unknown): TextToolCall | null {
  let value = content;
  if (typeof value === 'string') {
    const text = value.trim();
    if (!(text.startsWith('{') || text.startsWith('```'))) return null;
    try {
      value = parseLenientJSON(text);
    } catch {
      return null;
    }
  }
  try {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
    const name = (value as { name?: unknown }).name;
    if (typeof name !== 'string') return null;
    return { name, parameters: (value as { parameters?: unknown }).parameters };
  } catch {
    return null;
  }
}

function describeContent(content: unknown): string {
  if (typeof content === 'string') return JSON.stringify(shorten(content, 80));
  try {
    if (isPlainObject(content)) return `an object with keys ${Object.keys(content).join(', ') || '(none)'}`;
  } catch {
    // described by its kind below
  }
  return kindOf(content);
}

/**
 * `executor.call()`, written once for the sync and async executors: a copy of the message -> each hook's
 * `beforeAction` -> the tool call in its content is dispatched -> the `ActionReturn` in a message from the
 * executor -> each hook's `afterAction`. A message with native tool calls (`formatted.toolCalls`) has every
 * call run (`order`) and is answered with one message: the `ActionReturn`s in the calls' order as content,
 * the calls they answer as `formatted.toolCalls`. Yields only promises (async hooks and tools).
 */
export function* executeSteps(
  executor: StepsExecutor,
  input: MessageInput,
  settings: CallSettings,
  order: CallOrder = 'sequential',
  planned = false,
): Steps<AgentMessage> {
  settings.signal?.throwIfAborted();
  const sessionId = settings.context.sessionId;
  let message = toAgentMessage(input);
  const frame = currentFrame();
  // Called by a user's forward inside a call that keeps program order (a durable journal), the executor takes
  // its place now, before its hooks and approval checks await anything: executors called at once keep their
  // places on a replay.
  if (!planned && frame !== undefined && toolCallsOf(message.formatted) !== null) {
    const places = frame.find(PLACES);
    if (places !== undefined) {
      settings = Object.assign({}, settings); // the caller's may be shared
      settings.place = places.reserve();
    }
  }
  const hooks = executor.hooks;
  for (const hook of hooks) {
    if (hook.beforeAction)
      message = (yield* hookStep(hook, 'beforeAction', executor, message, sessionId)) ?? message;
  }
  let response: AgentMessage;
  const toolCalls = toolCallsOf(message.formatted);
  if (toolCalls) {
    // Inside an agent call, a round no prebuilt loop asked about is asked about here.
    const planner = planned ? undefined : frame?.find(ROUND_PLANNER);
    const plan: GatePlan =
      planner !== undefined ? yield* planner.plan(executor, message, sessionId) : RUN_AS_IS;
    if (plan.run) {
      const results = yield* toolCallsSteps(executor, toolCalls, settings, order);
      response = new AgentMessage({
        sender: executor.name,
        content: results,
        formatted: { toolCalls: toolCalls.map(answeredCall) },
      });
    } else {
      // Some calls needed approval: the approved ones run, the declined ones have their answers already.
      const approved = plan.message === undefined ? [] : toolCallsOf(plan.message.formatted)!;
      const ran = approved.length > 0 ? yield* toolCallsSteps(executor, approved, settings, order) : [];
      let next = 0;
      response = new AgentMessage({
        sender: executor.name,
        content: plan.answers.map((answer) => (answer as ActionReturn | undefined) ?? ran[next++]!),
        formatted: { toolCalls: (plan.calls as ToolCall[]).map(answeredCall) },
      });
    }
  } else {
    const call = readToolCall(message.content);
    const actionReturn = call
      ? yield* executor[FORWARD_STEPS](call.name, call.parameters, settings)
      : yield* executor[INVALID_CALL_STEPS](
          `${executor.name} expects a tool call {"name": ..., "parameters": ...}, got ${describeContent(message.content)}.`,
          settings,
        );
    response = new AgentMessage({ sender: executor.name, content: actionReturn });
  }
  for (const hook of hooks) {
    if (hook.afterAction)
      response = (yield* hookStep(hook, 'afterAction', executor, response, sessionId)) ?? response;
  }
  return response;
}
