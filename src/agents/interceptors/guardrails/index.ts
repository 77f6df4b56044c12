import { unwatchAbort, watchAbort } from '../../../core/abort-watch';
import type { Steps } from '../../../core/steps';
import type { ActionReturn } from '../../../schema/action-return';
import { AgentMessage } from '../../../schema/agent-message';
import { isIterator, isThenable } from '../../../utils/is';
import type { AgentBase } from '../../agent-base';
import type { Turn } from '../../lifecycle/turn';
import { AGENT, TOOL } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import { GUARDS, TOOL_GUARDS } from '../slots';
import type { ToolCallContext } from '../tool-context';
import {
  CallerChecks,
  CheckContext,
  checkEach,
  type GuardSpec,
  guardOf,
  runCheck,
  toolCallMessage,
} from './guards';
import { guardedStream, settleChecks } from './stream';

/*
 * Guardrails as an interceptor. Sequential input and output checks are hooks and run where hooks run (the hooks
 * concern, with the call's signal: `checkMessages`); this concern runs the rest. Parallel input checks run while
 * the call does, with the call's cancellation in its signal (a trip aborts it): no chunk of a stream reaches the
 * caller and no tool call inside the call starts before they passed. A stream's chunks are each held until the
 * output checks of it passed (stream.ts). Tool checks are in force in the call and every call made inside it
 * (`TOOL_GUARDS`), sub-agents' and remote agents' included, checked before every tool call. A call made with
 * `askBeforeTools` (a remote client whose caller has tool guardrails) stops before each tool call for its
 * caller to check (`CallerChecks`).
 */

/** A call's guardrails that run alongside it, and what they found. */
export class GuardState {
  readonly turn: Turn;
  /** Parallel input checks and output checks of streams. */
  readonly guards: GuardSpec[] | undefined;
  /** Checks running alongside the call (never rejecting: a trip is kept in {@link tripped}). */
  checks: Promise<void>[] | undefined = undefined;
  /** What stopped the call: a guardrail that tripped, or the abort that ended a pending check. */
  tripped: unknown = undefined;
  /** Settles once every parallel input check passed (rejects with what stopped the call). */
  inputGate: Promise<void> | undefined = undefined;
  /** True while a parallel input check is pending: nothing reaches the caller, no tool call starts. */
  inputsPending = false;

  constructor(turn: Turn, guards: GuardSpec[] | undefined) {
    this.turn = turn;
    this.guards = guards;
  }

  /** Starts the parallel input checks on the call's inputs. */
  startInputChecks(messages: readonly AgentMessage[]): void {
    let gate: Promise<void> | undefined;
    try {
      gate = checkEach(this.guards!, (guard) =>
        guard.on === 'input' && guard.parallel
          ? checkEach(messages, (message) => runCheck(guard, message, this.#context(guard)))
          : undefined,
      );
    } catch (error) {
      this.trip(error);
      throw error;
    }
    if (gate === undefined) return;
    this.inputsPending = true;
    this.inputGate = gate.then(
      () => {
        this.inputsPending = false;
      },
      (error: unknown) => {
        this.trip(error);
        throw this.tripped;
      },
    );
    this.inputGate.catch(noop);
    this.#keep(this.inputGate.then(undefined, noop));
  }

  #keep(check: Promise<void>): void {
    if (this.checks === undefined) this.checks = [check];
    else this.checks.push(check);
  }

  /** A guardrail tripped (or a pending check was ended by an abort): the call stops. */
  trip(error: unknown): void {
    this.tripped ??= error;
    this.turn.stop(this.tripped);
  }

  #context(guard: GuardSpec): CheckContext {
    return new CheckContext(
      this.turn.agent.name,
      this.turn.options.sessionId,
      guard.on,
      this.turn.options.signal,
    );
  }

  /**
   * Checks a streamed chunk with the output guardrails: a trip at once throws; else a promise for checks
   * that answer later (rejected when one trips, which also stops the call at once), or undefined.
   */
  checkChunk(chunk: unknown): Promise<void> | undefined {
    const message =
      chunk instanceof AgentMessage
        ? chunk
        : new AgentMessage({ sender: this.turn.agent.name, content: String(chunk) });
    let all: Promise<void> | undefined;
    try {
      all = checkEach(this.guards!, (guard) =>
        guard.on === 'output' ? runCheck(guard, message, this.#context(guard)) : undefined,
      );
    } catch (error) {
      this.trip(error);
      throw this.tripped;
    }
    all?.catch((error: unknown) => this.trip(error));
    return all;
  }

  /**
   * `waiting`, or what stops the call if that comes first (a trip, the caller's abort): a call ends promptly
   * even when its forward or a check does not listen to its signal.
   */
  untilStopped<T>(waiting: PromiseLike<T>): Promise<T> {
    const signal = this.turn.options.signal;
    if (signal === undefined) return Promise.resolve(waiting);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(this.tripped ?? signal.reason);
      if (signal.aborted) {
        Promise.resolve(waiting).then(undefined, noop); // nobody waits for it any more
        return onAbort();
      }
      watchAbort(signal, onAbort);
      Promise.resolve(waiting).then(
        (value) => {
          unwatchAbort(signal, onAbort);
          resolve(value);
        },
        (error: unknown) => {
          unwatchAbort(signal, onAbort);
          reject(error);
        },
      );
    });
  }
}

/**
 * Runs a guardrail the call runs as one of its steps (a sequential input check on each input, an output check on
 * the reply), with the call's signal: throws a trip at once, returns a promise for checks that answer later.
 */
export function checkMessages(
  turn: Turn,
  guard: GuardSpec,
  messages: readonly AgentMessage[],
): Promise<void> | undefined {
  const context = () =>
    new CheckContext(turn.agent.name, turn.options.sessionId, guard.on, turn.options.signal);
  if (messages.length === 1) return runCheck(guard, messages[0], context());
  return checkEach(messages, (message) => runCheck(guard, message, context()));
}

/**
 * The agent's guardrails of a call: tool guardrails join those inherited (in `TOOL_GUARDS`); parallel input
 * checks and output checks of streams are run alongside the call (a `GuardState`, undefined when it has none).
 * Parallel input checks also hold back every tool call made inside the call until they passed: a tool guard of
 * their own leads the call's tool guardrails.
 */
function arm(turn: Turn): GuardState | undefined {
  let tools: GuardSpec[] | undefined;
  let guards: GuardSpec[] | undefined;
  let parallel = false;
  for (const hook of turn.agent.hooks) {
    const guard = guardOf(hook);
    if (guard === undefined) continue;
    if (guard.on === 'tool') {
      tools ??= [];
      tools.push(guard);
    } else if (guard.parallel || guard.on === 'output') {
      if (guard.parallel) parallel = true;
      guards ??= [];
      guards.push(guard);
    }
  }
  const state = guards === undefined ? undefined : new GuardState(turn, guards);
  if (parallel) tools = [inputGateGuard(state!), ...(tools ?? [])];
  // The caller checks every tool call itself (a remote client whose caller has tool guardrails).
  if (turn.given.askBeforeTools === true) tools = [...(tools ?? []), new CallerChecks()];
  if (tools !== undefined) {
    const inherited = turn.parent?.find(TOOL_GUARDS);
    turn.set(TOOL_GUARDS, inherited === undefined ? tools : [...inherited, ...tools]);
  }
  return state;
}

/**
 * The tool guard of a call with parallel input checks: a tool call made inside it waits for them (passes at
 * once when they passed, and fails with what stopped the call when one tripped).
 */
function inputGateGuard(state: GuardState): GuardSpec {
  return {
    name: 'parallel input checks',
    on: 'tool',
    parallel: false,
    timeoutMs: Number.POSITIVE_INFINITY,
    check: () => (state.inputsPending ? state.inputGate : undefined),
  };
}

function noop(): void {}

const interceptor = {
  name: 'guardrails',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const state = arm(turn);
    if (state === undefined) return withCallerChecks(turn, yield* next());
    // The call's signal becomes its cancellation: a trip aborts it.
    turn.cancellable();
    turn.set(GUARDS, state);
    let reply: AgentMessage;
    try {
      if (state.guards!.some((guard) => guard.parallel && guard.on === 'input'))
        state.startInputChecks(turn.messages);
      reply = yield* guarding(state, next());
      yield* settleChecks(state);
    } catch (error) {
      throw state.tripped ?? error;
    }
    return withCallerChecks(turn, reply);
  },

  *toolCall(context: ToolCallContext, next: () => Steps<ActionReturn>): Steps<ActionReturn> {
    const guards = context.builtin ? undefined : context.call.find(TOOL_GUARDS);
    if (guards === undefined) return yield* next();
    const owner = (context.agent as { name?: unknown }).name;
    const name = typeof owner === 'string' ? owner : context.toolCall.name;
    const toolCall = context.toolCall;
    const message = toolCallMessage(name, toolCall);
    const signal = context.signal ?? context.call.signal;
    for (const guard of guards) {
      const verdict = runCheck(
        guard,
        message,
        new CheckContext(name, context.call.sessionKey, 'tool', signal, toolCall),
      );
      if (verdict !== undefined) yield verdict;
    }
    return yield* next();
  },
};

/**
 * The rest of the call, its `forward`'s output held by the guardrails: a stream's chunks are checked before
 * each is delivered, and what the call waits for ends as soon as a trip (or the caller's abort) stops it.
 */
function* guarding(state: GuardState, steps: Steps<AgentMessage>): Steps<AgentMessage> {
  let step = steps.next();
  while (!step.done) {
    let value = step.value;
    if (isThenable(value)) value = state.untilStopped(value);
    else if (isIterator(value)) value = guardedStream(state, value as Iterator<unknown>);
    let input: unknown;
    try {
      input = yield value;
    } catch (error) {
      step = steps.throw(error);
      continue;
    }
    step = steps.next(input);
  }
  return step.value;
}

/** A reply to a call made with `askBeforeTools` says so (a caller checks that its checks were asked for). */
function withCallerChecks(turn: Turn, reply: AgentMessage): AgentMessage {
  if (turn.given.askBeforeTools !== true) return reply;
  const extra = reply.extraInfo;
  reply.extraInfo =
    extra !== null && typeof extra === 'object' && !Array.isArray(extra)
      ? { ...extra, askBeforeTools: true }
      : { askBeforeTools: true };
  return reply;
}

/** An agent with guardrails among its hooks: their checks apply to its calls and the tool calls inside. */
function guarded(agent: AgentBase): number {
  for (const hook of agent.hooks) if (guardOf(hook) !== undefined) return AGENT | TOOL;
  return 0;
}

export const guardrails: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  static: guarded,
  callOptions: ['askBeforeTools'],
  perCall: (turn) => (turn.given.askBeforeTools === true ? AGENT | TOOL : guarded(turn.agent)),
};
