import { uniqueToolCallIds } from '../../actions/tool-call-steps';
import { currentFrame } from '../../core/call-context';
import { toolCallsError } from '../../llms/tool-calls';
import type { ModelReply } from '../../llms/types';
import { Memory, RECENT } from '../../memory/memory';
import { AgentMessage, messageOf } from '../../schema/agent-message';
import type { ChatMessage, ToolCall } from '../../schema/chat-message';
import { ConfigurationError, LagentError, ParseError, ValidationError } from '../../schema/errors';
import type { ReasoningInfo } from '../../schema/reasoning';
import type { SessionId } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import type { AgentBase, ForwardOptions, ForwardResult } from '../agent-base';
import { clientToolsInForce, markClientCalls } from '../interceptors/approvals/client-tools';
import { withFormatInstruction } from './format-instruction';
import { askModel, modelCall, StreamedRequest } from './model-call';
import type { Turn } from './turn';

/* The built-in forwards of Agent and AsyncAgent: one model call, in two parts around it. */

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
 * Marks the `forward` methods of the four agent classes (set by each class, on the function itself): they make
 * no sub-calls, so calls run them without a call frame. Its value is the forward's {@link ForwardParts} (the
 * non-streaming ones), or null. A subclass's own `forward`, or one set on an instance, is another function and
 * has no mark.
 */
const BUILTIN_FORWARD: unique symbol = Symbol('lagent-ts.builtinForward');

/** Marks a built-in `forward` that makes no sub-calls (see {@link agentCallSteps}). */
export function registerPlainForward(forward: object, parts: ForwardParts | null = null): void {
  Object.defineProperty(forward, BUILTIN_FORWARD, { value: parts });
}

/** A built-in `forward`'s parts (null: plain, without parts), or undefined for any other forward. */
export function plainForwardOf(forward: object): ForwardParts | null | undefined {
  return (forward as { [BUILTIN_FORWARD]?: ForwardParts | null })[BUILTIN_FORWARD];
}

/**
 * The default forward of `Agent` and `AsyncAgent` in parts: the session's memory through the aggregator
 * to the model (`generate` when the model has its own or the agent offers tools, else `chat`), then the reply
 * from its answer. The model's answer is a value for a sync model and a promise for an async one; the parts
 * are the same. A call runs the parts as its own steps only when no model-call hook applies to it (see
 * `Turn.forward`); else the forward asks through the hooks ({@link askInFrame}).
 */
export const MODEL_TURN: ForwardParts = {
  ask(agent, memory, messages, options) {
    const llm = requireLLM(agent);
    const sessionId = options.sessionId;
    const prompt = promptOf(
      agent,
      agent.memory ? (memory ?? agent.memory.get(sessionId)) : scratchMemory(messages),
    );
    return askModel(llm, prompt, modelParams(agent, options));
  },
  answer(agent, answer, sessionId) {
    if (typeof answer === 'string') return buildReply(agent, answer, sessionId);
    const reply = modelReplyOf(agent, answer);
    if (agent.tools === undefined && reply.toolCalls.length > 0) {
      // What `chat` would have refused: a tool call the agent offered no tools for.
      const client = (agent.llm as { clientName?: unknown } | undefined)?.clientName;
      throw toolCallsError(typeof client === 'string' ? client : agent.name, reply.toolCalls);
    }
    return buildReply(agent, reply.content, sessionId, reply.toolCalls, reply);
  },
};

/**
 * A model's answer as a reply. A model-call interceptor that answers itself (from JavaScript, unchecked) may
 * leave out `toolCalls`; anything that is not a reply is refused with what it was, before it reaches memory.
 */
function modelReplyOf(agent: AgentBase, answer: unknown): ModelReply {
  const reply = answer as ModelReply | null | undefined;
  if (reply === null || typeof reply !== 'object' || typeof reply.content !== 'string') {
    throw new ValidationError({
      message: `${agent.name}: a model call answered ${describe(answer)}; a model reply is a string or { content: string, toolCalls? }`,
      field: 'reply',
    });
  }
  if (reply.toolCalls === undefined) return { ...reply, toolCalls: [] };
  if (!Array.isArray(reply.toolCalls)) {
    throw new ValidationError({
      message: `${agent.name}: a model reply's toolCalls must be an array, got ${typeof reply.toolCalls}`,
      field: 'reply.toolCalls',
    });
  }
  return reply;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return `an object with ${Object.keys(value).slice(0, 5).join(', ') || 'no keys'}`;
}

/** The call of `agent` whose frame this code runs in, when it is one (its model-call hooks apply). */
function ownCall(agent: AgentBase): Turn | undefined {
  const frame = currentFrame() as Turn | undefined;
  return frame?.agent === agent ? frame : undefined;
}

/**
 * {@link MODEL_TURN}'s request as `Agent.forward` and `AsyncAgent.forward` make it, through the model-call hooks
 * of the agent's call (a budget, a durable journal, summaries, tracing, users' interceptors): the answer, or a
 * promise of it.
 */
export function askInFrame(
  agent: AgentBase,
  messages: AgentMessage[],
  options: ForwardOptions,
  sync = false,
): unknown {
  const llm = requireLLM(agent);
  const prompt = buildPrompt(agent, messages, options.sessionId);
  const turn = ownCall(agent);
  const params = modelParams(agent, options);
  return turn === undefined ? askModel(llm, prompt, params) : modelCall(turn, llm, prompt, params, sync);
}

/**
 * The streamed model request of a built-in streaming forward, through the model-call hooks of the agent's call
 * (see {@link StreamedRequest}: open it, relay its stream, then finish or fail it).
 */
export function streamedRequest(
  agent: AgentBase,
  llm: unknown,
  prompt: ChatMessage[],
  options: ForwardOptions,
  sync: boolean,
): StreamedRequest {
  return new StreamedRequest(ownCall(agent), llm, prompt, modelParams(agent, options), sync);
}

/** A streamed model answer as the streaming forwards assemble it (and a durable call journals it). */
export interface StreamedAnswer extends ReasoningInfo {
  content: string;
  toolCalls?: ToolCall[] | undefined;
}

/** What a model step's input digest covers: the messages the call was given. */
export function digestInput(messages: AgentMessage[]): unknown {
  let text = '';
  for (const message of messages) {
    const content = message.content;
    // Text is what a replay may see change; other content (tool results, which a replay takes from the
    // journal itself) is known by its shape.
    text += `${message.sender}\u0000${typeof content === 'string' ? content : shapeOf(content)}\u0001`;
  }
  return text;
}

/** A cheap description of non-text content: its kind and size. */
function shapeOf(content: unknown): string {
  if (Array.isArray(content)) return `array:${content.length}`;
  return content === null ? 'null' : typeof content;
}

export interface Forwarding {
  forward(messages: AgentMessage[], options: ForwardOptions): unknown;
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
  return promptOf(agent, agent.memory ? agent.memory.get(sessionId) : scratchMemory(messages));
}

/** The turn's messages alone, for an agent without memory. */
function scratchMemory(messages: AgentMessage[]): Memory {
  const memory = new Memory();
  memory.add(messages);
  return memory;
}

/** {@link buildPrompt} with the memory to aggregate at hand. */
function promptOf(agent: AgentBase, memory: Memory | undefined): ChatMessage[] {
  const parser = agent.outputFormat;
  let prompt = agent.aggregator.aggregate(memory, agent.name, parser, agent.template);
  if (parser?.addsFormatInstruction === true) prompt = withFormatInstruction(prompt, parser);
  return prompt;
}

/**
 * The default forward's reply: the raw text, a message with `formatted` when there is an output format,
 * or a message with `formatted: { toolCalls }` when the model called tools. The model's reasoning, when it
 * gave any, goes into the message's `extraInfo` (`reasoning`, and the provider's `reasoningParts`), never into
 * its content.
 */
export function buildReply(
  agent: AgentBase,
  raw: string,
  sessionId: SessionId,
  toolCalls?: ToolCall[] | undefined,
  reasoning?: ReasoningInfo | undefined,
): AgentMessage | string {
  const thought =
    reasoning === undefined || (reasoning.reasoning === undefined && reasoning.reasoningParts === undefined)
      ? undefined
      : reasoningExtra(reasoning);
  // A reply that calls tools is not parsed: its `formatted` is the calls (their ids unique in the session,
  // whatever the server sent: an approval names one call), for an executor to run.
  if (toolCalls !== undefined && toolCalls.length > 0) {
    const history = agent.memory?.get(sessionId)?.[RECENT]();
    let calls = uniqueToolCallIds(toolCalls, history);
    // Calls of the caller's own tools are marked: they wait for the caller (see client-tools.ts).
    const clientTools = agent.tools === undefined ? undefined : clientToolsInForce();
    if (clientTools !== undefined) calls = markClientCalls(calls, clientTools);
    return new AgentMessage({
      sender: agent.name,
      content: raw,
      formatted: { toolCalls: calls },
      extraInfo: thought,
    });
  }
  const parser = agent.outputFormat;
  if (!parser) {
    return thought === undefined
      ? raw
      : new AgentMessage({ sender: agent.name, content: raw, extraInfo: thought });
  }
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
  return new AgentMessage({ sender: agent.name, content: raw, formatted, extraInfo: thought });
}

/** The `extraInfo` of a reply that reasoned: its reasoning text and parts; undefined when it has neither. */
function reasoningExtra(reasoning: ReasoningInfo): ReasoningInfo | undefined {
  const text = reasoning.reasoning;
  const parts = reasoning.reasoningParts;
  const hasText = typeof text === 'string' && text !== '';
  const hasParts = parts !== undefined && parts.length > 0;
  if (!hasText && !hasParts) return undefined;
  const extra: ReasoningInfo = {};
  if (hasText) extra.reasoning = text;
  if (hasParts) extra.reasoningParts = parts;
  return extra;
}

/**
 * A chunk of the model's reasoning: the text so far unchanged (so `delta` is `''`), the `formatted` of the
 * chunk before it, and the reasoning it adds.
 */
export function reasoningChunk(
  agent: AgentBase,
  content: string,
  reasoningDelta: string,
  formatted: unknown,
): AgentMessage {
  const chunk = messageOf(content, agent.name, formatted, null, null, null, AgentStatusCode.STREAM_ING);
  chunk.delta = '';
  chunk.reasoningDelta = reasoningDelta;
  return chunk;
}

/** What reads a stream's partial `formatted` chunk by chunk (`JSONParser.streamParser()`). */
export interface StreamReader {
  readonly received: number;
  feed(content: string, delta?: string): unknown;
}

/** A reader for one stream of `agent`'s output, when its output format reads incrementally (JSONParser). */
export function streamReader(agent: AgentBase): StreamReader | undefined {
  const parser = agent.outputFormat as { streamParser?: () => StreamReader } | undefined;
  return typeof parser?.streamParser === 'function' ? parser.streamParser() : undefined;
}

/**
 * A streaming chunk of the default forward; `formatted` is best effort on partial text. With a `reader`,
 * it is the reader's live partial value, read from the chunk's `delta` only (see `PartialJSONParser`).
 * `previousLength` is the length of the stream's previous chunk: when the model's `delta` accounts for
 * exactly what the content grew by, it becomes the chunk's `delta`, so nothing downstream compares the
 * whole text so far with the previous chunk's (which would make a long stream quadratic in its length).
 * A chunk of reasoning carries its `reasoningDelta` (and the text so far, unchanged).
 */
export function buildChunk(
  agent: AgentBase,
  content: string,
  delta?: string | undefined,
  reader?: StreamReader | undefined,
  previousLength = 0,
  reasoningDelta?: string | undefined,
): AgentMessage {
  let formatted: unknown = null;
  const parser = agent.outputFormat;
  if (reader) formatted = reader.feed(content, delta) ?? null;
  else if (parser) {
    try {
      formatted = parser.parseResponse(content);
    } catch {
      formatted = null;
    }
  }
  const chunk = new AgentMessage({
    sender: agent.name,
    content,
    formatted,
    streamState: AgentStatusCode.STREAM_ING,
  });
  if (delta !== undefined && previousLength + delta.length === content.length) chunk.delta = delta;
  if (reasoningDelta !== undefined) chunk.reasoningDelta = reasoningDelta;
  return chunk;
}

/**
 * The call params for the model: the call's options, with the agent's native tools when it has any (and the
 * client tools in force beside them), and the response format its output format asks for (a `JSONParser`'s
 * schema) unless the call gives one.
 */
export function modelParams<O extends object>(agent: AgentBase, options: O): O {
  const format = (agent.outputFormat as { responseFormat?: unknown } | undefined)?.responseFormat;
  const tools = agent.tools;
  if (tools === undefined && format === undefined) return options;
  // not a spread: see forwardOptionsOf
  const params = Object.assign({}, options) as O & { tools?: unknown; responseFormat?: unknown };
  if (tools !== undefined) {
    const clientTools = clientToolsInForce();
    params.tools = clientTools === undefined ? tools : [...tools, ...clientTools];
  }
  if (format !== undefined && params.responseFormat === undefined) params.responseFormat = format;
  return params;
}
