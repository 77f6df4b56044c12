import type { Meter } from '../../core/budget';
import { ResumeDecisions } from '../../core/decisions';
import type { CallJournal } from '../../core/durable-steps';
import { hookStep } from '../../core/hook-step';
import type { PendingTurn } from '../../core/session-lanes';
import { PromiseInSyncCall, type Steps } from '../../core/steps';
import type { AgentMessage, MessageInput } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
import { InterruptSignal, interruptsOf } from '../../schema/interrupts';
import type { SessionId, SessionKey } from '../../schema/session';
import { isThenable } from '../../utils/is';
import type { AgentBase } from '../agent-base';
import { type Forwarding, plainForwardOf } from './builtin-forward';
import {
  beginDurable,
  durableOf,
  finishDurable,
  recordInterrupt,
  withCallId,
  withExtraInfo,
} from './durable';
import { guardedStream, settleChecks } from './guard-stream';
import { implicitJournal, isInProcess, refuseRerunsBeforeDecisions } from './in-process-journal';
import { bindingFor, type SessionHold } from './persist';
import { needsDriving, Turn } from './turn';

/**
 * `call()`, written once for all four variants:
 *
 * 1. wait for the session's earlier calls on this agent (one call per session at a time, in call order);
 * 2. inputs become copies -> `beforeAgent` hooks -> inputs to memory;
 * 3. `forward`, inside a call frame: calls made in it inherit this call's signal and report their turns;
 * 4. the reply to memory -> a copy of it -> `afterAgent` hooks -> returned.
 *
 * With a store (`memory: { store }`), the outermost such call also takes its session's lease and loads it
 * before step 2, and commits the turn before returning (see `persist.ts`).
 *
 * If anything fails (or a stream is abandoned), the call takes back exactly its own messages and every
 * turn its sub-calls stored; nothing else in any memory moves.
 */
export function* agentCallSteps(
  agent: AgentBase,
  input: MessageInput | readonly MessageInput[] | undefined,
  options: Record<string, unknown> | undefined,
): Steps<AgentMessage> {
  const turn = new Turn(agent, options);
  const pending = turn.acquire();
  if (pending !== undefined) yield* waitForLane(agent, pending, turn.sessionKey);
  let hold: SessionHold | undefined;
  try {
    const binding = bindingFor(agent, turn.parent);
    if (binding !== undefined) {
      hold = yield* binding.begin(agent, turn.sessionKey, turn.options.sessionId, turn.options.signal);
    }
    turn.begin();
    if (agent.hooks.length > 0) turn.armGuards();
    let messages = turn.inputsOf(input);
    let durable = turn.parent?.durable === undefined ? durableOf(agent, turn.options) : undefined;
    // A composite that may stop for approval journals its calls in this process (see in-process-journal.ts).
    if (durable === undefined && turn.parent === undefined) {
      const forward = (agent as unknown as Forwarding).forward;
      durable = implicitJournal(
        agent,
        forward,
        plainForwardOf(forward) !== undefined,
        turn.resume !== undefined,
      );
    }
    if (durable !== undefined) {
      const given = turn.resume?.givenList;
      turn.implicit = isInProcess(durable);
      const begun = yield* beginDurable(turn, durable, messages, given, turn.implicit);
      turn.durable = begun.scope;
      const journal = begun.scope.journal as CallJournal;
      turn.watchReplays(journal);
      messages = begun.messages;
      // The decisions given now, and those of earlier resumes (a replay takes them again, round by round).
      if (given !== undefined || begun.earlier.length > 0)
        turn.resume = new ResumeDecisions(given ?? [], begun.earlier);
      if (begun.fallback) refuseRerunsBeforeDecisions(journal, turn.resume!, agent);
    }
    if (agent.hooks.length > 0) messages = yield* beforeAgentSteps(agent, messages, turn.options.sessionId);
    turn.remember(messages);
    if (turn.guards !== undefined) turn.startInputChecks(messages);
    let output = turn.forward(messages);
    if (turn.guards !== undefined && needsDriving(output) && !isThenable(output))
      output = guardedStream(turn, output as Iterator<unknown>);
    if (needsDriving(output)) output = yield output;
    if (turn.guards !== undefined) yield* settleChecks(turn);
    let reply = turn.reply(output);
    if (agent.hooks.length > 0) reply = yield* afterAgentSteps(agent, reply, turn.options.sessionId);
    if (hold !== undefined) yield* hold.binding.commit(agent, hold);
    if (turn.durable !== undefined) {
      yield* finishDurable(turn.durable);
      if (!turn.implicit) reply = withCallId(reply, turn.durable);
    }
    if (turn.budgeted) reply = withUsage(reply, turn.meter!);
    return turn.succeed(reply);
  } catch (error) {
    if (error instanceof InterruptSignal && !turn.finished) {
      const reply = turn.interrupted(error);
      if (reply === undefined) throw error;
      // The journal says what waits: a resume may answer that, and only once.
      if (turn.durable !== undefined) yield* recordInterrupt(turn.durable, interruptIdsOf(reply));
      // What the call did before it stopped is kept, in the store too.
      if (hold !== undefined) yield* hold.binding.commit(agent, hold);
      turn.finished = true;
      if (turn.budgeted) withUsage(reply, turn.meter!);
      return turn.durable === undefined || turn.implicit ? reply : withCallId(reply, turn.durable);
    }
    const failure = turn.failureOf(error);
    turn.fail(failure);
    throw failure;
  } finally {
    if (hold !== undefined) hold.binding.release(hold);
    turn.close();
  }
}

/** The ids of an interrupt reply's interrupts. */
function interruptIdsOf(reply: AgentMessage): string[] {
  return interruptsOf(reply).map((interrupt) => interrupt.id);
}

/** The reply with what its call spent in `extraInfo.usage` (an object `extraInfo` keeps its other keys). */
function withUsage(reply: AgentMessage, meter: Meter): AgentMessage {
  return withExtraInfo(reply, 'usage', meter.usage());
}

/*
 * The hook loops and the framed forward live outside agentCallSteps: every local of a generator is kept in
 * its frame for each call (and a closure would give every call a heap context), so the steps stay small.
 */

/** Waits for the session's earlier calls; a sync driver cannot wait, so the call is refused. */
function* waitForLane(agent: AgentBase, pending: PendingTurn, sessionKey: SessionKey): Steps<void> {
  try {
    yield pending.ready;
  } catch (error) {
    if (!(error instanceof PromiseInSyncCall)) throw error;
    pending.cancel();
    throw new ConfigurationError({
      message: `${agent.name}: session ${JSON.stringify(String(sessionKey))} has a call in progress (an unfinished stream?); a synchronous agent cannot wait for it: finish that stream or call its return() first`,
    });
  }
}

function* beforeAgentSteps(
  agent: AgentBase,
  messages: AgentMessage[],
  sessionId: SessionId,
): Steps<AgentMessage[]> {
  for (const hook of agent.hooks) {
    if (hook.beforeAgent)
      messages = (yield* hookStep(hook, 'beforeAgent', agent, messages, sessionId)) ?? messages;
  }
  return messages;
}

function* afterAgentSteps(agent: AgentBase, reply: AgentMessage, sessionId: SessionId): Steps<AgentMessage> {
  for (const hook of agent.hooks) {
    if (hook.afterAgent) reply = (yield* hookStep(hook, 'afterAgent', agent, reply, sessionId)) ?? reply;
  }
  return reply;
}
