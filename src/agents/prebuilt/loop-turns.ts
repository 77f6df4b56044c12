import type { Steps } from '../../core/steps';
import { ActionReturn } from '../../schema/action-return';
import { AgentMessage } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { toText } from '../../utils/text';
import { needsDriving } from '../lifecycle';

/*
 * What the prebuilt agent loops share: the turn bound, the reply that says the bound was reached, and the
 * turns the loop answers itself with an executor's builtin actions (NoAction, InvalidAction).
 */

/** An `ActionExecutor` or `AsyncActionExecutor`, as the loops use them. */
export interface LoopExecutor {
  readonly name: string;
  readonly noAction: { readonly name: string };
  call(message: AgentMessage, options: { sessionId: SessionId }): unknown;
  forward(name: string, parameters: unknown, options: { sessionId: SessionId }): unknown;
}

/** A sub-agent of a loop (any variant): its call gives a message, a promise or a stream of one. */
export interface LoopAgent {
  readonly name: string;
  call(input: AgentMessage, options: Record<string, unknown>): unknown;
}

/** `maxTurn` checked: a positive integer (every loop is bounded). */
export function checkMaxTurn(owner: string, value: number): number {
  if (!(Number.isInteger(value) && value > 0)) {
    throw new ConfigurationError({
      message: `${owner}: maxTurn must be a positive integer, got ${String(value)}`,
    });
  }
  return value;
}

/** What `extraInfo` of the reply holds when a loop stopped at its bound. */
export interface MaxTurnInfo {
  maxTurnReached: true;
  maxTurn: number;
}

/**
 * The reply of a loop that ran `maxTurn` turns without an answer: it says so, and carries the last tool
 * result (which no model turn has read yet).
 */
export function maxTurnReply(owner: string, maxTurn: number, last: AgentMessage): AgentMessage<string, null> {
  const result = toText(last.content instanceof ActionReturn ? last.content.toText() : last.content);
  const info: MaxTurnInfo = { maxTurnReached: true, maxTurn };
  return new AgentMessage({
    sender: owner,
    content: `${owner} stopped after ${maxTurn} turn${maxTurn === 1 ? '' : 's'} (maxTurn) without a final answer. The last tool result was:\n${result}`,
    formatted: null,
    extraInfo: info,
  });
}

/**
 * A turn the loop answers with one of the executor's actions by name (its `NoAction`, or an unknown name
 * for its `InvalidAction`), without the hooks: a reply from the executor whose content is the text the
 * model reads.
 */
export function* builtinTurn(
  executor: LoopExecutor,
  name: string,
  parameters: Record<string, unknown>,
  sessionId: SessionId,
): Steps<AgentMessage> {
  let result = executor.forward(name, parameters, { sessionId });
  if (needsDriving(result)) result = yield result;
  const content = result instanceof ActionReturn ? result.toText() : toText(result);
  return new AgentMessage({ sender: executor.name, content });
}

/** One sub-call as a step: a promise or stream goes through the driver, a message comes back. */
export function* subCall(value: unknown): Steps<AgentMessage> {
  return (needsDriving(value) ? yield value : value) as AgentMessage;
}
