import type { Meter } from '../../core/budget';
import { ResumeDecisions } from '../../core/decisions';
import type { CallJournal } from '../../core/durable-steps';
import { type GuardSpec, guardOf } from '../../core/guards';
import { hookStep } from '../../core/hook-step';
import type { PendingTurn } from '../../core/session-lanes';
import { PromiseInSyncCall, type Steps } from '../../core/steps';
import type { AgentMessage, MessageInput } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
import { InterruptSignal } from '../../schema/interrupts';
import type { SessionKey } from '../../schema/session';
import { isThenable } from '../../utils/is';
import type { AgentBase } from '../agent-base';
import { type Forwarding, plainForwardOf } from './builtin-forward';
import {
  beginDurable,
  durableOf,
  finishDurable,
  recordInterrupts,
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
    if (agent.hooks.length > 0) messages = yield* beforeAgentSteps(turn, messages);
    turn.remember(messages);
    if (turn.guards !== undefined) turn.startInputChecks(messages);
    let output = turn.forward(messages);
    if (turn.guards !== undefined && needsDriving(output)) {
      // A trip (or the caller's abort) ends the call even when its forward does not listen to the signal.
      output = isThenable(output)
        ? turn.untilStopped(output)
        : guardedStream(turn, output as Iterator<unknown>);
    }
    if (needsDriving(output)) output = yield output;
    if (turn.guards !== undefined) yield* settleChecks(turn);
    let reply = turn.reply(output);
    if (agent.hooks.length > 0) reply = yield* afterAgentSteps(turn, reply);
    if (hold !== undefined) yield* hold.binding.commit(agent, hold);
    if (turn.durable !== undefined) {
      yield* finishDurable(turn.durable);
      if (!turn.implicit) reply = withCallId(reply, turn.durable);
    }
    if (turn.budgeted) reply = withUsage(reply, turn.meter!);
    if (turn.callerChecks) reply = withExtraInfo(reply, 'askBeforeTools', true);
    return turn.succeed(reply);
  } catch (error) {
    if (error instanceof InterruptSignal && !turn.finished) {
      const reply = turn.interrupted(error);
      if (reply === undefined) throw error;
      // What the call did before it stopped is kept, in the store too.
      if (hold !== undefined) yield* hold.binding.commit(agent, hold);
      // The journal says what the call waits for: what a resume may answer (once), what another process or a
      // reloaded page shows.
      if (turn.durable !== undefined) yield* recordInterrupts(turn.durable, agent.name, reply);
      turn.finished = true;
      if (turn.budgeted) withUsage(reply, turn.meter!);
      if (turn.callerChecks) withExtraInfo(reply, 'askBeforeTools', true);
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

function* beforeAgentSteps(turn: Turn, messages: AgentMessage[]): Steps<AgentMessage[]> {
  const agent = turn.agent;
  const sessionId = turn.options.sessionId;
  for (const hook of agent.hooks) {
    if (!hook.beforeAgent) continue;
    const guard = guardOf(hook);
    if (guard !== undefined) yield* guardSteps(turn, guard, messages);
    else messages = (yield* hookStep(hook, 'beforeAgent', agent, messages, sessionId)) ?? messages;
  }
  return messages;
}

function* afterAgentSteps(turn: Turn, reply: AgentMessage): Steps<AgentMessage> {
  const agent = turn.agent;
  const sessionId = turn.options.sessionId;
  for (const hook of agent.hooks) {
    if (!hook.afterAgent) continue;
    const guard = guardOf(hook);
    if (guard !== undefined) yield* guardSteps(turn, guard, [reply]);
    else reply = (yield* hookStep(hook, 'afterAgent', agent, reply, sessionId)) ?? reply;
  }
  return reply;
}

/**
 * A guardrail's checks as a step of the call, given the call's signal (the agent runs them itself rather than
 * through the hook's method, which has no signal to give).
 */
function* guardSteps(turn: Turn, guard: GuardSpec, messages: readonly AgentMessage[]): Steps<void> {
  const pending = turn.checkMessages(guard, messages);
  if (pending === undefined) return;
  try {
    yield pending;
  } catch (error) {
    if (!(error instanceof PromiseInSyncCall)) throw error;
    pending.catch(() => {});
    throw new ConfigurationError({
      message: `${turn.agent.name}: guardrail ${guard.name}'s check returned a promise, which a synchronous agent cannot wait for; use the Async variant of the agent or a check that answers at once`,
    });
  }
}
