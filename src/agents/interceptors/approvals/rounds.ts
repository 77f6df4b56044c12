import type { ExecutorBase } from '../../../actions/executor-base';
import { answeredCall } from '../../../actions/tool-call-steps';
import { currentFrame, rootFrame } from '../../../core/call-context';
import type { Steps } from '../../../core/steps';
import { ActionReturn } from '../../../schema/action-return';
import { AgentMessage } from '../../../schema/agent-message';
import type { ToolCall } from '../../../schema/chat-message';
import {
  checkInterruptId,
  type Decision,
  InterruptSignal,
  interruptId,
  SUPERSEDED_REASON,
} from '../../../schema/interrupts';
import type { SessionId } from '../../../schema/session';
import { ActionStatusCode } from '../../../schema/status';
import { toolCallsOf } from '../../../schema/tool-calls';
import { isThenable } from '../../../utils/is';
import type { AgentBase } from '../../agent-base';
import { pathIn } from '../../lifecycle/events';
import { type CallerChecks, callerChecksIn } from '../guardrails/guards';
import { RESUME, TOOL_GUARDS } from '../slots';
import { clientAnswer } from './client-tools';
import { checkAnswer, type ResumeDecisions } from './decisions';

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
    // A call of a client tool waits for its caller's result (no executor knows the tool).
    let needed: boolean | Promise<boolean> =
      calls[i]!.client === true || executor.approvalNeeded(calls[i]!, context);
    if (isThenable(needed)) needed = (yield needed) as boolean;
    if (!needed) continue;
    needs ??= new Array<boolean>(calls.length).fill(false);
    needs[i] = true;
  }
  const checks = callerChecksIn(frame?.find(TOOL_GUARDS));
  if (needs === undefined && checks === undefined) {
    // A resume message for a round where nothing needs approval answers nothing.
    if (round === 'resumed') frame?.find(RESUME)?.answer([], owner.name);
    return RUN_AS_IS;
  }
  const resume = superseded ? undefined : frame?.find(RESUME);
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
    if (!needs?.[i]) continue;
    const decision = resume?.takeEarlier(interruptId(path, call));
    if (decision === undefined) waiting.push(i);
    else apply(owner, decision, i, calls, ran, answers);
  }
  // The round that waits takes the decisions given now: people's, and the caller's checks when it checks
  // every tool call (askBeforeTools).
  let given: ReadonlyMap<string, Decision> | undefined;
  if (resume !== undefined && (waiting.length > 0 || checks !== undefined)) {
    const ids = waiting.map((i) => interruptId(path, calls[i]!));
    if (checks !== undefined) {
      for (let i = 0; i < calls.length; i++)
        if (answers[i] === undefined) ids.push(checkInterruptId(path, calls[i]!));
    }
    given = resume.answer(ids, owner.name);
  }
  if (given !== undefined) {
    const answered = given;
    waiting = waiting.filter((i) => {
      const call = calls[i]!;
      const decision =
        answered.get(interruptId(path, call)) ??
        (checks === undefined ? undefined : checkedApproval(answered, path, call));
      if (decision === undefined) return true;
      apply(owner, decision, i, calls, ran, answers);
      return false;
    });
  }
  if (waiting.length > 0) {
    throw new InterruptSignal(
      waiting.map((i) => {
        const toolCall = calls[i]!;
        return toolCall.client === true
          ? { agent: owner, toolCall, kind: 'client-tool' as const }
          : { agent: owner, toolCall };
      }),
    );
  }
  if (checks !== undefined) askCallerChecks(checks, owner, resume, given, path, ran, answers);
  const toRun = ran.filter((_, i) => answers[i] === undefined);
  const message =
    toRun.length === 0
      ? undefined
      : new AgentMessage({ sender: reply.sender, content: reply.content, formatted: { toolCalls: toRun } });
  return { run: false, message, calls: ran, answers };
}

/**
 * Applies a decision to call `i` of a round: declined (its answer), approved (with edited arguments), or, for a
 * client tool's call, the output its caller gave (its answer). A decision that does not fit the call is a
 * `ValidationError` (see `checkAnswer`).
 */
function apply(
  owner: AgentBase,
  decision: Decision,
  i: number,
  calls: readonly ToolCall[],
  ran: ToolCall[],
  answers: (ActionReturn | undefined)[],
): void {
  const call = calls[i]!;
  checkAnswer(owner.name, decision, call.client === true ? 'client-tool' : 'approval');
  if (!decision.approve) answers[i] = declined(call, decision.reason);
  else if (decision.result !== undefined) answers[i] = clientAnswer(call, decision.result);
  else if (decision.arguments !== undefined)
    ran[i] = { id: call.id, name: call.name, arguments: decision.arguments, edited: true };
}

/**
 * The caller checks every tool call (`askBeforeTools`): once every person's decision is in, each call that
 * would run needs the caller's approval too (asked with the arguments it would run with). Throws the
 * `InterruptSignal` of kind `'check'` while one is missing; a call the caller declined is answered as such.
 */
function askCallerChecks(
  checks: CallerChecks,
  owner: AgentBase,
  resume: ResumeDecisions | undefined,
  given: ReadonlyMap<string, Decision> | undefined,
  path: string,
  ran: ToolCall[],
  answers: (ActionReturn | undefined)[],
): void {
  const waiting: ToolCall[] = [];
  const approved: ToolCall[] = [];
  for (let i = 0; i < ran.length; i++) {
    if (answers[i] !== undefined) continue;
    const call = ran[i]!;
    const id = checkInterruptId(path, call);
    const decision = resume?.takeEarlier(id) ?? given?.get(id);
    if (decision !== undefined) checkAnswer(owner.name, decision, 'check');
    if (decision === undefined) waiting.push(call);
    else if (!decision.approve) answers[i] = declined(call, decision.reason);
    else approved.push(call);
  }
  if (waiting.length > 0) {
    throw new InterruptSignal(
      waiting.map((toolCall) => ({ agent: owner, toolCall, kind: 'check' as const })),
    );
  }
  for (const call of approved) checks.approve(call.name, call.arguments);
}

/**
 * The caller's approval of its check of a call that needs a person's approval: the check came after that
 * approval and saw the arguments it approved, so it stands for it (a call that is not durable keeps no
 * decisions between resumes, and the caller resumes the check alone). Its arguments are the call's as the
 * person approved them: an edit only when they differ from the model's.
 */
function checkedApproval(
  given: ReadonlyMap<string, Decision>,
  path: string,
  call: ToolCall,
): Decision | undefined {
  const checked = given.get(checkInterruptId(path, call));
  if (checked?.approve !== true) return undefined;
  const args = checked.arguments;
  if (args === undefined || sameArguments(args, call.arguments)) return { id: checked.id, approve: true };
  return checked;
}

/** True when two tool-call arguments (JSON text or objects) say the same. */
function sameArguments(a: unknown, b: unknown): boolean {
  const read = (value: unknown) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  };
  return JSON.stringify(read(a)) === JSON.stringify(read(b));
}

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

/** The answer the model gets for a call the user (or, for a client tool, its caller) declined. */
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
