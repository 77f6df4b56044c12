import { type GatePlan, ROUND_PLANNER, type RoundPlanner } from '../../../core/approval-rules';
import { currentFrame } from '../../../core/call-context';
import type { Steps } from '../../../core/steps';
import { AgentMessage } from '../../../schema/agent-message';
import {
  checkInterruptId,
  INTERRUPT_TYPE,
  type Interrupt,
  InterruptSignal,
  interruptId,
} from '../../../schema/interrupts';
import type { SessionId } from '../../../schema/session';
import type { AgentBase } from '../../agent-base';
import { type Forwarding, plainForwardOf } from '../../lifecycle/builtin-forward';
import { emitEvent, pathIn } from '../../lifecycle/events';
import type { Turn } from '../../lifecycle/turn';
import { AGENT } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import { CLIENT_TOOLS, EARLIER, RESUME, SPAN } from '../slots';
import { observed } from '../tracing/observed';
import { CLIENT_CALLS, checkClientTools } from './client-tools';
import { ResumeDecisions } from './decisions';
import { planRound } from './rounds';

/*
 * Approvals and interrupts. A tool call that needs a person's approval, or a call of a tool the caller runs
 * itself (`clientTools`: client-tools.ts), stops the call: the round of tool calls
 * it is in is planned first (rounds.ts: by a prebuilt loop, or by an executor a `forward` calls, which finds the
 * planner in the call's slot), and a call that waits throws an `InterruptSignal` up the tree. The calls it
 * passes through keep what they did; the outermost returns it as an interrupt reply, which no memory keeps.
 * A resume message is not a message of the conversation: its decisions (with those of earlier resumes of a
 * durable call) go to the call's slot, where the round that waited takes them, once (decisions.ts).
 */

/** The round planner executors find in a call's slots: a round of the agent whose call they run in. */
const PLANNER: RoundPlanner = {
  plan: (executor, message, sessionId) =>
    planRound(
      currentFrame()!.owner as AgentBase,
      executor as never,
      message,
      sessionId as SessionId,
      'live',
    ) as Steps<GatePlan>,
};

const interceptor = {
  name: 'approvals',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const given = turn.decisions;
    const earlier = turn.get(EARLIER);
    if (given !== undefined || earlier !== undefined) {
      turn.set(RESUME, new ResumeDecisions(given ?? [], earlier ?? []));
      if (given !== undefined) resumed(turn, given);
    }
    turn.set(ROUND_PLANNER, PLANNER);
    // Client tools (checked by `perCall`, or a durable replay's as recorded): the models asked inside find them
    // in the call's frame, which a built-in forward then runs in too.
    const clientTools = turn.get(CLIENT_TOOLS) !== undefined;
    if (clientTools) {
      turn.framed = true;
      CLIENT_CALLS.count++;
    }
    try {
      return yield* next();
    } catch (error) {
      if (!(error instanceof InterruptSignal) || turn.parent !== undefined) throw error;
      return interruptReply(turn, error);
    } finally {
      if (clientTools) CLIENT_CALLS.count--;
    }
  },
};

/** A resume message was given: an event of the call's span, and a `resume` event. */
function resumed(turn: Turn, decisions: NonNullable<Turn['decisions']>): void {
  turn.find(SPAN)?.addEvent?.('lagent.resume', { 'lagent.decisions': decisions.map((d) => d.id) });
  const { agent } = turn;
  if (observed(agent)) {
    emitEvent(agent, 'resume', { agent, sessionId: turn.options.sessionId, decisions, path: '' });
  }
}

/** The outermost call stopped to ask a person: the questions as its reply (an `interrupt` event says so). */
function interruptReply(turn: Turn, signal: InterruptSignal): AgentMessage {
  const { agent } = turn;
  const interrupts: Interrupt[] = signal.asks.map(({ agent: asking, toolCall, path: below, kind }) => {
    // `below`: where in a remote agent's tree the question was asked (the remote's own path).
    const at = asking === agent ? '' : (pathIn(agent, asking as AgentBase) ?? '');
    const path = below === undefined || below === '' ? at : at === '' ? below : `${at}.${below}`;
    if (kind === 'check')
      return { id: checkInterruptId(path, toolCall), kind, path, toolCall: { ...toolCall } };
    return { id: interruptId(path, toolCall), kind: kind ?? 'approval', path, toolCall: { ...toolCall } };
  });
  if (observed(agent)) {
    emitEvent(agent, 'interrupt', { agent, sessionId: turn.options.sessionId, interrupts, path: '' });
  }
  turn.find(SPAN)?.addEvent?.('lagent.interrupt', { 'lagent.interrupts': interrupts.map((i) => i.id) });
  const extraInfo = turn.given.askBeforeTools === true ? { askBeforeTools: true } : null;
  return new AgentMessage({
    sender: agent.name,
    type: INTERRUPT_TYPE,
    content: `${waitingFor(interrupts)}: ${interrupts.map((i) => `${i.toolCall.name} (${i.id})`).join(', ')}`,
    formatted: { interrupts },
    extraInfo,
  });
}

/** What an interrupt reply says it waits for. */
function waitingFor(interrupts: readonly Interrupt[]): string {
  if (interrupts.every((i) => i.kind === 'check')) return "Waiting for the caller's check";
  if (interrupts.every((i) => i.kind === 'client-tool')) return "Waiting for the caller's tool results";
  return 'Waiting for approval';
}

export const approvals: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  // The outermost call of an agent whose forward is not a built-in model call (a loop, a composite).
  static: (agent) => (plainForwardOf((agent as unknown as Forwarding).forward) === undefined ? AGENT : 0),
  callOptions: ['clientTools'],
  enclosing: true,
  perCall(turn) {
    // A call given client tools (checked now, before anything of the call happens); a resumed call; and the
    // outermost call of an agent whose forward is not a built-in model call (a loop, a composite): its tool
    // calls may need a person, and its executors find the round planner here.
    const clientTools = turn.given.clientTools;
    if (clientTools !== undefined) {
      turn.set(CLIENT_TOOLS, checkClientTools(turn.agent, clientTools));
      return AGENT;
    }
    if (turn.decisions !== undefined) return AGENT;
    if (turn.parent !== undefined) return 0;
    return plainForwardOf((turn.agent as unknown as Forwarding).forward) === undefined ? AGENT : 0;
  },
};
