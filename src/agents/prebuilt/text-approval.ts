import type { ExecutorBase } from '../../actions/executor-base';
import { readToolCallArguments } from '../../actions/tool-call-steps';
import type { Steps } from '../../core/steps';
import { ActionReturn } from '../../schema/action-return';
import { AgentMessage } from '../../schema/agent-message';
import type { ToolCall } from '../../schema/chat-message';
import type { SessionId } from '../../schema/session';
import { isPlainObject } from '../../utils/is';
import { pythonJSON } from '../../utils/text';
import type { AgentBase } from '../agent-base';
import { planRound, type RoundKind } from '../interceptors/approvals/rounds';

/*
 * Tool approval in the text-format loops (ReAct, the InternLM agents). Their model writes one call per
 * reply as text; the loop reads it into a `ToolCall` whose id is the reply's place in the model-facing
 * sub-agent's memory (`call_<n>`), the same on every run of the session: after a reload, and on a durable
 * replay, which puts every memory back and adds the same messages again. The gate is the function-calling
 * loop's (`planRound`) over that one call. The call waits in memory as the model's last message, as a
 * native call does; a loop that stopped at `maxTurn` also leaves its last call there (run, its result in
 * the reply only), which the loop's own memory tells apart: its last message is then the `maxTurn` reply.
 */

/** A text-format call read from a model reply: the tool's name and its arguments. */
export interface TextCall {
  name: string;
  parameters: unknown;
}

/**
 * What the gate decided for a call: the executor's input (and, when a person edited the arguments, the call
 * as it runs), or the answer the model gets instead.
 */
export type TextCallPlan =
  | { run: true; message: AgentMessage; edited?: ToolCall | undefined }
  | { run: false; answer: AgentMessage };

/** The id of the call a model reply makes: its 1-based place in the sub-agent's memory. */
export function textCallId(agent: unknown, sessionId: SessionId): string {
  const memory = (agent as AgentBase).memory?.get(sessionId);
  return `call_${memory?.length ?? 0}`;
}

/** The last message of a sub-agent's memory for the session, if any. */
export function lastMessageOf(agent: unknown, sessionId: SessionId): AgentMessage | undefined {
  const memory = (agent as AgentBase).memory?.get(sessionId);
  if (memory === undefined || memory.length === 0) return undefined;
  return memory.getMemory({ recentN: 1 })[0];
}

/**
 * Whether the loop's previous call of the session stopped without a reply (it was interrupted): false when
 * the loop's own memory, before this call's `inputs`, ends with its `maxTurn` reply.
 */
export function stoppedUnanswered(owner: AgentBase, sessionId: SessionId, inputs: number): boolean {
  const memory = owner.memory?.get(sessionId);
  if (memory === undefined || memory.length <= inputs) return true;
  const before = memory.getMemory({ recentN: inputs + 1 })[0]!;
  const extra = before.extraInfo;
  return !(isPlainObject(extra) && extra.maxTurnReached === true);
}

/**
 * Asks the executor whether `call` needs approval and applies the decision the call was given: the
 * executor's input (`asIs`, or a call with the edited arguments), or the declined answer (the text the
 * model reads, from the executor). Throws the `InterruptSignal` when a decision is missing. A call
 * `superseded` by a new message is declined when it needs approval, and gives undefined when it needs none
 * (it stays as it is).
 */
export function* planTextCall(
  owner: AgentBase,
  executor: unknown,
  reply: AgentMessage,
  call: ToolCall,
  asIs: AgentMessage,
  sessionId: SessionId,
  round: RoundKind,
): Steps<TextCallPlan | undefined> {
  const superseded = round === 'superseded';
  // An executor of another kind (no approval rules) runs every call as it is.
  if (typeof (executor as Partial<ExecutorBase<never>>).approvalNeeded !== 'function') {
    return superseded ? undefined : { run: true, message: asIs };
  }
  const single = new AgentMessage({
    sender: reply.sender,
    content: reply.content,
    formatted: { toolCalls: [call] },
  });
  const plan = yield* planRound(owner, executor as ExecutorBase<never>, single, sessionId, round);
  if (plan.run) return superseded ? undefined : { run: true, message: asIs };
  const name = (executor as { name: string }).name;
  const answer = plan.answers[0];
  if (answer !== undefined) return { run: false, answer: answerMessage(name, answer) };
  const ran = plan.calls[0]!;
  return ran === call
    ? { run: true, message: asIs }
    : { run: true, message: callMessage(reply, ran), edited: ran };
}

/**
 * The executor's answer to a call whose arguments a person edited, as the model reads it: the model's own
 * text still shows the arguments it wrote, so the answer says first that a person changed them, and to what.
 */
export function editedAnswer(answer: AgentMessage, ran: ToolCall): AgentMessage {
  const read = readToolCallArguments(ran.arguments);
  const shown = JSON.stringify(read.ok ? read.args : ran.arguments);
  const note = `The user edited the arguments of this call before approving it: it ran as ${ran.name} with ${shown}.`;
  const content = answer.content;
  const text =
    content instanceof ActionReturn ? content.toText() : typeof content === 'string' ? content : '';
  const copy = answer.clone();
  copy.content = `${note}\n${text}`;
  return copy;
}

/** A message the executor reads as a call of `call.name` with `call.arguments` (the edited ones). */
function callMessage(reply: AgentMessage, call: ToolCall): AgentMessage {
  const read = readToolCallArguments(call.arguments);
  const parameters = read.ok ? read.args : call.arguments;
  const text: TextCall = { name: call.name, parameters };
  return new AgentMessage({ sender: reply.sender, content: pythonJSON(text), formatted: text });
}

/** The executor's answer to a declined call, as the text the model reads. */
function answerMessage(sender: string, answer: ActionReturn): AgentMessage {
  return new AgentMessage({ sender, content: answer instanceof ActionReturn ? answer.toText() : answer });
}
