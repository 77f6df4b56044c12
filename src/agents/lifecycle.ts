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
import { PromiseInSyncCall, type Steps } from '../core/steps';
import { activeTracer, endSpan, type Span, startAgentSpan, startChatSpan } from '../core/tracing';
import { Memory } from '../memory/memory';
import { AgentMessage, type MessageInput, toAgentMessage } from '../schema/agent-message';
import type { ChatMessage, ToolCall } from '../schema/chat-message';
import { ConfigurationError, LagentError, ParseError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { AgentStatusCode } from '../schema/status';
import { isIterator, isThenable } from '../utils/is';
import { type AgentBase, type AgentEvents, EMITTER, type ForwardOptions, LANES } from './agent-base';
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
  const parent = currentFrame();
  const ownSignal = options?.signal as AbortSignal | undefined;
  const signal = combineSignals(ownSignal, parent?.signal);
  const forwardOptions = forwardOptionsOf(options, signal, ownSignal);
  const sessionId = forwardOptions.sessionId;
  signal?.throwIfAborted();
  const sessionKey = String(sessionId);
  if (isRunningIn(parent, agent, sessionKey)) {
    throw new ConfigurationError({
      message: `${agent.name}.call on session ${JSON.stringify(sessionKey)} was made from inside a call of the same agent and session, which it would wait for forever; use another session or agent`,
    });
  }
  const lanes = agent[LANES];
  const pending = lanes.acquire(sessionKey, signal);
  if (pending !== undefined) yield* waitForLane(agent, pending, sessionKey);
  // Events reach this agent's listeners, and those of the agents that hold it in their tree.
  const observed = agent[EMITTER] !== undefined || observers.count > 0;
  const span = agentSpan(agent, sessionId, parent);
  // A frame only for forwards that may make calls of their own (see PLAIN_FORWARDS), or to parent spans.
  let frame: CallFrame | undefined;
  let memory: Memory | undefined;
  let inputs: AgentMessage[] | undefined;
  let result: AgentMessage | undefined;
  let finished = false;
  let failure: unknown;
  try {
    let messages = toMessages(input);
    if (observed) emitEvent(agent, 'callStart', { agent, sessionId, messages, path: '' });
    const before = agent.hooks;
    if (before.length > 0) messages = yield* beforeAgentSteps(agent, before, messages, sessionId);
    memory = agent.memory?.getOrCreate(sessionId);
    if (memory) {
      memory.add(messages);
      inputs = messages;
    }
    const forward = (agent as unknown as Forwarding).forward;
    let output: unknown;
    if (span === undefined && PLAIN_FORWARDS.has(forward))
      output = forward.call(agent, messages, forwardOptions);
    else {
      if (inputs) inputs = inputs.slice(); // a custom forward may change the array it is given
      frame = { parent, owner: agent, sessionKey, signal, journal: undefined, failed: false, span };
      output = forwardInFrame(frame, agent, forward, messages, forwardOptions);
    }
    if (needsDriving(output)) output = yield output;
    result = toReply(agent, output);
    memory?.add(result);
    let reply = result.clone();
    const after = agent.hooks;
    if (after.length > 0) reply = yield* afterAgentSteps(agent, after, reply, sessionId);
    finished = true;
    if (observed) emitEvent(agent, 'callEnd', { agent, sessionId, message: reply, path: '' });
    return reply;
  } catch (error) {
    failure = error;
    if (agent[EMITTER] !== undefined || observers.count > 0)
      emitEvent(agent, 'error', { agent, sessionId, error, path: '' });
    throw error;
  } finally {
    if (parent !== undefined || frame !== undefined || !finished) {
      settle(parent, frame, finished, memory, inputs, result);
    }
    lanes.release(sessionKey);
    if (span)
      endSpan(
        span,
        finished ? undefined : (failure ?? new Error('the call was abandoned before it finished')),
      );
  }
}

/*
 * The hook loops and the framed forward live outside agentCallSteps: every local of a generator is kept in
 * its frame for each call (and a closure would give every call a heap context), so the steps stay small.
 */

/** Waits for the session's earlier calls; a sync driver cannot wait, so the call is refused. */
function* waitForLane(agent: AgentBase, pending: PendingTurn, sessionKey: string): Steps<void> {
  try {
    yield pending.ready;
  } catch (error) {
    if (!(error instanceof PromiseInSyncCall)) throw error;
    pending.cancel();
    throw new ConfigurationError({
      message: `${agent.name}: session ${JSON.stringify(sessionKey)} has a call in progress (an unfinished stream?); a synchronous agent cannot wait for it: finish that stream or call its return() first`,
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
  hooks: readonly AgentBase['hooks'][number][],
  messages: AgentMessage[],
  sessionId: SessionId,
): Steps<AgentMessage[]> {
  for (const hook of hooks) {
    if (hook.beforeAgent)
      messages = (yield* hookStep(hook, 'beforeAgent', agent, messages, sessionId)) ?? messages;
  }
  return messages;
}

function* afterAgentSteps(
  agent: AgentBase,
  hooks: readonly AgentBase['hooks'][number][],
  reply: AgentMessage,
  sessionId: SessionId,
): Steps<AgentMessage> {
  for (const hook of hooks) {
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

/** The `forward` methods of the four agent classes (registered by each class). */
const PLAIN_FORWARDS = new WeakSet<object>();

/** Registers a built-in `forward` that makes no sub-calls (see {@link agentCallSteps}). */
export function registerPlainForward(forward: object): void {
  PLAIN_FORWARDS.add(forward);
}

interface Forwarding {
  forward(messages: AgentMessage[], options: ForwardOptions): unknown;
}

function toReply(agent: AgentBase, output: unknown): AgentMessage {
  let reply: AgentMessage;
  if (typeof output === 'string') reply = new AgentMessage({ sender: agent.name, content: output });
  else if (output instanceof AgentMessage) reply = output;
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
  let memory: Memory | undefined;
  if (agent.memory) memory = agent.memory.get(sessionId);
  else {
    memory = new Memory();
    memory.add(messages);
  }
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
