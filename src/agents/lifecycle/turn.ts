import { unwatchAbort, watchAbort } from '../../core/abort-watch';
import { checkBudget, Meter } from '../../core/budget';
import {
  type CallFrame,
  combineSignals,
  currentFrame,
  type DurableScope,
  followingSignal,
  isRunningIn,
  type JournalEntry,
  journal,
  retract,
  runInFrame,
  stopFollowing,
  streamInFrame,
} from '../../core/call-context';
import { ResumeDecisions } from '../../core/decisions';
import { type CallJournal, childScope, modelStep } from '../../core/durable-steps';
import { CallerChecks, CheckContext, checkEach, type GuardSpec, guardOf, runCheck } from '../../core/guards';
import type { PendingTurn } from '../../core/session-lanes';
import { activeTracer, endSpan, type Span, startAgentSpan } from '../../core/tracing';
import type { Memory } from '../../memory/memory';
import { MEMORY_AT, MemoryManager } from '../../memory/memory-manager';
import { AgentMessage, type MessageInput, messageOf, toAgentMessage } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
import {
  checkInterruptId,
  decisionsOf,
  INTERRUPT_TYPE,
  type Interrupt,
  type InterruptSignal,
  interruptId,
  RESUME_TYPE,
} from '../../schema/interrupts';
import { type SessionId, type SessionKey, sessionKey as toSessionKey } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import { isIterator, isThenable } from '../../utils/is';
import { keepShape } from '../../utils/keep-shape';
import { type AgentBase, type AsyncForwardOptions, EMITTER, type ForwardOptions, LANES } from '../agent-base';
import { observers } from '../observers';
import {
  digestInput,
  type Forwarding,
  type ForwardParts,
  plainForwardOf,
  summarizes,
} from './builtin-forward';
import { emitEvent, pathIn } from './events';

/*
 * One agent call's state and steps (the Turn), and what settles it: taking back a failed call's messages, or
 * handing a finished sub-call's to its caller.
 */

const DEFAULT_OPTIONS: ForwardOptions = Object.freeze({ sessionId: 0 });

/** True when a step's result must go through the driver (a promise to await or a stream to relay). */
export function needsDriving(value: unknown): boolean {
  return isThenable(value) || (isIterator(value) && !(value instanceof AgentMessage));
}

/** The inputs of a call as fresh messages the caller's objects do not share. */
export function toMessages(input: MessageInput | readonly MessageInput[] | undefined | null): AgentMessage[] {
  if (input === undefined || input === null) return [];
  if (Array.isArray(input)) return input.map(toAgentMessage);
  return [toAgentMessage(input as MessageInput)];
}

/**
 * One agent call in progress: its options, its session and what it has done so far. The call's steps
 * ({@link agentCallSteps}, or {@link callAsync}'s direct run of the same steps) are its methods, so each
 * is written once; what sequences them only decides when to wait.
 */
export class Turn {
  readonly agent: AgentBase;
  /** The agent call this one is made inside, if any. */
  readonly parent: CallFrame | undefined;
  /** What `forward` receives: the session set, and the effective signal (own and inherited). */
  options: AsyncForwardOptions;
  readonly sessionKey: SessionKey;
  /** Events reach this agent's listeners, and those of the agents that hold it in their tree. */
  observed = false;
  span: Span | undefined = undefined;
  /** A frame only for forwards that may make calls of their own (see PLAIN_FORWARDS), or to parent spans. */
  frame: CallFrame | undefined = undefined;
  /** The built-in forward's parts, when the call runs them as its own steps. */
  parts: ForwardParts | undefined = undefined;
  memory: Memory | undefined = undefined;
  /** The inputs as stored in memory: taken back when the call fails. */
  inputs: AgentMessage[] | undefined = undefined;
  /** The reply as stored in memory. */
  result: AgentMessage | undefined = undefined;
  finished = false;
  failure: unknown = undefined;
  /** The journal of a durable call this call opened (the outermost durable call only). */
  durable: DurableScope | undefined = undefined;
  /** True when that journal is an in-process one of a composite that may pause (no `callId` on replies). */
  implicit = false;
  /**
   * This call's place in its caller's durable journal, taken when the call is made (program order), before
   * anything it awaits: sibling calls made at once keep their keys whatever order their checks answer in.
   */
  readonly step: DurableScope | undefined;
  /** The decisions of a resume message the call was given (and, replayed, those its journal recorded). */
  resume: ResumeDecisions | undefined = undefined;
  /**
   * The budget's meter the call counts in (its own when it was given `budget`, else its caller's; a replayed
   * durable call's recorded one).
   */
  meter: Meter | undefined;
  /** True when the call has a `budget` of its own: its reply says what it spent. */
  budgeted: boolean;
  /** The call runs in the session lane of another call of it (a durable call recovered first): not its own. */
  sharesLane = false;
  /** The tool guardrails of this call and its callers (checked before every tool call made inside it). */
  toolGuards: readonly GuardSpec[] | undefined;
  /** Guardrails the lifecycle runs itself: parallel input checks, output checks of streams. */
  guards: GuardSpec[] | undefined = undefined;
  /**
   * The call's own cancellation, following its signal: aborted when a guardrail running alongside it trips,
   * and when the call fails, so that sub-calls still running inside it stop. Made when the call has such
   * guardrails, or when a call made inside it first reads its frame's signal.
   */
  #cancel: AbortController | undefined = undefined;
  /** Checks running alongside the call (never rejecting: a trip is kept in {@link tripped}). */
  checks: Promise<void>[] | undefined = undefined;
  /** What stopped the call: a guardrail that tripped, or the abort that ended a pending check. */
  tripped: unknown = undefined;
  /** Settles once every parallel input check passed (rejects with what stopped the call). */
  inputGate: Promise<void> | undefined = undefined;
  /** True while a parallel input check is pending: nothing reaches the caller, no tool call starts. */
  inputsPending = false;
  /** The call was made with `askBeforeTools`: its reply says so, for the client that asked. */
  callerChecks = false;

  /** Checks the call can start: not aborted, and not waiting for itself. */
  constructor(agent: AgentBase, options: Record<string, unknown> | undefined) {
    const parent = currentFrame();
    const ownSignal = options?.signal as AbortSignal | undefined;
    const signal = combineSignals(ownSignal, parent?.signal);
    this.agent = agent;
    this.parent = parent;
    this.options = forwardOptionsOf(options, signal, ownSignal) as AsyncForwardOptions;
    signal?.throwIfAborted();
    const sessionKey = toSessionKey(this.options.sessionId);
    if (isRunningIn(parent, agent, sessionKey)) {
      throw new ConfigurationError({
        message: `${agent.name}.call on session ${JSON.stringify(String(sessionKey))} was made from inside a call of the same agent and session, which it would wait for forever; use another session or agent`,
      });
    }
    this.sessionKey = sessionKey;
    const budget = options?.budget;
    this.budgeted = budget !== undefined;
    this.meter =
      budget === undefined
        ? parent?.meter
        : new Meter(checkBudget(agent.name, budget)!, parent?.meter, agent.name);
    this.toolGuards = parent?.toolGuards;
    // The caller checks every tool call itself (a remote client whose caller has tool guardrails).
    if (options?.askBeforeTools === true) {
      const checks = new CallerChecks();
      this.toolGuards = this.toolGuards === undefined ? [checks] : [...this.toolGuards, checks];
      this.callerChecks = true;
    }
    this.step = parent?.durable === undefined ? undefined : childScope(parent.durable);
  }

  /**
   * Finds the agent's guardrails: tool guardrails join those inherited, parallel input checks and output
   * checks of streams are run by the call (with its cancellation in its signal); the others run as steps of
   * the call ({@link checkMessages}). Parallel input checks also hold back every tool call made inside the
   * call until they passed: a tool guard of their own leads the call's tool guardrails.
   */
  armGuards(): void {
    let tools: GuardSpec[] | undefined;
    let parallel = false;
    for (const hook of this.agent.hooks) {
      const guard = guardOf(hook);
      if (guard === undefined) continue;
      if (guard.on === 'tool') {
        if (tools === undefined) tools = [guard];
        else tools.push(guard);
      } else if (guard.parallel || guard.on === 'output') {
        if (guard.parallel) parallel = true;
        if (this.guards === undefined) this.guards = [guard];
        else this.guards.push(guard);
      }
    }
    if (parallel) tools = tools === undefined ? [inputGateGuard(this)] : [inputGateGuard(this), ...tools];
    if (tools !== undefined) this.toolGuards = this.toolGuards ? [...this.toolGuards, ...tools] : tools;
    if (this.guards === undefined) return;
    this.#cancel = followingSignal(this.options.signal);
    const options = Object.assign({}, this.options);
    options.signal = this.#cancel.signal;
    this.options = options;
  }

  /** The signal calls made inside this one inherit: the call's, with its cancellation. */
  frameSignal(): AbortSignal {
    this.#cancel ??= followingSignal(this.options.signal);
    return this.#cancel.signal;
  }

  /** Starts the parallel input checks on the call's inputs. */
  startInputChecks(messages: AgentMessage[]): void {
    let gate: Promise<void> | undefined;
    try {
      gate = checkEach(this.guards!, (guard) =>
        guard.on === 'input'
          ? checkEach(messages, (message) => runCheck(guard, message, this.#checkContext(guard)))
          : undefined,
      );
    } catch (error) {
      this.#trip(error);
      throw error;
    }
    if (gate === undefined) return;
    this.inputsPending = true;
    this.inputGate = gate.then(
      () => {
        this.inputsPending = false;
      },
      (error: unknown) => {
        this.#trip(error);
        throw this.tripped;
      },
    );
    this.inputGate.catch(noop);
    this.#keep(this.inputGate.then(undefined, noop));
  }

  /** Keeps a check the call waits for before its reply. */
  #keep(check: Promise<void>): void {
    if (this.checks === undefined) this.checks = [check];
    else this.checks.push(check);
  }

  /** A guardrail tripped (or a pending check was ended by an abort): the call stops. */
  #trip(error: unknown): void {
    this.tripped ??= error;
    this.#cancel?.abort(this.tripped);
  }

  #checkContext(guard: GuardSpec): CheckContext {
    return new CheckContext(this.agent.name, this.options.sessionId, guard.on, this.options.signal);
  }

  /**
   * Runs a guardrail the call runs as one of its steps (a sequential input check on each input, an output
   * check on the reply): throws a trip at once, returns a promise for checks that answer later.
   */
  checkMessages(guard: GuardSpec, messages: readonly AgentMessage[]): Promise<void> | undefined {
    if (messages.length === 1) return runCheck(guard, messages[0], this.#checkContext(guard));
    return checkEach(messages, (message) => runCheck(guard, message, this.#checkContext(guard)));
  }

  /**
   * Checks a streamed chunk with the output guardrails: a trip at once throws; else a promise for checks
   * that answer later (rejected when one trips, which also stops the call at once), or undefined.
   */
  checkChunk(chunk: unknown): Promise<void> | undefined {
    const message =
      chunk instanceof AgentMessage
        ? chunk
        : new AgentMessage({ sender: this.agent.name, content: String(chunk) });
    let all: Promise<void> | undefined;
    try {
      all = checkEach(this.guards!, (guard) =>
        guard.on === 'output' ? runCheck(guard, message, this.#checkContext(guard)) : undefined,
      );
    } catch (error) {
      this.#trip(error);
      throw this.tripped;
    }
    all?.catch((error: unknown) => this.#trip(error));
    return all;
  }

  /**
   * `waiting`, or what stops the call if that comes first (a trip, the caller's abort): a call ends promptly
   * even when its forward or a check does not listen to its signal.
   */
  untilStopped<T>(waiting: PromiseLike<T>): Promise<T> {
    const signal = this.options.signal;
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

  /** Reports each step the call's journal replays as a `stepReplayed` event (when anyone listens). */
  watchReplays(journal: CallJournal): void {
    if (!this.observed) return;
    const agent = this.agent;
    const sessionId = this.options.sessionId;
    const callId = journal.callId;
    journal.onReplay = (entry) => {
      const step = { key: entry.key, kind: entry.kind, name: entry.name };
      emitEvent(agent, 'stepReplayed', { agent, sessionId, callId, step, path: '' });
    };
  }

  /** The failure to report: what tripped, when a guardrail aborted the call. */
  failureOf(error: unknown): unknown {
    return this.tripped ?? error;
  }

  /** Takes the session (undefined), or queues for it behind its earlier calls. */
  acquire(): PendingTurn | undefined {
    return this.agent[LANES].acquire(this.sessionKey, this.options.signal);
  }

  /** The session is ours: the call begins (its span, when tracing is on). */
  begin(): void {
    const agent = this.agent;
    this.observed = agent[EMITTER] !== undefined || observers.count > 0;
    this.span = agentSpan(agent, this.options.sessionId, this.parent);
  }

  /** The inputs as fresh messages the caller's objects do not share. */
  inputsOf(input: MessageInput | readonly MessageInput[] | undefined): AgentMessage[] {
    let messages = toMessages(input);
    if (messages.length === 1 && messages[0]!.type === RESUME_TYPE) messages = this.#resumeWith(messages[0]!);
    if (this.observed) {
      emitEvent(this.agent, 'callStart', {
        agent: this.agent,
        sessionId: this.options.sessionId,
        messages,
        path: '',
      });
    }
    return messages;
  }

  /** A resume message is not a message of the conversation: its decisions go to the call's frame. */
  #resumeWith(message: AgentMessage): AgentMessage[] {
    const decisions = decisionsOf(message)!;
    this.resume = new ResumeDecisions(decisions);
    this.span?.addEvent?.('lagent.resume', { 'lagent.decisions': decisions.map((d) => d.id) });
    if (this.observed) {
      emitEvent(this.agent, 'resume', {
        agent: this.agent,
        sessionId: this.options.sessionId,
        decisions,
        path: '',
      });
    }
    return [];
  }

  /**
   * The call stopped to ask a person. Nested, it keeps what it did (handed to its caller like a success);
   * the outermost call returns the questions as its reply, which no memory keeps.
   */
  interrupted(signal: InterruptSignal): AgentMessage | undefined {
    if (this.parent !== undefined) {
      this.finished = true;
      return undefined;
    }
    const agent = this.agent;
    const interrupts: Interrupt[] = signal.asks.map(({ agent: asking, toolCall, path: below, kind }) => {
      // `below`: where in a remote agent's tree the question was asked (the remote's own path).
      const at = asking === agent ? '' : (pathIn(agent, asking as AgentBase) ?? '');
      const path = below === undefined || below === '' ? at : at === '' ? below : `${at}.${below}`;
      return kind === 'check'
        ? { id: checkInterruptId(path, toolCall), kind, path, toolCall: { ...toolCall } }
        : { id: interruptId(path, toolCall), kind: 'approval', path, toolCall: { ...toolCall } };
    });
    if (this.observed) {
      emitEvent(agent, 'interrupt', { agent, sessionId: this.options.sessionId, interrupts, path: '' });
    }
    this.span?.addEvent?.('lagent.interrupt', { 'lagent.interrupts': interrupts.map((i) => i.id) });
    return new AgentMessage({
      sender: agent.name,
      type: INTERRUPT_TYPE,
      content: `${interrupts.every((i) => i.kind === 'check') ? "Waiting for the caller's check" : 'Waiting for approval'}: ${interrupts.map((i) => `${i.toolCall.name} (${i.id})`).join(', ')}`,
      formatted: { interrupts },
    });
  }

  /** The inputs (after `beforeAgent` hooks) to the session's memory. */
  remember(messages: AgentMessage[]): void {
    const manager = this.agent.memory;
    if (!manager) return;
    const sessionId = this.options.sessionId;
    // The key at hand saves making it again, unless a subclass has its own getOrCreate.
    const memory =
      manager.getOrCreate === MemoryManager.prototype.getOrCreate
        ? manager[MEMORY_AT](this.sessionKey, sessionId)
        : manager.getOrCreate(sessionId);
    if (memory) {
      memory.add(messages);
      this.memory = memory;
      this.inputs = messages;
    }
  }

  /**
   * Runs `forward`: a built-in one with parts asks the model (the answer, or a promise of it, goes to
   * {@link reply}); other plain ones run as they are, any other inside the call's frame.
   */
  forward(messages: AgentMessage[]): unknown {
    const agent = this.agent;
    const forward = (agent as unknown as Forwarding).forward;
    // A summarising aggregator folds turns inside the call's own frame, which a failure then takes back.
    const plain = this.span === undefined && !summarizes(agent) ? plainForwardOf(forward) : undefined;
    const scope = this.durable ?? this.step;
    if (plain !== undefined && plain !== null) {
      this.parts = plain;
      const meter = this.meter;
      if (scope === undefined) return plain.ask(agent, this.memory, messages, this.options, meter);
      return modelStep(scope, agent.name, digestInput(messages), () =>
        plain.ask(agent, this.memory, messages, this.options, meter),
      );
    }
    // A plain streaming forward finds a budget or a durable journal in a frame of its own.
    if (plain === null && this.meter === undefined && scope === undefined)
      return forward.call(agent, messages, this.options);
    if (this.inputs && plain === undefined) this.inputs = this.inputs.slice(); // a custom forward may change the array it is given
    const frame = new TurnFrame(this, scope);
    this.frame = frame;
    return forwardInFrame(frame, agent, forward, messages, this.options);
  }

  /** The forward's output (or the model's answer) as the reply: stored, and a copy the caller owns. */
  reply(output: unknown): AgentMessage {
    const agent = this.agent;
    if (this.parts !== undefined) output = this.parts.answer(agent, output, this.options.sessionId);
    const result = toReply(agent, output);
    this.result = result;
    this.memory?.add(result);
    return result.clone();
  }

  /** The call succeeded with `reply` (after `afterAgent` hooks). */
  succeed(reply: AgentMessage): AgentMessage {
    this.finished = true;
    if (this.observed) {
      emitEvent(this.agent, 'callEnd', {
        agent: this.agent,
        sessionId: this.options.sessionId,
        message: reply,
        path: '',
      });
    }
    return reply;
  }

  /** The call failed with `error` (not yet taken back: see {@link close}). */
  fail(error: unknown): void {
    this.failure = error;
    // Sub-calls still running inside the call stop, and start no tool.
    this.#cancel?.abort(error);
    const agent = this.agent;
    if (agent[EMITTER] !== undefined || observers.count > 0)
      emitEvent(agent, 'error', { agent, sessionId: this.options.sessionId, error, path: '' });
  }

  /**
   * Ends the call, however it ended: one that did not finish takes back exactly its own messages and
   * every turn its sub-calls stored; the session passes to its next call.
   */
  close(): void {
    const { parent, frame, finished, span } = this;
    // A stream its caller stopped reading (a closed connection, a Stop) ends the call too: listeners hear it.
    if (!finished && this.failure === undefined) this.fail(abandoned());
    if (parent !== undefined || frame !== undefined || !finished) {
      settle(parent, frame, finished, this.memory, this.inputs, this.result);
    }
    if (!this.sharesLane) this.agent[LANES].release(this.sessionKey);
    const cancel = this.#cancel;
    if (cancel !== undefined) {
      if (!finished) cancel.abort(this.failure);
      stopFollowing(cancel);
    }
    if (span) {
      endSpan(span, finished ? undefined : this.failure);
    }
  }
}

/** The error of a call left before it finished (a stream its consumer stopped reading). */
function abandoned(): Error {
  return new Error('the call was abandoned before it finished (its stream was closed)');
}

function noop(): void {}

/**
 * The tool guard of a call with parallel input checks: a tool call made inside it waits for them (passes at
 * once when they passed, and fails with what stopped the call when one tripped).
 */
function inputGateGuard(turn: Turn): GuardSpec {
  return {
    name: 'parallel input checks',
    on: 'tool',
    parallel: false,
    timeoutMs: Number.POSITIVE_INFINITY,
    check: () => (turn.inputsPending ? turn.inputGate : undefined),
  };
}

/** The frame of a call whose forward may make calls of its own. */
class TurnFrame implements CallFrame {
  readonly parent: CallFrame | undefined;
  readonly owner: object;
  readonly sessionKey: SessionKey;
  journal: JournalEntry[] | undefined = undefined;
  failed = false;
  readonly span: Span | undefined;
  readonly resume: ResumeDecisions | undefined;
  readonly durable: DurableScope | undefined;
  readonly meter: Meter | undefined;
  readonly toolGuards: readonly GuardSpec[] | undefined;
  readonly #turn: Turn;

  constructor(turn: Turn, scope: DurableScope | undefined) {
    this.parent = turn.parent;
    this.owner = turn.agent;
    this.sessionKey = turn.sessionKey;
    this.span = turn.span;
    this.resume = turn.resume;
    this.durable = scope;
    this.meter = turn.meter;
    this.toolGuards = turn.toolGuards;
    this.#turn = turn;
  }

  /** The call's signal with its cancellation (made when a call inside first asks for it). */
  get signal(): AbortSignal {
    return this.#turn.frameSignal();
  }
}

// Every turn is dropped when its call ends, so between bursts none is left: see keepShape.
keepShape(new Turn(Object.create(null) as AgentBase, undefined));

/** The call's `invoke_agent` span, when tracing is on. */
function agentSpan(agent: AgentBase, sessionId: SessionId, parent: CallFrame | undefined): Span | undefined {
  const tracer = activeTracer();
  return tracer ? startAgentSpan(tracer, agent.name, sessionId, parent?.span) : undefined;
}

/** Runs `forward` inside the call's frame; a stream it returns is wrapped so each pull runs there too. */
function forwardInFrame(
  frame: CallFrame,
  agent: AgentBase,
  forward: Forwarding['forward'],
  messages: AgentMessage[],
  options: ForwardOptions,
): unknown {
  const output = runInFrame(frame, () => forward.call(agent, messages, options));
  return needsDriving(output) && !isThenable(output)
    ? streamInFrame(frame, output as Iterator<unknown>)
    : output;
}

/**
 * Closes a call. A failed call takes back its own messages and its sub-calls' turns. A call that
 * succeeded inside another one hands both to it, so that a later failure out there takes them back too
 * (or takes them back at once when that call already failed).
 */
function settle(
  parent: CallFrame | undefined,
  frame: CallFrame | undefined,
  finished: boolean,
  memory: Memory | undefined,
  inputs: AgentMessage[] | undefined,
  result: AgentMessage | undefined,
): void {
  if (!finished || parent?.failed) {
    if (frame) {
      frame.failed = true;
      retract(frame.journal);
    }
    if (memory && inputs) memory.remove(turnOf(inputs, result));
    return;
  }
  if (parent === undefined) return;
  if (frame?.journal) for (const entry of frame.journal) journal(parent, entry);
  if (memory && inputs) journal(parent, { memory, messages: turnOf(inputs, result) });
}

/** The messages a call added: its inputs, then its reply when there is one. */
function turnOf(inputs: AgentMessage[], result: AgentMessage | undefined): AgentMessage[] {
  if (result === undefined) return inputs;
  // Sized once: a push past a copy's length would grow it to 17 slots.
  const own = new Array<AgentMessage>(inputs.length + 1);
  for (let i = 0; i < inputs.length; i++) own[i] = inputs[i]!;
  own[inputs.length] = result;
  return own;
}

/** What `forward` receives: the call options with the session set and the effective signal. */
function forwardOptionsOf(
  options: Record<string, unknown> | undefined,
  signal: AbortSignal | undefined,
  ownSignal: AbortSignal | undefined,
): ForwardOptions {
  if (options === undefined) return signal === undefined ? DEFAULT_OPTIONS : { sessionId: 0, signal };
  if (options.sessionId !== undefined && signal === ownSignal) return options as ForwardOptions;
  // Object.assign, then assignments: a spread copy that then gains keys is many times slower on Node 20.
  const copy = Object.assign({}, options) as ForwardOptions;
  copy.sessionId = (options.sessionId as SessionId | undefined) ?? 0;
  if (signal !== undefined) copy.signal = signal;
  return copy;
}

function toReply(agent: AgentBase, output: unknown): AgentMessage {
  let reply: AgentMessage;
  if (typeof output === 'string') {
    reply = messageOf(output, agent.name, null, null, null, null, AgentStatusCode.END);
  } else if (output instanceof AgentMessage) reply = output;
  else {
    throw new ConfigurationError({
      message: `${agent.name}.forward must return an AgentMessage or a string, got ${output === null ? 'null' : typeof output}`,
    });
  }
  reply.streamState = AgentStatusCode.END;
  return reply;
}
