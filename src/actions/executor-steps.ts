import type { Steps } from '../agents/drive';
import { type Hook, type HookExecutor, hookNameOf } from '../hooks/hook';
import { parseLenientJSON } from '../prompts/parsers/json-text';
import type { ActionReturn } from '../schema/action-return';
import { AgentMessage, type MessageInput, toAgentMessage } from '../schema/agent-message';
import { HookError } from '../schema/errors';
import { isPlainObject, isThenable } from '../utils/is';
import { type CallSettings, PromiseInSyncCall } from './action-steps';

/** A tool call read from a message's content. */
export interface ToolCall {
  name: string;
  parameters: unknown;
}

/** What the executor steps need from an executor. */
export interface StepsExecutor extends HookExecutor {
  readonly hooks: readonly Hook[];
  forwardSteps(name: string, parameters: unknown, settings: CallSettings): Steps<ActionReturn>;
  invalidCallSteps(errMsg: string, settings: CallSettings): Steps<ActionReturn>;
}

/** Reads `{ name, parameters }` (or a `FunctionCall`, or the same as JSON text) from message content. */
export function readToolCall(content: unknown): ToolCall | null {
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
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const name = (value as { name?: unknown }).name;
  if (typeof name !== 'string') return null;
  return { name, parameters: (value as { parameters?: unknown }).parameters };
}

function describeContent(content: unknown): string {
  if (typeof content === 'string')
    return JSON.stringify(content.length > 80 ? `${content.slice(0, 80)}…` : content);
  if (isPlainObject(content)) return `an object with keys ${Object.keys(content).join(', ') || '(none)'}`;
  return content === null ? 'null' : typeof content;
}

function hookError(error: unknown, hook: object, stage: 'beforeAction' | 'afterAction'): HookError {
  const hookName = hookNameOf(hook);
  const reason =
    error instanceof PromiseInSyncCall
      ? 'it returned a Promise, which a synchronous ActionExecutor cannot wait for (use AsyncActionExecutor)'
      : error instanceof Error
        ? error.message
        : String(error);
  return new HookError({
    hookName,
    stage,
    message: `hook ${hookName}.${stage} failed: ${reason}`,
    cause: error,
  });
}

function checkHookResult(result: unknown, hook: object, stage: 'beforeAction' | 'afterAction'): AgentMessage {
  if (result instanceof AgentMessage) return result;
  const hookName = hookNameOf(hook);
  throw new HookError({
    hookName,
    stage,
    message: `hook ${hookName}.${stage} must return an AgentMessage or nothing`,
  });
}

/**
 * `executor.call()`, written once for the sync and async executors: a copy of the message -> each hook's
 * `beforeAction` -> the tool call in its content is dispatched -> the `ActionReturn` in a message from the
 * executor -> each hook's `afterAction`. Yields only promises (async hooks and tools).
 */
export function* executeSteps(
  executor: StepsExecutor,
  input: MessageInput,
  settings: CallSettings,
): Steps<AgentMessage> {
  settings.signal?.throwIfAborted();
  const sessionId = settings.context.sessionId;
  let message = toAgentMessage(input);
  const hooks = executor.hooks;
  for (let i = 0; i < hooks.length; i++) {
    const hook = hooks[i]!;
    if (!hook.beforeAction) continue;
    let result: unknown;
    try {
      result = hook.beforeAction(executor, message, sessionId);
      if (isThenable(result)) result = yield result;
    } catch (error) {
      throw hookError(error, hook, 'beforeAction');
    }
    if (result) message = checkHookResult(result, hook, 'beforeAction');
  }
  const call = readToolCall(message.content);
  const actionReturn = call
    ? yield* executor.forwardSteps(call.name, call.parameters, settings)
    : yield* executor.invalidCallSteps(
        `${executor.name} expects a tool call {"name": ..., "parameters": ...}, got ${describeContent(message.content)}.`,
        settings,
      );
  let response = new AgentMessage({ sender: executor.name, content: actionReturn });
  for (let i = 0; i < hooks.length; i++) {
    const hook = hooks[i]!;
    if (!hook.afterAction) continue;
    let result: unknown;
    try {
      result = hook.afterAction(executor, response, sessionId);
      if (isThenable(result)) result = yield result;
    } catch (error) {
      throw hookError(error, hook, 'afterAction');
    }
    if (result) response = checkHookResult(result, hook, 'afterAction');
  }
  return response;
}
