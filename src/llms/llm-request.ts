import type { OpenAITool, ToolCall } from '../schema/chat-message';
import type { ReasoningPart } from '../schema/reasoning';
import { type ResponseFormat, strictJSONSchema } from '../schema/response-format';
import { ModelStatusCode } from '../schema/status';
import { toolsAsJSON } from './tool-calls';
import type { ChatMessage, LLMCallParams, ModelReply, ResolvedGenParams, StreamChunk } from './types';
import type { TokenUsage } from './usage';

/*
 * What the model wrappers (cache, recording, replay) share: a request in a canonical JSON form, and an answer
 * in a form that serves `chat`, `generate` and `streamChat` alike.
 */

/**
 * How a request is answered: `text` for `chat()` (the text alone), `reply` for `generate()` and `streamChat()`
 * (text and tool calls). An answer recorded as one serves only requests of the same mode.
 */
export type RequestMode = 'text' | 'reply';

/** The call params that shape a model's answer; every other key (`sessionId`, `signal`, ...) is left out. */
const ANSWER_KEYS = [
  'maxNewTokens',
  'temperature',
  'topP',
  'topK',
  'repetitionPenalty',
  'stopWords',
  'toolChoice',
  'parallelToolCalls',
  'reasoning',
  'responseFormat',
] as const;

/** A request as the wrappers compare it: the messages, the params that shape the answer, the tools offered. */
export interface CanonicalRequest {
  mode: RequestMode;
  messages: ChatMessage[];
  params: Record<string, unknown>;
  tools?: OpenAITool[] | undefined;
}

/**
 * The request in canonical form. `params` holds the answer-shaping keys the caller passed (a single stop word
 * as a list), merged over `defaults` when given (the wrapped model's `genParams`, for a cache).
 */
export function canonicalRequest(
  mode: RequestMode,
  messages: readonly ChatMessage[],
  params: LLMCallParams | undefined,
  defaults?: ResolvedGenParams,
): CanonicalRequest {
  const chosen: Record<string, unknown> = defaults ? { ...defaults } : {};
  if (params !== undefined) {
    for (const key of ANSWER_KEYS) {
      const value = params[key];
      if (value === undefined) continue;
      chosen[key] =
        key === 'stopWords' && typeof value === 'string'
          ? [value]
          : key === 'responseFormat'
            ? // A zod schema is known by its JSON Schema.
              (strictJSONSchema(value as ResponseFormat) ?? { type: 'json' })
            : value;
    }
  }
  const request: CanonicalRequest = { mode, messages: messages as ChatMessage[], params: chosen };
  const tools = params?.tools;
  if (tools !== undefined && tools.length > 0) request.tools = toolsAsJSON(tools);
  return request;
}

/** JSON with object keys sorted and `undefined` members left out: equal values give equal text. */
export function canonicalJSON(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    return text === undefined ? 'null' : text;
  }
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out += canonicalJSON(value[i]);
    }
    return `${out}]`;
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return canonicalJSON(toJSON.call(value));
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const member = record[key];
    if (member === undefined || typeof member === 'function') continue;
    if (!first) out += ',';
    first = false;
    out += `${JSON.stringify(key)}:${canonicalJSON(member)}`;
  }
  return `${out}}`;
}

/** The canonical JSON text of a request: the key the wrappers look answers up by. */
export function requestKey(request: CanonicalRequest): string {
  return canonicalJSON(request);
}

/** One streamed chunk as stored: its state and delta (and `content` only when it is not the running sum). */
export interface StoredChunk {
  state: number;
  delta: string;
  content?: string | undefined;
  toolCalls?: ToolCall[] | undefined;
  reasoningDelta?: string | undefined;
  reasoning?: string | undefined;
  reasoningParts?: ReasoningPart[] | undefined;
}

/** A model's answer as the wrappers keep it: the whole reply, the streamed chunks when it was streamed, usage. */
export interface StoredAnswer {
  reply: ModelReply;
  chunks?: StoredChunk[] | undefined;
  usage?: TokenUsage | undefined;
}

/** Chunks in stored form: deltas, so a long stream is kept in space proportional to its text. */
export function storeChunks(chunks: readonly StreamChunk[]): StoredChunk[] {
  let running = '';
  return chunks.map((chunk) => {
    running += chunk.delta;
    const stored: StoredChunk = { state: chunk.state, delta: chunk.delta };
    if (chunk.content !== running) {
      stored.content = chunk.content;
      running = chunk.content;
    }
    if (chunk.toolCalls !== undefined) stored.toolCalls = chunk.toolCalls;
    if (chunk.reasoningDelta !== undefined) stored.reasoningDelta = chunk.reasoningDelta;
    if (chunk.reasoning !== undefined) stored.reasoning = chunk.reasoning;
    if (chunk.reasoningParts !== undefined) stored.reasoningParts = chunk.reasoningParts;
    return stored;
  });
}

/** The stream chunks of a stored answer: its recorded chunks, or one `END` chunk with the whole reply. */
export function answerChunks(answer: StoredAnswer): StreamChunk[] {
  if (answer.chunks === undefined) {
    const end: StreamChunk = {
      state: ModelStatusCode.END,
      content: answer.reply.content,
      delta: answer.reply.content,
    };
    if (answer.reply.toolCalls.length > 0) end.toolCalls = structuredClone(answer.reply.toolCalls);
    if (answer.reply.reasoning !== undefined) end.reasoning = answer.reply.reasoning;
    if (answer.reply.reasoningParts !== undefined)
      end.reasoningParts = structuredClone(answer.reply.reasoningParts);
    return [end];
  }
  let running = '';
  return answer.chunks.map((stored) => {
    running = stored.content ?? running + stored.delta;
    const chunk: StreamChunk = {
      state: stored.state as ModelStatusCode,
      content: running,
      delta: stored.delta,
    };
    if (stored.toolCalls !== undefined) chunk.toolCalls = structuredClone(stored.toolCalls);
    if (stored.reasoningDelta !== undefined) chunk.reasoningDelta = stored.reasoningDelta;
    if (stored.reasoning !== undefined) chunk.reasoning = stored.reasoning;
    if (stored.reasoningParts !== undefined) chunk.reasoningParts = structuredClone(stored.reasoningParts);
    return chunk;
  });
}

/** The reply a finished stream amounts to: its last chunk's text, tool calls and reasoning. */
export function replyOfChunks(chunks: readonly StreamChunk[]): ModelReply {
  const last = chunks.at(-1);
  const reply: ModelReply = { content: last?.content ?? '', toolCalls: last?.toolCalls ?? [] };
  if (last?.reasoning !== undefined) reply.reasoning = last.reasoning;
  if (last?.reasoningParts !== undefined) reply.reasoningParts = last.reasoningParts;
  return reply;
}

/** A copy of a stored reply, so callers may change what they get. */
export function copyReply(reply: ModelReply): ModelReply {
  const toolCalls = reply.toolCalls.length === 0 ? [] : structuredClone(reply.toolCalls);
  const copy: ModelReply = { content: reply.content, toolCalls };
  if (reply.finishReason !== undefined) copy.finishReason = reply.finishReason;
  if (reply.reasoning !== undefined) copy.reasoning = reply.reasoning;
  if (reply.reasoningParts !== undefined) copy.reasoningParts = structuredClone(reply.reasoningParts);
  if (reply.usage !== undefined) copy.usage = { ...reply.usage };
  return copy;
}
