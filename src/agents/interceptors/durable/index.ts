import { type DurableScope, PLACES, type Places } from '../../../core/call-context';
import type { Steps } from '../../../core/steps';
import { drainStream } from '../../../core/stream-drivers';
import type { ModelReply } from '../../../llms/types';
import { ActionReturn } from '../../../schema/action-return';
import { type AgentMessage, AgentMessage as AgentMessageClass } from '../../../schema/agent-message';
import { INTERRUPT_TYPE } from '../../../schema/interrupts';
import { ActionStatusCode } from '../../../schema/status';
import { isIterator, isThenable } from '../../../utils/is';
import type { AgentBase } from '../../agent-base';
import { EMITTER } from '../../agent-symbols';
import { digestInput, type Forwarding, plainForwardOf } from '../../lifecycle/builtin-forward';
import { SHARES_LANE } from '../../lifecycle/call-marks';
import { emitEvent } from '../../lifecycle/events';
import { toModelReply } from '../../lifecycle/model-call';
import type { Turn } from '../../lifecycle/turn';
import { observers } from '../../observers';
import { AGENT, MODEL, PER_CALL, TOOL } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import type { ModelContext } from '../model-context';
import { commitSession, HELD_SESSION } from '../session-store/commit';
import { EARLIER, RESUME, SCOPE, SESSION_STATE } from '../slots';
import type { ToolCallContext } from '../tool-context';
import { implicitJournal, isInProcess, refuseRerunsBeforeDecisions } from './in-process';
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
} from './journal';
import { DURABLE } from './option';
import { type CallJournal, childScope, digestOf, nextKey, replayed, settled } from './steps';

/*
 * The durable journal as an interceptor. The outermost call with `durable` (or a composite that may pause for
 * approval, in process: in-process.ts) holds its session's lease and journals itself (journal.ts): its agent
 * hook opens, replays, answers from or recovers its journal and records its outcome; its model and tool hooks
 * are the journaled steps (steps.ts). A call made inside a durable call takes its place in its caller's journal
 * (a child scope) when it is made, before anything it awaits, so calls made at once keep their places on a
 * replay.
 */

export { SCOPE };

/** The call options of a call recovered first, inside the lane and lease of the call that found it. */
const HELD_LEASE: unique symbol = Symbol('lagent-ts.heldLease');

/** The units of work made inside a scope take their places in it when they are made. */
function placesOf(scope: DurableScope): Places {
  return { reserve: () => childScope(scope) };
}

const interceptor = {
  name: 'durable journal',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const inCaller = turn.parent?.find(SCOPE);
    if (inCaller !== undefined) {
      // A call made inside a durable call: its place, now, in program order.
      const scope = childScope(inCaller);
      turn.set(SCOPE, scope);
      turn.set(PLACES, placesOf(scope));
      return yield* next();
    }
    const { agent } = turn;
    const durable = optionsOf(turn)!;
    const implicit = isInProcess(durable);
    const held = turn.given[HELD_LEASE as unknown as string] as DurableLease | undefined;
    const hold = turn.find(SESSION_STATE)?.hold;
    // An in-process journal is this process's alone: no lease fences it (the session's lane orders its calls).
    let lease: DurableLease | undefined = held;
    if (lease === undefined && !implicit) lease = yield* durableLease(turn, durable, hold);
    let scope: DurableScope | undefined;
    let ok = false;
    try {
      const recovering = turn.given[RECOVERING as unknown as string] === true;
      let begun: DurableStart;
      for (;;) {
        begun = yield* beginDurable(turn, durable, lease, hold, turn.messages, turn.decisions, recovering);
        if (begun.recover === undefined) break;
        yield* recoverFirst(agent, turn, begun.recover, durable, lease);
      }
      // A call that finished before: its reply again, and nothing runs.
      if (begun.finished !== undefined) {
        ok = true;
        return begun.finished;
      }
      scope = begun.scope!;
      turn.set(SCOPE, scope);
      turn.set(PLACES, placesOf(scope));
      const journal = scope.journal as CallJournal;
      watchReplays(turn, journal);
      turn.messages = begun.messages;
      // The decisions of earlier resumes: the approvals concern takes them with those given now.
      if (begun.earlier.length > 0) turn.set(EARLIER, begun.earlier);
      if (begun.fallback) refuseRerunsBeforeDecisions(journal, () => turn.find(RESUME), agent);
      let reply = yield* next();
      // The session's turn lands first, then the journal says how the call ended: a crash between them leaves
      // the call to be recovered, which finds its turn committed.
      yield* commitSession(turn, commitOf(journal));
      if (reply.type === INTERRUPT_TYPE) {
        yield* interruptDurable(scope, agent.name, reply);
        ok = true;
        return implicit ? reply : withCallId(reply, scope);
      }
      if (!implicit) reply = withCallId(reply, scope);
      yield* finishDurable(scope, reply, durable);
      ok = true;
      return reply;
    } catch (error) {
      // A call recover() made that needs no recovery after all: not a failure.
      if (error instanceof CallNotRecovered) throw error;
      // Committed, then failed (its journal could not be finished): left to be recovered, which finds its turn.
      if (scope !== undefined && turn.find(SESSION_STATE)?.committed !== true)
        yield* failDurable(scope, error, durable);
      throw error;
    } finally {
      if (held === undefined && lease?.own) lease.lease.release();
      // A replay that failed puts back what it took out of the memories.
      if (!ok) undoReplay(scope);
    }
  },

  *modelCall(context: ModelContext, next: () => Steps<ModelReply>): Steps<ModelReply> {
    const scope = context.call.get(SCOPE);
    if (scope === undefined) return yield* next();
    const name = context.agent.name;
    const key = nextKey(scope);
    const digest = digestOf(digestInput(context.call.messages));
    const journal = scope.journal as CallJournal;
    const entry = journal.recorded(key, 'model', name, digest);
    if (entry !== undefined) {
      replayed(scope, entry);
      return recordedReply(entry.result);
    }
    const reply = yield* next();
    const spent = journal.spent();
    yield* settled(journal.write({ key, kind: 'model', name, digest, result: reply, spent }));
    return reply;
  },

  *toolCall(context: ToolCallContext, next: () => Steps<ActionReturn>): Steps<ActionReturn> {
    const scope = (context.place as DurableScope | undefined) ?? context.call.find(SCOPE);
    if (scope === undefined) return yield* next();
    // The key is taken now, in program order: the checks of calls run at once may answer in any order.
    const key = nextKey(scope);
    const { name, arguments: input } = context.toolCall;
    const digest = digestOf(input);
    const journal = scope.journal as CallJournal;
    const entry = journal.recorded(key, 'tool', name, digest);
    if (entry !== undefined) {
      replayed(scope, entry);
      return ActionReturn.from(entry.result);
    }
    if (journal.started.has(key) && !context.retrySafe) {
      const result = new ActionReturn({
        args: input as Record<string, unknown>,
        type: name,
        errmsg: `${name} was running when the process stopped, and its outcome is unknown (it is not marked retrySafe, so it was not run again). Check before calling it again.`,
        state: ActionStatusCode.API_ERROR,
      });
      yield* settled(journal.write({ key, kind: 'tool', name, digest, result: result.toJSON() }));
      return result;
    }
    // Written just before the tool runs, and fenced: a call whose lease another process took never starts it.
    context.onRun(() => journal.write({ key, kind: 'started', name, digest }));
    const result = yield* next();
    const spent = journal.spent();
    yield* settled(journal.write({ key, kind: 'tool', name, digest, result: result.toJSON(), spent }));
    return result;
  },
};

/** A model step's recorded result as a reply (text recorded by an earlier layout, or a whole reply). */
function recordedReply(result: unknown): ModelReply {
  const reply = toModelReply(result);
  return reply.toolCalls === undefined ? { ...reply, toolCalls: [] } : reply;
}

/**
 * How a durable call commits its turn. Its turn id is its call id and how many resume messages it had (one
 * turn per run between two pauses), the same when it is replayed, and it commits at the version its session
 * had when it began (or was resumed): a replay never commits its turn twice, nor over turns made since.
 */
function commitOf(journal: CallJournal): { turnId: string; version: number | undefined } {
  return { turnId: `${journal.callId}#${journal.resumes}`, version: journal.version };
}

/** Reports each step the call's journal replays as a `stepReplayed` event (when anyone listens). */
function watchReplays(turn: Turn, journal: CallJournal): void {
  const agent = turn.agent;
  if (agent[EMITTER] === undefined && observers.count === 0) return;
  const sessionId = turn.options.sessionId;
  const callId = journal.callId;
  journal.onReplay = (entry) => {
    const step = { key: entry.key, kind: entry.kind, name: entry.name };
    emitEvent(agent, 'stepReplayed', { agent, sessionId, callId, step, path: '' });
  };
}

/** The `durable` option that applies to an outermost call (or a composite's in-process journal), if any. */
function optionsOf(turn: Turn): DurableOptions | undefined {
  const own = durableOf(turn.agent, turn.given);
  if (own !== undefined || turn.parent !== undefined) return own;
  const forward = (turn.agent as unknown as Forwarding).forward;
  // A call given client tools may pause for them, as a resumed call did.
  return implicitJournal(
    turn.agent,
    forward,
    plainForwardOf(forward) !== undefined,
    turn.decisions !== undefined || turn.given.clientTools !== undefined,
  );
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
  lease: DurableLease | undefined,
): Steps<void> {
  const sessionId = turn.options.sessionId;
  const options = {
    sessionId,
    callId,
    durable,
    signal: turn.options.signal,
    [SHARES_LANE]: true,
    [HELD_SESSION]: turn.find(SESSION_STATE)?.hold,
    [HELD_LEASE]: lease,
  };
  // Through the agent's own call (its steps run in this call's lane): a stream is run to its end, not relayed.
  const called = (agent as unknown as { call(input: undefined, options: object): unknown }).call(
    undefined,
    options,
  );
  let reply: unknown = called;
  if (isThenable(called)) reply = yield called;
  else if (isIterator(called) && !(called instanceof AgentMessageClass)) {
    const final = drainStream(called as Iterator<unknown>);
    reply = isThenable(final) ? yield final : final;
  }
  if (agent[EMITTER] !== undefined || observers.count > 0)
    emitEvent(agent, 'callRecovered', {
      agent,
      sessionId,
      callId,
      message: reply as AgentMessage,
      path: '',
    });
}

export const durable: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  static(agent) {
    if ((agent as unknown as Record<symbol, unknown>)[DURABLE] !== undefined) return AGENT | MODEL | TOOL;
    // Another forward journals in process when its tree may ask, which changes with the rules of the process.
    return plainForwardOf((agent as unknown as Forwarding).forward) === undefined ? PER_CALL : 0;
  },
  callOptions: ['durable', 'clientTools'],
  enclosing: true,
  perCall(turn) {
    if (turn.parent?.find(SCOPE) !== undefined) return AGENT | MODEL | TOOL;
    return optionsOf(turn) === undefined ? 0 : AGENT | MODEL | TOOL;
  },
};
