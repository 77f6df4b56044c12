import { readToolCallArguments } from '../actions/tool-call-steps';
import {
  CheckContext,
  checkEach,
  type GuardSpec,
  runCheck,
  toolCallMessage,
} from '../agents/interceptors/guardrails/guards';
import { TOOL_GUARDS } from '../agents/interceptors/slots';
import { currentFrame } from '../core/call-context';
import type { AgentMessage } from '../schema/agent-message';
import { GuardrailTripped } from '../schema/errors';
import { type Decision, type Interrupt, interruptsOf, resumeWith } from '../schema/interrupts';

/*
 * Tool guardrails across a remote agent. A client (HTTP or queue) called inside a local call that has tool
 * guardrails asks the remote agent to stop before every tool call (`askBeforeTools`): the remote call answers
 * with an interrupt of kind `'check'` naming the calls it would run, the client runs the local tool
 * guardrails on each, and resumes the remote call approving them, until the remote call ends. A trip fails
 * the local call with `GuardrailTripped` (the remote session stays paused before those calls; its next
 * message declines them). A remote tool call that cannot stop to be asked (a remote custom forward that runs
 * a tool directly) is refused by the remote agent. Questions for a person (`'approval'`) are asked first and
 * go up the local tree as before; the checks follow, with the arguments the person approved, and the check's
 * approval carries them (the remote call needs no other decision to run the round).
 */

/** The tool guardrails in force where a client is called (undefined: none). */
export function toolGuardsHere(): readonly GuardSpec[] | undefined {
  const guards = currentFrame()?.find(TOOL_GUARDS);
  return guards === undefined || guards.length === 0 ? undefined : guards;
}

/** The options of a remote call, asking it to stop before every tool call when tool guardrails are in force. */
export function withToolChecks<O extends Readonly<Record<string, unknown>>>(
  options: O,
  guards: readonly GuardSpec[] | undefined,
): O {
  return guards === undefined ? options : { ...options, askBeforeTools: true };
}

/**
 * The tool calls a remote reply asks the caller to check (its interrupts of kind `'check'`); empty if none.
 * A reply that does not say its call was made with `askBeforeTools` (a server of another implementation, or
 * of a lagent-ts before it, which ignores the option) fails the call: its tool calls were not checked.
 */
export function checksAsked(reply: AgentMessage, where: string): Interrupt[] {
  const extra = reply.extraInfo as { askBeforeTools?: unknown } | null | undefined;
  if (extra === null || typeof extra !== 'object' || extra.askBeforeTools !== true) {
    throw new GuardrailTripped({
      message: `guardrail caller-checks tripped on the tool: ${where} did not stop before its tool calls for this call's tool guardrails (askBeforeTools): it runs another implementation, or an older one, so its tool calls were not checked`,
      guardrail: 'caller-checks',
      reason: `${where} cannot have its tool calls checked`,
    });
  }
  const interrupts = interruptsOf(reply);
  if (interrupts.length === 0) return interrupts;
  return interrupts.filter((interrupt) => interrupt.kind === 'check');
}

/**
 * Runs the local tool guardrails on each tool call the remote agent asks about: throws a trip at once, else
 * a promise for checks that answer later (rejected with the trip, or the abort's reason), or undefined.
 */
export function checkRemoteCalls(
  guards: readonly GuardSpec[],
  asks: readonly Interrupt[],
  who: string,
  sessionId: unknown,
  signal: AbortSignal | undefined,
): Promise<void> | undefined {
  return checkEach(asks, (ask) => {
    // The arguments as a local tool's guardrail sees them: JSON text read.
    const read = readToolCallArguments(ask.toolCall.arguments);
    const toolCall = { name: ask.toolCall.name, arguments: read.ok ? read.args : ask.toolCall.arguments };
    const message = toolCallMessage(who, toolCall);
    return checkEach(guards, (guard) =>
      runCheck(guard, message, new CheckContext(who, sessionId, 'tool', signal, toolCall)),
    );
  });
}

/**
 * The message that resumes the remote call once its asked calls passed: an approval of each, with the
 * arguments that were checked (for a call a person approved first, the approval stands for the person's: a
 * remote agent that is not durable keeps no decisions between resumes). A remote agent that asks again
 * about a call this client approved is refused (`refuse` makes the error): it would ask forever.
 */
export function approveChecks(
  asks: readonly Interrupt[],
  approved: Set<string>,
  refuse: (message: string) => Error,
): AgentMessage {
  const decisions: Decision[] = [];
  for (const ask of asks) {
    if (approved.has(ask.id)) {
      throw refuse(
        `the remote agent asked again to check ${ask.toolCall.name} (${ask.id}), which this call approved already`,
      );
    }
    approved.add(ask.id);
    const args = ask.toolCall.arguments as string | Record<string, unknown> | undefined;
    decisions.push(
      args === undefined ? { id: ask.id, approve: true } : { id: ask.id, approve: true, arguments: args },
    );
  }
  return resumeWith(decisions);
}
