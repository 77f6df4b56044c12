import { uniqueToolCallIds } from '../../actions/tool-call-steps';
import type { Meter } from '../../core/budget';
import { currentFrame } from '../../core/call-context';
import { modelStep } from '../../core/durable-steps';
import { streamStep } from '../../core/durable-stream';
import { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import { toolCallsError } from '../../llms/tool-calls';
import type { ModelReply } from '../../llms/types';
import { modelName } from '../../llms/wrapped-usage';
import { Memory, RECENT } from '../../memory/memory';
import { AgentMessage, messageOf } from '../../schema/agent-message';
import type { ChatMessage, ToolCall } from '../../schema/chat-message';
import { ConfigurationError, LagentError, ParseError } from '../../schema/errors';
import type { ReasoningInfo } from '../../schema/reasoning';
import type { SessionId } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import { isThenable } from '../../utils/is';
import {
  type AgentBase,
  type AgentEvents,
  EMITTER,
  type ForwardOptions,
  type ForwardResult,
} from '../agent-base';
import { observers } from '../observers';
import { emitEvent } from './events';
import { withFormatInstruction } from './format-instruction';
import { beginModelCall } from './metering';

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
    meter?: Meter | undefined,
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

/** A registered built-in `forward`'s parts (null: plain, without parts), or undefined for any other forward. */
export function plainForwardOf(forward: object): ForwardParts | null | undefined {
  return PLAIN_FORWARDS.get(forward);
}

/**
 * The default forward of `Agent` and `AsyncAgent` in parts: the session's memory through the aggregator
 * to the model (`chat`, or `generate` with the agent's native tools), then the reply from its answer.
 * The model's answer is a value for a sync model and a promise for an async one; the parts are the same.
 */
export const MODEL_TURN: ForwardParts = {
  ask(agent, memory, messages, options, meter) {
    const llm = requireLLM(agent) as ModelLike;
    const sessionId = options.sessionId;
    const prompt = promptOf(
      agent,
      agent.memory ? (memory ?? agent.memory.get(sessionId)) : scratchMemory(messages),
      sessionId,
    );
    // `generate` when the model has its own (an API client, a mock): its reply carries reasoning and tool
    // calls. A model that only implements `chat` is asked with `chat`, as `generate` would do anyway.
    const generates = agent.tools !== undefined || generatesReplies(llm);
    const params = modelParams(agent, options);
    if (meter !== undefined) {
      const call = beginModelCall(meter, agent.name, llm, prompt, params);
      let answer: unknown;
      try {
        answer = generates ? llm.generate(prompt, call.params) : llm.chat(prompt, call.params);
      } catch (error) {
        call.fail(error);
        throw error;
      }
      return call.end(answer);
    }
    return generates ? llm.generate(prompt, params) : llm.chat(prompt, params);
  },
  answer(agent, answer, sessionId) {
    if (typeof answer === 'string') return buildReply(agent, answer, sessionId);
    const reply = answer as ModelReply;
    if (agent.tools === undefined && reply.toolCalls.length > 0) {
      // What `chat` would have refused: a tool call the agent offered no tools for.
      const client = (agent.llm as { clientName?: unknown } | undefined)?.clientName;
      throw toolCallsError(typeof client === 'string' ? client : agent.name, reply.toolCalls);
    }
    return buildReply(agent, reply.content, sessionId, reply.toolCalls, reply);
  },
};

/** Whether a model's `generate` is its own rather than the base classes' (`chat` wrapped). */
function generatesReplies(llm: ModelLike): boolean {
  const generate = llm.generate;
  return generate !== BaseLLM.prototype.generate && generate !== AsyncBaseLLM.prototype.generate;
}

/**
 * {@link MODEL_TURN}'s request as `Agent.forward` and `AsyncAgent.forward` make it: counted by the budget and
 * journaled in the durable call of the frame it runs in (the call's own: a built-in forward runs in a frame
 * when tracing, a budget or a journal needs one, or from a subclass's `forward`).
 */
export function askInFrame(
  agent: AgentBase,
  messages: AgentMessage[],
  options: ForwardOptions,
  sync = false,
): unknown {
  const compacted = compactFirst(agent, options.sessionId);
  if (isThenable(compacted)) {
    if (sync) throw asyncSummarizer(agent);
    return compacted.then(() => askNow(agent, messages, options));
  }
  return askNow(agent, messages, options);
}

function askNow(agent: AgentBase, messages: AgentMessage[], options: ForwardOptions): unknown {
  const frame = currentFrame();
  const meter = frame?.meter;
  const scope = frame?.durable;
  if (scope === undefined) return MODEL_TURN.ask(agent, undefined, messages, options, meter);
  return modelStep(scope, agent.name, digestInput(messages), () =>
    MODEL_TURN.ask(agent, undefined, messages, options, meter),
  );
}

/**
 * A streamed model request of a built-in streaming forward: its params (with the budget's `onUsage`), the
 * answer recorded by its durable call when it is replayed, `end`, to call once the stream has ended
 * (counts it and journals it: a value, or a promise with an async store), and `fail`, to call when it
 * failed or was left early (counts what it used: `content`, the text it gave).
 */
export interface StreamedRequest {
  readonly params: object;
  readonly recorded: StreamedAnswer | undefined;
  end(content: string, toolCalls: ToolCall[] | undefined, reasoning?: ReasoningInfo | undefined): unknown;
  fail(error: unknown, content: string): void;
}

/** A streamed model answer as a durable call journals it. */
export interface StreamedAnswer extends ReasoningInfo {
  content: string;
  toolCalls?: ToolCall[] | undefined;
}

const UNMETERED_STREAM = {
  recorded: undefined,
  end: () => undefined,
  fail: () => undefined,
};

/** Begins the streamed model request of a built-in streaming forward (see {@link StreamedRequest}). */
export function beginStreamedRequest(
  agent: AgentBase,
  llm: unknown,
  prompt: ChatMessage[],
  messages: AgentMessage[],
  options: ForwardOptions,
): StreamedRequest {
  const params = modelParams(agent, options);
  const frame = currentFrame();
  const meter = frame?.meter;
  const scope = frame?.durable;
  if (meter === undefined && scope === undefined) return { params, ...UNMETERED_STREAM };
  const step = scope === undefined ? undefined : streamStep(scope, agent.name, digestInput(messages));
  if (step?.recorded !== undefined) {
    return {
      params,
      recorded: step.recorded as StreamedRequest['recorded'],
      end: UNMETERED_STREAM.end,
      fail: UNMETERED_STREAM.fail,
    };
  }
  const call = meter === undefined ? undefined : beginModelCall(meter, agent.name, llm, prompt, params);
  return {
    params: call?.params ?? params,
    recorded: undefined,
    end(content, toolCalls, reasoning) {
      const answer: StreamedAnswer = toolCalls === undefined ? { content } : { content, toolCalls };
      if (reasoning?.reasoning !== undefined) answer.reasoning = reasoning.reasoning;
      if (reasoning?.reasoningParts !== undefined) answer.reasoningParts = reasoning.reasoningParts;
      call?.end(answer);
      return step?.record(answer);
    },
    fail(error, content) {
      call?.fail(error, content);
    },
  };
}

/** An aggregator that folds older turns into summaries (`TokenWindowAggregator` with `summarize`). */
interface Compacting {
  readonly summarizes: boolean;
  compact(memory: Memory, name: string): void | Promise<void>;
}

/** True when the agent's aggregator summarises: its calls then run the built-in forward in a frame. */
export function summarizes(agent: AgentBase): boolean {
  return (agent.aggregator as Partial<Compacting> | undefined)?.summarizes === true;
}

/**
 * Folds the session's older turns into a summary before the prompt is built, when the agent's aggregator
 * summarises: the summariser runs as a sub-call of this call (journaled, traced, taken back if the call
 * fails). A promise when the summariser's model is async.
 */
export function compactFirst(agent: AgentBase, sessionId: SessionId): void | Promise<void> {
  if (!summarizes(agent)) return;
  const memory = agent.memory?.get(sessionId);
  if (memory === undefined) return;
  return (agent.aggregator as unknown as Compacting).compact(memory, agent.name);
}

/** The error of a synchronous agent whose aggregator summarises with an async model. */
export function asyncSummarizer(agent: AgentBase): ConfigurationError {
  return new ConfigurationError({
    message: `${agent.name}: its TokenWindowAggregator summarises with an async model, which a synchronous agent cannot wait for; give summarize a synchronous llm`,
  });
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

/** What {@link MODEL_TURN} needs of a model, sync or async. */
interface ModelLike {
  chat(messages: ChatMessage[], params?: object): unknown;
  generate(messages: ChatMessage[], params?: object): unknown;
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
  const parser = agent.outputFormat;
  let prompt = agent.aggregator.aggregate(memory, agent.name, parser, agent.template);
  if (parser?.addsFormatInstruction === true) prompt = withFormatInstruction(prompt, parser);
  if (agent[EMITTER] !== undefined || observers.count > 0)
    emitEvent(agent, 'llmStart', { agent, sessionId, messages: prompt, path: '' });
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
  if (agent[EMITTER] !== undefined || observers.count > 0) {
    const event: AgentEvents['llmEnd'][0] = {
      agent,
      sessionId,
      response: raw,
      path: '',
      model: answeringModel(agent.llm, sessionId),
    };
    if (thought?.reasoning !== undefined) event.reasoning = thought.reasoning;
    emitEvent(agent, 'llmEnd', event);
  }
  // A reply that calls tools is not parsed: its `formatted` is the calls (their ids unique in the session,
  // whatever the server sent: an approval names one call), for an executor to run.
  if (toolCalls !== undefined && toolCalls.length > 0) {
    const history = agent.memory?.get(sessionId)?.[RECENT]();
    return new AgentMessage({
      sender: agent.name,
      content: raw,
      formatted: { toolCalls: uniqueToolCallIds(toolCalls, history) },
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

/**
 * The name of the model that gave a session's latest answer: for a fallback chain the one of its models that
 * did (a session's calls run one at a time, so it is this answer's), else the llm's own `model`.
 */
function answeringModel(llm: unknown, sessionId: SessionId): string | undefined {
  const chain = llm as { lastModelOf?: (sessionId: SessionId) => { name: string } | undefined } | undefined;
  if (typeof chain?.lastModelOf === 'function') return chain.lastModelOf(sessionId)?.name;
  return modelName(llm);
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
 * The call params for the model: the call's options, with the agent's native tools when it has any, and the
 * response format its output format asks for (a `JSONParser`'s schema) unless the call gives one.
 */
export function modelParams<O extends object>(agent: AgentBase, options: O): O {
  const format = (agent.outputFormat as { responseFormat?: unknown } | undefined)?.responseFormat;
  if (agent.tools === undefined && format === undefined) return options;
  // not a spread: see forwardOptionsOf
  const params = Object.assign({}, options) as O & { tools?: unknown; responseFormat?: unknown };
  if (agent.tools !== undefined) params.tools = agent.tools;
  if (format !== undefined && params.responseFormat === undefined) params.responseFormat = format;
  return params;
}
