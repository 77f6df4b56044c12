import { hookStep } from '../core/hook-step';
import type { Steps } from '../core/steps';
import { Memory } from '../memory/memory';
import { AgentMessage, type MessageInput, toAgentMessage } from '../schema/agent-message';
import type { ChatMessage } from '../schema/chat-message';
import { ConfigurationError, LagentError, ParseError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { AgentStatusCode } from '../schema/status';
import { isIterator, isThenable } from '../utils/is';
import { type AgentBase, EMITTER, type ForwardOptions } from './agent-base';

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
 * `call()`, written once for all four variants: inputs become copies -> `beforeAgent` hooks -> inputs to
 * memory -> `forward` -> the reply to memory -> a copy of it -> `afterAgent` hooks -> returned.
 * If anything fails (or a stream is abandoned), the session's memory is restored to what it was.
 */
export function* agentCallSteps(
  agent: AgentBase,
  input: MessageInput | readonly MessageInput[] | undefined,
  options: Record<string, unknown> | undefined,
): Steps<AgentMessage> {
  const forwardOptions: ForwardOptions =
    options === undefined
      ? DEFAULT_OPTIONS
      : options.sessionId === undefined
        ? { ...options, sessionId: 0 }
        : (options as ForwardOptions);
  const sessionId = forwardOptions.sessionId;
  (forwardOptions.signal as AbortSignal | undefined)?.throwIfAborted();
  const emitter = agent[EMITTER];
  let messages = toMessages(input);
  emitter?.emit('callStart', { agent, sessionId, messages });
  let memory: Memory | undefined;
  let mark = 0;
  let finished = false;
  try {
    for (const hook of agent.hooks) {
      if (hook.beforeAgent)
        messages = (yield* hookStep(hook, 'beforeAgent', agent, messages, sessionId)) ?? messages;
    }
    memory = agent.memory?.getOrCreate(sessionId);
    if (memory) {
      mark = memory.length;
      memory.add(messages);
    }
    let output: unknown = (agent as unknown as Forwarding).forward(messages, forwardOptions);
    if (needsDriving(output)) output = yield output;
    const result = toReply(agent, output);
    memory?.add(result);
    let reply = result.clone();
    for (const hook of agent.hooks) {
      if (hook.afterAgent) reply = (yield* hookStep(hook, 'afterAgent', agent, reply, sessionId)) ?? reply;
    }
    finished = true;
    emitter?.emit('callEnd', { agent, sessionId, message: reply });
    return reply;
  } catch (error) {
    emitter?.emit('error', { agent, sessionId, error });
    throw error;
  } finally {
    if (!finished) memory?.truncate(mark);
  }
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
  agent[EMITTER]?.emit('llmStart', { agent, sessionId, messages: prompt });
  return prompt;
}

/** The default forward's reply: the raw text, or a message with `formatted` when there is an output format. */
export function buildReply(agent: AgentBase, raw: string, sessionId: SessionId): AgentMessage | string {
  agent[EMITTER]?.emit('llmEnd', { agent, sessionId, response: raw });
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
