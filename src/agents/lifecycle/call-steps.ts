import type { Meter } from '../../core/budget';
import { ResumeDecisions } from '../../core/decisions';
import type { CallJournal } from '../../core/durable-steps';
import { type GuardSpec, guardOf } from '../../core/guards';
import { hookStep } from '../../core/hook-step';
import type { PendingTurn } from '../../core/session-lanes';
import { PromiseInSyncCall, type Steps } from '../../core/steps';
import { drainStream } from '../../core/stream-drivers';
import type { AgentMessage, MessageInput } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
import { InterruptSignal } from '../../schema/interrupts';
import type { SessionKey } from '../../schema/session';
import { isThenable } from '../../utils/is';
import { type AgentBase, EMITTER } from '../agent-base';
import { observers } from '../observers';
import { type Forwarding, plainForwardOf } from './builtin-forward';
import {
  beginDurable,
  CallNotRecovered,
  type DurableLease,
  type DurableOptions,
  type DurableStart,
  durableLease,
  durableOf,
  failDurable,
  finishDurable,
  interruptDurable,
  RECOVERING,
  undoReplay,
  withCallId,
  withExtraInfo,
} from './durable';
import { emitEvent } from './events';
import { guardedStream, settleChecks } from './guard-stream';
import { implicitJournal, isInProcess, refuseRerunsBeforeDecisions } from './in-process-journal';
import { bindingFor, type SessionHold } from './persist';
import { needsDriving, Turn } from './turn';

/** The call option of a call recovered before another one of its session, which it runs inside (internal). */
const HELD: unique symbol = Symbol('lagent-ts.held');

/** What a call recovered first shares with the call it runs inside: the session's lane, hold and lease. */
interface Held {
  hold: SessionHold | undefined;
  lease: DurableLease;
}

/**
 * `call()`, written once for all four variants:
 *
 * 1. wait for the session's earlier calls on this agent (one call per session at a time, in call order);
 * 2. inputs become copies -> `beforeAgent` hooks -> inputs to memory;
 * 3. `forward`, inside a call frame: calls made in it inherit this call's signal and report their turns;
 * 4. the reply to memory -> a copy of it -> `afterAgent` hooks -> returned.
 *
 * With a store (`memory: { store }`), the outermost such call also takes its session's lease and loads it
 * before step 2, and commits the turn before returning (see `persist.ts`). An outermost durable call holds its
 * session's lease too, and journals the call (see `durable.ts`): a call a process left unfinished on the
 * session is recovered first, inside this call's lane and lease.
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
  const held = options?.[HELD as unknown as string] as Held | undefined;
  if (held === undefined) {
    const pending = turn.acquire();
    if (pending !== undefined) yield* waitForLane(agent, pending, turn.sessionKey);
  } else turn.sharesLane = true;
  let hold: SessionHold | undefined = held?.hold;
  let lease: DurableLease | undefined;
  let durable: DurableOptions | undefined;
  let committed = false;
  try {
    if (held === undefined) {
      const binding = bindingFor(agent, turn.parent);
      if (binding !== undefined) {
        hold = yield* binding.begin(agent, turn.sessionKey, turn.options.sessionId, turn.options.signal);
      }
    }
    turn.begin();
    if (agent.hooks.length > 0) turn.armGuards();
    let messages = turn.inputsOf(input);
    durable = turn.parent?.durable === undefined ? durableOf(agent, turn.options) : undefined;
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
      turn.implicit = isInProcess(durable);
      // An in-process journal is this process's alone: no lease fences it (the session's lane orders its calls).
      if (!turn.implicit) lease = held?.lease ?? (yield* durableLease(turn, durable, hold));
      const given = turn.resume?.givenList;
      const recovering = options?.[RECOVERING as unknown as string] === true;
      let begun: DurableStart;
      for (;;) {
        begun = yield* beginDurable(turn, durable, lease, hold, messages, given, recovering);
        if (begun.recover === undefined) break;
        yield* recoverFirst(agent, turn, begun.recover, durable, { hold, lease: lease! });
      }
      // A call that finished before: its reply again, and nothing runs.
      if (begun.finished !== undefined) return turn.succeed(begun.finished);
      turn.durable = begun.scope;
      const journal = begun.scope!.journal as CallJournal;
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
    if (hold !== undefined) {
      // A durable call keeps the lease until its journal is finished (the finish is fenced by it too).
      const release = held === undefined && turn.durable === undefined;
      yield* hold.binding.commit(agent, hold, commitOf(turn, release));
      committed = true;
    }
    if (turn.durable !== undefined && !turn.implicit) reply = withCallId(reply, turn.durable);
    if (turn.budgeted) reply = withUsage(reply, turn.meter!);
    if (turn.callerChecks) reply = withExtraInfo(reply, 'askBeforeTools', true);
    if (turn.durable !== undefined) yield* finishDurable(turn.durable, reply, durable!);
    return turn.succeed(reply);
  } catch (error) {
    if (error instanceof InterruptSignal && !turn.finished) {
      const reply = turn.interrupted(error);
      if (reply === undefined) throw error;
      // What the call did before it stopped is kept, in the store too.
      if (hold !== undefined) {
        const release = held === undefined && turn.durable === undefined;
        yield* hold.binding.commit(agent, hold, commitOf(turn, release));
      }
      // The journal says what the call waits for: what a resume may answer (once), what another process or a
      // reloaded page shows.
      if (turn.durable !== undefined) yield* interruptDurable(turn.durable, agent.name, reply);
      turn.finished = true;
      if (turn.budgeted) withUsage(reply, turn.meter!);
      if (turn.callerChecks) withExtraInfo(reply, 'askBeforeTools', true);
      return turn.durable === undefined || turn.implicit ? reply : withCallId(reply, turn.durable);
    }
    // A call recover() made that needs no recovery after all: not a failure.
    if (error instanceof CallNotRecovered) throw error;
    const failure = turn.failureOf(error);
    turn.fail(failure);
    // Committed, then failed (its journal could not be finished): the session is reloaded next time, and the
    // call is left to be recovered, which finds its turn committed.
    if (committed) hold!.binding.stale(hold!);
    else if (turn.durable !== undefined) yield* failDurable(turn.durable, failure, durable!);
    throw failure;
  } finally {
    if (held === undefined) {
      if (hold !== undefined) hold.binding.release(hold);
      if (lease?.own) lease.lease.release();
    }
    turn.close();
    if (!turn.finished) undoReplay(turn.durable);
  }
}

/**
 * How a call commits its turn. A durable call's turn id is its call id and how many resume messages it had (one
 * turn per run between two pauses), the same when it is replayed, and it commits at the version its session
 * had when it began (or was resumed): a replay never commits its turn twice, nor over turns made since.
 */
function commitOf(turn: Turn, release: boolean) {
  if (turn.durable === undefined) return { release };
  const journal = turn.durable.journal as CallJournal;
  return { turnId: `${journal.callId}#${journal.resumes}`, version: journal.version, release };
}

/**
 * Recovers a durable call of the session that a process left unfinished, inside the call that found it (its
 * lane, hold and lease): replayed to its end, without relaying its stream; a `callRecovered` event says so.
 */
function* recoverFirst(
  agent: AgentBase,
  turn: Turn,
  callId: string,
  durable: DurableOptions,
  held: Held,
): Steps<void> {
  const sessionId = turn.options.sessionId;
  const options = { sessionId, callId, durable, signal: turn.options.signal, [HELD]: held };
  const reply = (yield* quietly(agentCallSteps(agent, undefined, options))) as AgentMessage;
  if (agent[EMITTER] !== undefined || observers.count > 0)
    emitEvent(agent, 'callRecovered', { agent, sessionId, callId, message: reply, path: '' });
}

/** Runs steps inside other steps, running any stream they yield to its end rather than relaying it. */
function* quietly<T>(steps: Steps<T>): Steps<T> {
  let step = steps.next();
  try {
    while (!step.done) {
      const value = step.value;
      let input: unknown;
      let failed = false;
      try {
        if (isThenable(value)) input = yield value;
        else {
          const final = drainStream(value as Iterator<unknown>);
          input = isThenable(final) ? yield final : final;
        }
      } catch (error) {
        failed = true;
        input = error;
      }
      step = failed ? steps.throw(input) : steps.next(input);
    }
  } finally {
    if (!step.done) steps.return(undefined as T);
  }
  return step.value;
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
