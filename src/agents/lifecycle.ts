import {
  type CallFrame,
  combineSignals,
  currentFrame,
  isRunningIn,
  journal,
  retract,
  runInFrame,
  streamInFrame,
} from '../core/call-context';
import { hookStep } from '../core/hook-step';
import type { PendingTurn } from '../core/session-lanes';
import { driveAsync, PromiseInSyncCall, type Steps } from '../core/steps';
import { activeTracer, endSpan, type Span, startAgentSpan, startChatSpan } from '../core/tracing';
import type { ModelReply } from '../llms/types';
import { Memory } from '../memory/memory';
import { MEMORY_AT, MemoryManager } from '../memory/memory-manager';
import { AgentMessage, type MessageInput, messageOf, toAgentMessage } from '../schema/agent-message';
import type { ChatMessage, ToolCall } from '../schema/chat-message';
import { ConfigurationError, LagentError, ParseError } from '../schema/errors';
import { type SessionId, type SessionKey, sessionKey as toSessionKey } from '../schema/session';
import { AgentStatusCode } from '../schema/status';
import { isIterator, isThenable } from '../utils/is';
import { keepShape } from '../utils/keep-shape';
import {
  type AgentBase,
  type AgentEvents,
  type AsyncForwardOptions,
  EMITTER,
  type ForwardOptions,
  type ForwardResult,
  LANES,
} from './agent-base';
import { observers } from './observers';

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
class Turn {
  readonly agent: AgentBase;
  /** The agent call this one is made inside, if any. */
  readonly parent: CallFrame | undefined;
  /** What `forward` receives: the session set, and the effective signal (own and inherited). */
  readonly options: AsyncForwardOptions;
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
    const messages = toMessages(input);
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
    const plain = this.span === undefined ? PLAIN_FORWARDS.get(forward) : undefined;
    if (plain !== undefined && plain !== null) {
      this.parts = plain;
      return plain.ask(agent, this.memory, messages, this.options);
    }
    if (plain === null) return forward.call(agent, messages, this.options);
    if (this.inputs) this.inputs = this.inputs.slice(); // a custom forward may change the array it is given
    const frame: CallFrame = {
      parent: this.parent,
      owner: agent,
      sessionKey: this.sessionKey,
      signal: this.options.signal,
      journal: undefined,
      failed: false,
      span: this.span,
    };
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
    if (parent !== undefined || frame !== undefined || !finished) {
      settle(parent, frame, finished, this.memory, this.inputs, this.result);
    }
    this.agent[LANES].release(this.sessionKey);
    if (span) {
      endSpan(
        span,
        finished ? undefined : (this.failure ?? new Error('the call was abandoned before it finished')),
      );
    }
  }
}

// Every turn is dropped when its call ends, so between bursts none is left: see keepShape.
keepShape(new Turn(Object.create(null) as AgentBase, undefined));

/**
 * `call()`, written once for all four variants:
 *
 * 1. wait for the session's earlier calls on this agent (one call per session at a time, in call order);
 * 2. inputs become copies -> `beforeAgent` hooks -> inputs to memory;
 * 3. `forward`, inside a call frame: calls made in it inherit this call's signal and report their turns;
 * 4. the reply to memory -> a copy of it -> `afterAgent` hooks -> returned.
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
  try {
    turn.begin();
    let messages = turn.inputsOf(input);
    if (agent.hooks.length > 0) messages = yield* beforeAgentSteps(agent, messages, turn.options.sessionId);
    turn.remember(messages);
    let output = turn.forward(messages);
    if (needsDriving(output)) output = yield output;
    let reply = turn.reply(output);
    if (agent.hooks.length > 0) reply = yield* afterAgentSteps(agent, reply, turn.options.sessionId);
    return turn.succeed(reply);
  } catch (error) {
    turn.fail(error);
    throw error;
  } finally {
    turn.close();
  }
}

/**
 * `AsyncAgent.call`: {@link agentCallSteps} driven by `driveAsync`, except in the common case (the
 * built-in forward, no hooks, the session free), where the same steps run directly and the model's
 * promise is followed with one `then`: a call in flight then holds its {@link Turn} and that reaction,
 * not a suspended generator and its driver. 10,000 concurrent sessions keep that much less alive. Which
 * way a call runs is decided when it is made: a hook added while it waits or runs applies from the next call.
 */
export function callAsync(
  agent: AgentBase,
  input: MessageInput | readonly MessageInput[] | undefined,
  options: Record<string, unknown> | undefined,
): Promise<AgentMessage> {
  const parts = PLAIN_FORWARDS.get((agent as unknown as Forwarding).forward);
  if (parts === undefined || parts === null || agent.hooks.length > 0) {
    return driveAsync(agentCallSteps(agent, input, options));
  }
  let turn: Turn;
  try {
    turn = new Turn(agent, options);
  } catch (error) {
    return Promise.reject(error);
  }
  const pending = turn.acquire();
  // A busy session: the run waits for its place in line (an abort while waiting rejects, touching nothing).
  if (pending !== undefined) return pending.ready.then(() => runTurn(turn, input));
  return runTurn(turn, input);
}

/** {@link callAsync}'s direct run, once the session is the turn's. */
function runTurn(
  turn: Turn,
  input: MessageInput | readonly MessageInput[] | undefined,
): Promise<AgentMessage> {
  let answer: unknown;
  try {
    turn.begin();
    const messages = turn.inputsOf(input);
    turn.remember(messages);
    answer = turn.forward(messages);
  } catch (error) {
    return Promise.reject(failTurn(turn, error));
  }
  if (!isThenable(answer)) {
    // A model that answered at once: finishTurn has closed the turn either way.
    try {
      return Promise.resolve(finishTurn(turn, answer));
    } catch (error) {
      return Promise.reject(error);
    }
  }
  return Promise.resolve(answer).then(
    (value) => finishTurn(turn, value),
    (error: unknown) => {
      throw failTurn(turn, error);
    },
  );
}

/** The last steps of {@link callAsync}'s direct run: the reply from the model's answer, and the close. */
function finishTurn(turn: Turn, answer: unknown): AgentMessage {
  let reply: AgentMessage;
  try {
    reply = turn.succeed(turn.reply(answer));
  } catch (error) {
    throw failTurn(turn, error);
  }
  turn.close();
  return reply;
}

/** A failed direct run: reported and taken back; returns the error for the caller to throw. */
function failTurn(turn: Turn, error: unknown): unknown {
  turn.fail(error);
  turn.close();
  return error;
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

/** The call's `invoke_agent` span, when tracing is on. */
function agentSpan(agent: AgentBase, sessionId: SessionId, parent: CallFrame | undefined): Span | undefined {
  const tracer = activeTracer();
  return tracer ? startAgentSpan(tracer, agent.name, sessionId, parent?.span) : undefined;
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
 * Emits an agent event to the agent's own listeners, then to every other agent with listeners for it that
 * holds this agent in its tree (wherever the call was made from), with `path` set to this agent's dotted
 * path there (`writer`, `experts.0`, ...).
 */
export function emitEvent<E extends keyof AgentEvents>(
  agent: AgentBase,
  event: E,
  payload: AgentEvents[E][0],
): void {
  if (agent[EMITTER]) emitSafely(agent, event, payload);
  if (observers.count === 0 || (observers.count === 1 && agent[EMITTER] !== undefined)) return;
  for (const ref of observers.agents) {
    const owner = ref.deref() as AgentBase | undefined;
    if (owner === undefined) {
      observers.agents.delete(ref);
      observers.count = observers.agents.size;
      continue;
    }
    if (owner === agent || owner[EMITTER]!.listenerCount(event) === 0) continue;
    const path = pathIn(owner, agent);
    if (path !== undefined) emitSafely(owner, event, { ...payload, path });
  }
}

/** The dotted path of `agent` in `owner`'s tree, or undefined when it is not a descendant. */
function pathIn(owner: AgentBase, agent: AgentBase): string | undefined {
  // namedAgents() gives state-dict prefixes (`writer.`, `experts.0.`): the path is the prefix without its dot.
  for (const [prefix, node] of owner.namedAgents())
    if (node === agent && prefix !== '') return prefix.slice(0, -1);
  return undefined;
}

/** The error a `chat` span ends with when its stream's consumer left before the end. */
export const STREAM_LEFT = new Error('the stream was closed before it finished');

/** A `chat` span for a model call of `agent`'s built-in forward, when tracing is on. */
export function chatSpan(agent: AgentBase): Span | undefined {
  const tracer = activeTracer();
  if (tracer === undefined) return undefined;
  const model = (agent.llm as { model?: unknown } | undefined)?.model;
  return startChatSpan(tracer, typeof model === 'string' ? model : undefined, currentFrame()?.span);
}

/** Ends a `chat` span: the token usage the model reported, or the error. */
export function endChatSpan(span: Span, agent: AgentBase, error?: unknown): void {
  if (error === undefined) {
    try {
      const usage = (
        agent.llm as { getLastUsage?(): TokenUsageLike | undefined } | undefined
      )?.getLastUsage?.();
      if (usage) {
        span.setAttribute('gen_ai.usage.input_tokens', usage.promptTokens);
        span.setAttribute('gen_ai.usage.output_tokens', usage.completionTokens);
      }
    } catch {
      // usage is optional
    }
  }
  endSpan(span, error);
}

interface TokenUsageLike {
  promptTokens: number;
  completionTokens: number;
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

/** Emits an agent event; a listener that throws is reported as a process warning and never fails the call. */
export function emitSafely<E extends keyof AgentEvents>(
  agent: AgentBase,
  event: E,
  payload: AgentEvents[E][0],
): void {
  try {
    (agent[EMITTER]!.emit as (event: E, payload: AgentEvents[E][0]) => boolean)(event, payload);
  } catch (error) {
    process.emitWarning(`a listener of ${agent.name}'s "${event}" event threw: ${reasonOf(error)}`, {
      code: 'LAGENT_LISTENER_ERROR',
      detail:
        'Listener errors never fail the call that emitted the event; later listeners of the same event were skipped.',
    });
  }
}

/**
 * A built-in `forward` with one model call, in two parts around it. A call runs the parts as its own
 * steps, so while the model works the call holds no promise, closure or frame of the forward's.
 */
export interface ForwardParts {
  /**
   * Builds the prompt from the session's memory (`memory` when the caller has it at hand; just `messages`
   * for an agent without memory) and asks the model: its answer, or a promise of it.
   */
  ask(
    agent: AgentBase,
    memory: Memory | undefined,
    messages: AgentMessage[],
    options: ForwardOptions,
  ): unknown;
  /** The forward's result, from the model's answer. */
  answer(agent: AgentBase, answer: unknown, sessionId: SessionId): ForwardResult;
}

/**
 * The `forward` methods of the four agent classes (registered by each class): they make no sub-calls, so
 * calls run them without a call frame. The non-streaming ones come with their {@link ForwardParts}.
 */
const PLAIN_FORWARDS = new WeakMap<object, ForwardParts | null>();

/** Registers a built-in `forward` that makes no sub-calls (see {@link agentCallSteps}). */
export function registerPlainForward(forward: object, parts: ForwardParts | null = null): void {
  PLAIN_FORWARDS.set(forward, parts);
}

/**
 * The default forward of `Agent` and `AsyncAgent` in parts: the session's memory through the aggregator
 * to the model (`chat`, or `generate` with the agent's native tools), then the reply from its answer.
 * The model's answer is a value for a sync model and a promise for an async one; the parts are the same.
 */
export const MODEL_TURN: ForwardParts = {
  ask(agent, memory, messages, options) {
    const llm = requireLLM(agent) as ModelLike;
    const sessionId = options.sessionId;
    const prompt = promptOf(
      agent,
      agent.memory ? (memory ?? agent.memory.get(sessionId)) : scratchMemory(messages),
      sessionId,
    );
    return agent.tools === undefined
      ? llm.chat(prompt, options)
      : llm.generate(prompt, modelParams(agent, options));
  },
  answer(agent, answer, sessionId) {
    if (agent.tools === undefined) return buildReply(agent, answer as string, sessionId);
    const reply = answer as ModelReply;
    return buildReply(agent, reply.content, sessionId, reply.toolCalls);
  },
};

/** What {@link MODEL_TURN} needs of a model, sync or async. */
interface ModelLike {
  chat(messages: ChatMessage[], params?: object): unknown;
  generate(messages: ChatMessage[], params?: object): unknown;
}

interface Forwarding {
  forward(messages: AgentMessage[], options: ForwardOptions): unknown;
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

/** The model of an agent, or a clear error when a forward that needs one has none. */
export function requireLLM<L>(agent: AgentBase<L>): L {
  if (agent.llm === undefined || agent.llm === null) {
    throw new ConfigurationError({
      message: `${agent.name} has no llm: pass { llm } to the constructor or override forward()`,
    });
  }
  return agent.llm;
}

/** The chat messages for the default forward: the session's memory through the aggregator. */
export function buildPrompt(agent: AgentBase, messages: AgentMessage[], sessionId: SessionId): ChatMessage[] {
  return promptOf(agent, agent.memory ? agent.memory.get(sessionId) : scratchMemory(messages), sessionId);
}

/** The turn's messages alone, for an agent without memory. */
function scratchMemory(messages: AgentMessage[]): Memory {
  const memory = new Memory();
  memory.add(messages);
  return memory;
}

/** {@link buildPrompt} with the memory to aggregate at hand. */
function promptOf(agent: AgentBase, memory: Memory | undefined, sessionId: SessionId): ChatMessage[] {
  const prompt = agent.aggregator.aggregate(memory, agent.name, agent.outputFormat, agent.template);
  if (agent[EMITTER] !== undefined || observers.count > 0)
    emitEvent(agent, 'llmStart', { agent, sessionId, messages: prompt, path: '' });
  return prompt;
}

/**
 * The default forward's reply: the raw text, a message with `formatted` when there is an output format,
 * or a message with `formatted: { toolCalls }` when the model called tools.
 */
export function buildReply(
  agent: AgentBase,
  raw: string,
  sessionId: SessionId,
  toolCalls?: ToolCall[] | undefined,
): AgentMessage | string {
  if (agent[EMITTER] !== undefined || observers.count > 0)
    emitEvent(agent, 'llmEnd', { agent, sessionId, response: raw, path: '' });
  // A reply that calls tools is not parsed: its `formatted` is the calls, for an executor to run.
  if (toolCalls !== undefined && toolCalls.length > 0) {
    return new AgentMessage({ sender: agent.name, content: raw, formatted: { toolCalls } });
  }
  const parser = agent.outputFormat;
  if (!parser) return raw;
  let formatted: unknown;
  try {
    formatted = parser.parseResponse(raw);
  } catch (error) {
    if (error instanceof LagentError) throw error;
    throw new ParseError({
      text: raw,
      message: `${agent.name}: could not parse the model output: ${(error as Error).message}`,
      cause: error,
    });
  }
  return new AgentMessage({ sender: agent.name, content: raw, formatted });
}

/** A streaming chunk of the default forward; `formatted` is best effort on partial text. */
export function buildChunk(agent: AgentBase, content: string): AgentMessage {
  let formatted: unknown = null;
  const parser = agent.outputFormat;
  if (parser) {
    try {
      formatted = parser.parseResponse(content);
    } catch {
      formatted = null;
    }
  }
  return new AgentMessage({
    sender: agent.name,
    content,
    formatted,
    streamState: AgentStatusCode.STREAM_ING,
  });
}

function reasonOf(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'an unprintable value';
  }
}

/** The call params for the model: the call's options, with the agent's native tools when it has any. */
export function modelParams<O extends object>(agent: AgentBase, options: O): O {
  if (agent.tools === undefined) return options;
  const params = Object.assign({}, options) as O & { tools: unknown }; // not a spread: see forwardOptionsOf
  params.tools = agent.tools;
  return params;
}
