import type { ExecutorBase } from '../../actions/executor-base';
import { answeredCall } from '../../actions/tool-call-steps';
import { executorGate, type GatePlan } from '../../core/approval-gate';
import { currentFrame, resumeOf, rootFrame } from '../../core/call-context';
import type { Steps } from '../../core/steps';
import { ActionReturn } from '../../schema/action-return';
import { AgentMessage } from '../../schema/agent-message';
import type { ToolCall } from '../../schema/chat-message';
import { type Decision, InterruptSignal, interruptId, SUPERSEDED_REASON } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import { ActionStatusCode } from '../../schema/status';
import { toolCallsOf } from '../../schema/tool-calls';
import { isThenable } from '../../utils/is';
import type { AgentBase } from '../agent-base';
import { pathIn } from '../lifecycle/events';

/*
 * Tool approval in the prebuilt loops. Before a round of tool calls runs, each call is asked whether it needs
 * a person's approval (the tool's `needsApproval`, or the executor's). When one does and no decision for it
 * was given, nothing of the round runs: the loop stops with an `InterruptSignal`, which the outermost call
 * returns as an interrupt reply. The model's message with the calls is already in the loop's memory, so the
 * session waits there: resumed with decisions, the round runs (approved calls with their edited arguments,
 * declined ones answered with the reason); given another message instead, the round's calls are declined
 * and the loop goes on with that message.
 */

/** What the approval gate needs of a loop. */
export interface GatedLoop {
  readonly agent: {
    readonly memory: {
      get(
        sessionId: SessionId,
      ): { length: number; getMemory(o: { recentN: number }): AgentMessage[] } | undefined;
    } | null;
  };
  readonly executor: unknown;
}

/** The model's last message in the loop's memory when its tool calls were never answered, else undefined. */
export function pendingCallsOf(loop: GatedLoop, sessionId: SessionId): AgentMessage | undefined {
  const memory = loop.agent.memory?.get(sessionId);
  if (memory === undefined || memory.length === 0) return undefined;
  const last = memory.getMemory({ recentN: 1 })[0]!;
  return toolCallsOf(last.formatted) === null ? undefined : last;
}

/**
 * What to do with a round of tool calls: `run` it as it is (no call needs approval), or the message to give
 * the executor instead (the approved calls, with edited arguments) and the answers already known (declined
 * calls), by position. Throws an `InterruptSignal` when a call needs a decision nobody gave.
 */
export type RoundPlan =
  | { run: true }
  | {
      run: false;
      message: AgentMessage | undefined;
      calls: ToolCall[];
      answers: (ActionReturn | undefined)[];
    };

const RUN_AS_IS: RoundPlan = Object.freeze({ run: true });

/**
 * Which round of tool calls is planned: one the model just asked for (`live`), or the one a session waited
 * on (a loop's calls left unanswered in its memory), given a resume message (`resumed`) or a new message
 * instead (`superseded`: every call of it that needs approval is declined with that reason).
 */
export type RoundKind = 'live' | 'resumed' | 'superseded';

/**
 * Plans a round (see {@link RoundPlan}). A resume message sent to a `resumed` round must answer something
 * of it.
 *
 * Decisions are taken as `ResumeDecisions` (core/decisions.ts) says: those of earlier resumes (a durable replay) by the
 * rounds that asked for them, those of the resume message by the first round that still waits, once. A
 * decision for an id that does not wait there is a `ValidationError`, before anything of the round runs.
 */
export function* planRound(
  owner: AgentBase,
  executor: ExecutorBase<never>,
  reply: AgentMessage,
  sessionId: SessionId,
  round: RoundKind,
): Steps<RoundPlan> {
  const superseded = round === 'superseded';
  const calls = toolCallsOf(reply.formatted)!;
  const frame = currentFrame();
  const context = { sessionId, signal: frame?.signal };
  let needs: boolean[] | undefined;
  for (let i = 0; i < calls.length; i++) {
    let needed = executor.approvalNeeded(calls[i]!, context);
    if (isThenable(needed)) needed = (yield needed) as boolean;
    if (!needed) continue;
    needs ??= new Array<boolean>(calls.length).fill(false);
    needs[i] = true;
  }
  if (needs === undefined) {
    // A resume message for a round where nothing needs approval answers nothing.
    if (round === 'resumed') resumeOf(frame)?.answer([], owner.name);
    return RUN_AS_IS;
  }
  const resume = superseded ? undefined : resumeOf(frame);
  const path = pathOf(owner, frame);
  const answers = new Array<ActionReturn | undefined>(calls.length).fill(undefined);
  const ran: ToolCall[] = calls.slice();
  let waiting: number[] = [];
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    if (superseded) {
      answers[i] = declined(call, SUPERSEDED_REASON);
      continue;
    }
    if (!needs[i]) continue;
    const decision = resume?.takeEarlier(interruptId(path, call));
    if (decision === undefined) waiting.push(i);
    else apply(decision, i, calls, ran, answers);
  }
  if (waiting.length > 0 && resume !== undefined) {
    const ids = waiting.map((i) => interruptId(path, calls[i]!));
    const given = resume.answer(ids, owner.name);
    if (given !== undefined) {
      waiting = waiting.filter((i, at) => {
        const decision = given.get(ids[at]!);
        if (decision === undefined) return true;
        apply(decision, i, calls, ran, answers);
        return false;
      });
    }
  }
  if (waiting.length > 0) {
    throw new InterruptSignal(waiting.map((i) => ({ agent: owner, toolCall: calls[i]! })));
  }
  const toRun = ran.filter((_, i) => answers[i] === undefined);
  const message =
    toRun.length === 0
      ? undefined
      : new AgentMessage({ sender: reply.sender, content: reply.content, formatted: { toolCalls: toRun } });
  return { run: false, message, calls: ran, answers };
}

/** Applies a decision to call `i` of a round: declined (its answer), or approved (with edited arguments). */
function apply(
  decision: Decision,
  i: number,
  calls: readonly ToolCall[],
  ran: ToolCall[],
  answers: (ActionReturn | undefined)[],
): void {
  const call = calls[i]!;
  if (!decision.approve) answers[i] = declined(call, decision.reason);
  else if (decision.arguments !== undefined)
    ran[i] = { id: call.id, name: call.name, arguments: decision.arguments, edited: true };
}

// An executor called by a user's own forward asks the same question about a native tool-call message.
executorGate.run = (executor, message, sessionId) =>
  planRound(
    currentFrame()!.owner as AgentBase,
    executor as ExecutorBase<never>,
    message,
    sessionId as SessionId,
    'live',
  ) as Steps<GatePlan>;

/** The executor's reply to the calls that ran, with the known answers put back in their places. */
export function mergeRound(
  plan: Extract<RoundPlan, { run: false }>,
  executorName: string,
  results: AgentMessage | undefined,
): AgentMessage {
  const ran = (results?.content ?? []) as ActionReturn[];
  let next = 0;
  const content = plan.answers.map((answer) => answer ?? ran[next++]!);
  return new AgentMessage({
    sender: results?.sender ?? executorName,
    content,
    formatted: {
      toolCalls: plan.calls.map(answeredCall),
    },
  });
}

/** The answer the model gets for a call the user declined. */
function declined(call: ToolCall, reason: string | undefined): ActionReturn {
  return new ActionReturn({
    args: { inputs: call.arguments },
    type: call.name,
    errmsg: `The user declined this call of ${call.name}${reason ? `: ${reason}` : ''}. It was not run.`,
    state: ActionStatusCode.API_ERROR,
  });
}

/** The dotted path of `owner` in the tree of the outermost call, as the interrupt ids name it. */
function pathOf(owner: AgentBase, frame: ReturnType<typeof currentFrame>): string {
  const root = rootFrame(frame)?.owner as AgentBase | undefined;
  if (root === undefined || root === owner) return '';
  return pathIn(root, owner) ?? '';
}
