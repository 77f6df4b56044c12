import {
  type CallFrame,
  combineSignals,
  currentFrame,
  followingSignal,
  isRunningIn,
  type JournalEntry,
  journal,
  retract,
  runInFrame,
  stopFollowing,
  streamInFrame,
} from '../../core/call-context';
import { type ChainLink, type Slot, slotOf, withSlot } from '../../core/interceptors';
import type { PendingTurn } from '../../core/session-lanes';
import type { Memory } from '../../memory/memory';
import { MEMORY_AT, MemoryManager } from '../../memory/memory-manager';
import { AgentMessage, type MessageInput, messageOf, toAgentMessage } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
import { type Decision, decisionsOf, RESUME_TYPE } from '../../schema/interrupts';
import { type SessionId, type SessionKey, sessionKey as toSessionKey } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import { isIterator, isThenable } from '../../utils/is';
import { keepShape } from '../../utils/keep-shape';
import type { AgentBase, AsyncForwardOptions, ForwardOptions } from '../agent-base';
import { LANES } from '../agent-symbols';
import { linkChain } from '../interceptors/chain';
import { type Forwarding, type ForwardParts, plainForwardOf } from './builtin-forward';
import { abandoned, SHARES_LANE } from './call-marks';
import { pathIn } from './events';

/*
 * One agent call's state and its own steps (the Turn): the session's lane, the inputs, memory, `forward`, the
 * reply, and what settles the call (taking back a failed call's messages, or handing a finished sub-call's to
 * its caller). Everything else a call may do — keep its session in a store, journal itself, stop for approval,
 * count a budget, check guardrails, trace, summarise — is an interceptor around these steps
 * (`agents/interceptors/`), whose state lives in the call's slots. The Turn is the call's frame too: the calls
 * made inside it find it as their parent.
 */

const DEFAULT_OPTIONS: ForwardOptions = Object.freeze({ sessionId: 0 });
const NO_LINKS: readonly ChainLink[] = Object.freeze([]) as readonly ChainLink[];

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
 * One agent call in progress: its options, its session and what it has done so far. Its steps are its
 * methods, so each is written once; what sequences them (`agentCallSteps`, or `callAsync`'s direct run) only
 * decides when to wait. It is the context the call's interceptors get (`AgentCallContext`), and the frame of
 * the calls made inside it.
 */
export class Turn implements CallFrame {
  readonly agent: AgentBase;
  /** The agent call this one is made inside, if any. */
  readonly parent: CallFrame | undefined;
  /** The call options as given. */
  readonly given: Readonly<Record<string, unknown>>;
  /** What `forward` receives: the session set, and the effective signal (own and inherited). */
  options: AsyncForwardOptions;
  readonly sessionKey: SessionKey;
  /** The call's inputs (an interceptor may change them before the call runs). */
  messages: AgentMessage[] = [];
  /** The decisions of a resume message the call was given (the approvals interceptor takes them). */
  decisions: readonly Decision[] | undefined = undefined;
  /** Additions of finished sub-calls (see CallFrame). */
  journal: JournalEntry[] | undefined = undefined;
  failed = false;
  /** Users' interceptors in force: the enclosing calls', then this agent's own. */
  readonly interceptors: readonly object[];
  /** The call's hooks: the concerns that apply to it, then users' interceptors (outermost first; see link()). */
  agentLinks: readonly ChainLink[] = NO_LINKS;
  modelLinks: readonly ChainLink[] = NO_LINKS;
  toolLinks: readonly ChainLink[] = NO_LINKS;
  /** The built-in concerns whose tool hooks are in force here (see chain.ts). */
  toolMask = 0;
  /** The built-in forward's parts, when the call runs them as its own steps. */
  parts: ForwardParts | undefined = undefined;
  /** The call's frame is entered: its forward makes calls of its own, or interceptors are in force. */
  framed = false;
  memory: Memory | undefined = undefined;
  /** The inputs as stored in memory: taken back when the call fails. */
  inputs: AgentMessage[] | undefined = undefined;
  /** The reply as stored in memory. */
  result: AgentMessage | undefined = undefined;
  finished = false;
  failure: unknown = undefined;
  /** The call runs in the session lane of another call of its agent: not its own. */
  readonly sharesLane: boolean;
  /**
   * The call's own cancellation, following its signal: aborted when the call fails (so that sub-calls still
   * running inside it stop) or by a concern that stops it (a guardrail). Made on first use.
   */
  #cancel: AbortController | undefined = undefined;
  /** Concerns' state of this call (see `core/interceptors.ts`): keys and values, interleaved. */
  #slots: unknown[] | undefined = undefined;

  /** Checks the call can start: not aborted, and not waiting for itself. */
  constructor(agent: AgentBase, options: Record<string, unknown> | undefined) {
    const parent = currentFrame();
    const ownSignal = options?.signal as AbortSignal | undefined;
    const signal = combineSignals(ownSignal, parent?.signal);
    this.agent = agent;
    this.parent = parent;
    this.given = options ?? DEFAULT_OPTIONS;
    this.options = forwardOptionsOf(options, signal, ownSignal) as AsyncForwardOptions;
    signal?.throwIfAborted();
    const sessionKey = toSessionKey(this.options.sessionId);
    if (isRunningIn(parent, agent, sessionKey)) {
      throw new ConfigurationError({
        message: `${agent.name}.call on session ${JSON.stringify(String(sessionKey))} was made from inside a call of the same agent and session, which it would wait for forever; use another session or agent`,
      });
    }
    this.sessionKey = sessionKey;
    this.sharesLane = options?.[SHARES_LANE as unknown as string] === true;
    const inherited = (parent as Turn | undefined)?.interceptors;
    const own = agent.interceptors;
    this.interceptors =
      own.length === 0
        ? (inherited ?? own)
        : inherited === undefined || inherited.length === 0
          ? own
          : [...inherited, ...own];
  }

  /**
   * Finds the call's hooks, once its inputs are known: the concerns that apply to it (see chain.ts), then the
   * users' interceptors in force. A call with model-call hooks runs `forward` in its frame: a hook may make
   * calls of its own (a summariser), which are this call's sub-calls. `again`: linked a second time, because
   * the call's state changed (a concern found a budget only once it ran).
   */
  link(again = false): void {
    linkChain(this, again);
    if (this.modelLinks.length > 0) this.framed = true;
  }

  // The call's context, as interceptors see it.

  get sessionId(): SessionId {
    return this.options.sessionId;
  }

  /** The signal calls made inside this one inherit: the call's, with its cancellation. */
  get signal(): AbortSignal {
    this.#cancel ??= followingSignal(this.options.signal);
    return this.#cancel.signal;
  }

  /** The agent's dotted path in the tree of the outermost call (`''` for that agent). */
  get path(): string {
    let root: CallFrame | undefined = this;
    while (root.parent !== undefined) root = root.parent;
    const owner = root.owner as AgentBase;
    return owner === this.agent ? '' : (pathIn(owner, this.agent) ?? '');
  }

  get owner(): object {
    return this.agent;
  }

  get<T>(key: Slot<T>): T | undefined {
    return slotOf(this.#slots, key);
  }

  set<T>(key: Slot<T>, value: T | undefined): void {
    this.#slots = withSlot(this.#slots, key, value);
  }

  find<T>(key: Slot<T>): T | undefined {
    for (let frame: CallFrame | undefined = this; frame !== undefined; frame = frame.parent) {
      const value = frame.get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  /** Stops the call (a concern's decision, e.g. a guardrail that tripped): sub-calls and tools inside it end. */
  stop(reason: unknown): void {
    this.#cancel ??= followingSignal(this.options.signal);
    this.#cancel.abort(reason);
    if (this.options.signal !== this.#cancel.signal) {
      const options = Object.assign({}, this.options);
      options.signal = this.#cancel.signal;
      this.options = options;
    }
  }

  /** The call's signal becomes its own cancellation, so `forward` and what the call awaits see a stop at once. */
  cancellable(): AbortSignal {
    const signal = this.signal;
    if (this.options.signal !== signal) {
      const options = Object.assign({}, this.options);
      options.signal = signal;
      this.options = options;
    }
    return signal;
  }

  // The call's own steps.

  /** Takes the session (undefined), or queues for it behind its earlier calls. */
  acquire(): PendingTurn | undefined {
    if (this.sharesLane) return undefined;
    return this.agent[LANES].acquire(this.sessionKey, this.options.signal);
  }

  /** The inputs as fresh messages the caller's objects do not share; a resume message gives decisions instead. */
  inputsOf(input: MessageInput | readonly MessageInput[] | undefined): AgentMessage[] {
    let messages = toMessages(input);
    if (messages.length === 1 && messages[0]!.type === RESUME_TYPE) {
      // A resume message is not a message of the conversation: its decisions go to the call.
      this.decisions = decisionsOf(messages[0]!)!;
      messages = [];
    }
    this.messages = messages;
    return messages;
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
    const plain = plainForwardOf(forward);
    if (plain !== undefined && plain !== null && !this.framed) {
      this.parts = plain;
      return plain.ask(agent, this.memory, messages, this.options);
    }
    if (plain === null && !this.framed) return forward.call(agent, messages, this.options);
    if (this.inputs && plain === undefined) this.inputs = this.inputs.slice(); // a custom forward may change the array it is given
    this.framed = true;
    const output = runInFrame(this, () => forward.call(agent, messages, this.options));
    return needsDriving(output) && !isThenable(output)
      ? streamInFrame(this, output as Iterator<unknown>)
      : output;
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

  /** The call failed with `error` (not yet taken back: see {@link close}): sub-calls still running stop. */
  fail(error: unknown): void {
    this.failure = error;
    this.#cancel?.abort(error);
  }

  /**
   * Ends the call, however it ended: one that did not finish takes back exactly its own messages and
   * every turn its sub-calls stored; the session passes to its next call.
   */
  close(): void {
    const { parent, finished } = this;
    if (!finished && this.failure === undefined) this.failure = abandoned();
    if (parent !== undefined || this.framed || !finished) settle(this);
    if (!this.sharesLane) this.agent[LANES].release(this.sessionKey);
    const cancel = this.#cancel;
    if (cancel !== undefined) {
      if (!finished) cancel.abort(this.failure);
      stopFollowing(cancel);
    }
  }
}

// Every turn is dropped when its call ends, so between bursts none is left: see keepShape.
keepShape(new Turn(Object.create({ interceptors: NO_LINKS }) as AgentBase, undefined));

/**
 * Closes a call. A failed call takes back its own messages and its sub-calls' turns. A call that
 * succeeded inside another one hands both to it, so that a later failure out there takes them back too
 * (or takes them back at once when that call already failed).
 */
function settle(turn: Turn): void {
  const { parent, finished, memory, inputs, result } = turn;
  if (!finished || parent?.failed) {
    turn.failed = true;
    retract(turn.journal);
    if (memory && inputs) memory.remove(turnOf(inputs, result));
    return;
  }
  if (parent === undefined) return;
  if (turn.journal) for (const entry of turn.journal) journal(parent, entry);
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
