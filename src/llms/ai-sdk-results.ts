import {
  APIConnectionError as OpenAIConnectionError,
  APIError as OpenAIError,
  APIUserAbortError as OpenAIUserAbortError,
} from 'openai';
import type { ToolCall } from '../schema/chat-message';
import { LLMRequestError } from '../schema/errors';
import type { AISDKReasoningPart, ReasoningPart } from '../schema/reasoning';
import type { AISDKContent, AISDKFinishReason, AISDKStreamPart, AISDKUsage } from './ai-sdk-types';
import type { ReasoningStream } from './reasoning-stream';
import { parseToolArguments, type RequestTools, type ToolCallAssembler } from './tool-calls';
import { reportedCount, type TokenUsage } from './usage';

/** The fields of a `tool-call` content or stream part that are read. */
interface ToolCallPart {
  type: 'tool-call';
  toolCallId?: unknown;
  toolName?: unknown;
  input?: unknown;
  providerExecuted?: unknown;
}

/** A tool call's arguments: AI SDK v2+ sends JSON text; an object is taken as it is. */
function argumentsOf(input: unknown): Record<string, unknown> | string {
  if (typeof input === 'string') return parseToolArguments(input);
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) {
    return input as Record<string, unknown>;
  }
  return input === undefined ? {} : JSON.stringify(input);
}

/** Whether a tool-call part is one the caller must run (not one the provider ran itself). */
function isClientCall(part: AISDKContent | AISDKStreamPart): part is ToolCallPart {
  return part.type === 'tool-call' && (part as ToolCallPart).providerExecuted !== true;
}

/** A reasoning part's provider metadata, when it has any. */
function metadataOf(part: unknown): Record<string, Record<string, unknown>> | undefined {
  const metadata = (part as { providerMetadata?: unknown } | null)?.providerMetadata;
  return metadata !== null && typeof metadata === 'object'
    ? (metadata as Record<string, Record<string, unknown>>)
    : undefined;
}

/**
 * The text, tool calls and reasoning of a `doGenerate` result's content (sources and files are skipped): each
 * `reasoning` part's text joins the reasoning (a blank line apart) and is kept, with its provider metadata, as
 * a part to send back to `provider`.
 */
export function readContent(
  content: readonly AISDKContent[],
  tools: RequestTools | undefined,
  where: string,
  provider = '',
): {
  text: string;
  toolCalls: ToolCall[];
  reasoning: string | undefined;
  reasoningParts: ReasoningPart[] | undefined;
} {
  if (!Array.isArray(content)) {
    throw new LLMRequestError({ message: `${where} failed: the model returned no content list` });
  }
  let text = '';
  const toolCalls: ToolCall[] = [];
  let reasoning: string | undefined;
  let reasoningParts: ReasoningPart[] | undefined;
  for (const part of content) {
    if (part?.type === 'text') text += String((part as { text?: unknown }).text ?? '');
    else if (part?.type === 'reasoning') {
      const thought = String((part as { text?: unknown }).text ?? '');
      if (thought !== '') reasoning = reasoning === undefined ? thought : `${reasoning}\n\n${thought}`;
      const kept: AISDKReasoningPart = { type: 'ai-sdk.reasoning', provider, text: thought };
      const metadata = metadataOf(part);
      if (metadata !== undefined) kept.providerMetadata = metadata;
      reasoningParts ??= [];
      reasoningParts.push(kept);
    } else if (part !== null && isClientCall(part)) {
      const name = String(part.toolName ?? '');
      toolCalls.push({
        id: typeof part.toolCallId === 'string' ? part.toolCallId : `call_${toolCalls.length}`,
        name: tools?.names.get(name) ?? name,
        arguments: argumentsOf(part.input),
      });
    }
  }
  return { text, toolCalls, reasoning, reasoningParts };
}

/** The state of one `doStream` stream as it is read. */
export interface AISDKStreamState {
  calls: number;
  usage: TokenUsage | undefined;
  finishReason: string | undefined;
  /** Whether the `finish` part came (a stream that ends without one reported no usage either). */
  finished: boolean;
  /** The provider (`model.provider`) reasoning parts are kept for. */
  provider: string;
  reasoning: ReasoningStream;
  /** Reasoning parts being streamed, by id: their text and metadata so far. */
  open: Map<string, AISDKReasoningPart>;
}

/**
 * What one stream part adds: its text; a client tool call goes to `assembler` as one whole delta; reasoning
 * deltas go to `state.reasoning`, and each reasoning part, with the metadata its start, deltas and end carry
 * (Anthropic sends the signature on a delta, OpenAI the encrypted content on the end), is kept when it ends.
 */
export function readStreamPart(
  part: AISDKStreamPart,
  assembler: ToolCallAssembler,
  state: AISDKStreamState,
): string {
  switch (part.type) {
    case 'reasoning-start':
    case 'reasoning-delta':
    case 'reasoning-end': {
      const { id, delta } = part as { id?: unknown; delta?: unknown };
      const key = String(id ?? '');
      let open = state.open.get(key);
      if (open === undefined) {
        if (state.reasoning.text !== '' && part.type !== 'reasoning-end') state.reasoning.add('\n\n');
        open = { type: 'ai-sdk.reasoning', provider: state.provider, text: '' };
        state.open.set(key, open);
      }
      const metadata = metadataOf(part);
      if (metadata !== undefined) open.providerMetadata = mergeMetadata(open.providerMetadata, metadata);
      if (typeof delta === 'string') {
        open.text += delta;
        state.reasoning.add(delta);
      }
      if (part.type === 'reasoning-end') {
        state.open.delete(key);
        state.reasoning.addPart(open);
      }
      return '';
    }
    case 'text-delta': {
      // v2+ sends `delta`; earlier drafts sent `textDelta`.
      const { delta, textDelta } = part as { delta?: unknown; textDelta?: unknown };
      return typeof delta === 'string' ? delta : typeof textDelta === 'string' ? textDelta : '';
    }
    case 'tool-call': {
      if (!isClientCall(part)) return '';
      const input = part.input;
      assembler.push([
        {
          index: state.calls++,
          id: part.toolCallId,
          function: {
            name: part.toolName,
            arguments: typeof input === 'string' ? input : JSON.stringify(input ?? {}),
          },
        },
      ]);
      return '';
    }
    case 'finish': {
      const finish = part as { usage?: AISDKUsage; finishReason?: AISDKFinishReason };
      state.usage = usageOf(finish.usage);
      state.finishReason = finishReasonOf(finish.finishReason);
      state.finished = true;
      return '';
    }
    case 'error':
      throw (part as { error?: unknown }).error ?? new Error('the model sent an error part');
    default:
      return '';
  }
}

/** A reported count (a number, or `{ total }`): finite and >= 0, else undefined. */
function count(value: unknown): number | undefined {
  const number = typeof value === 'number' ? value : (value as { total?: unknown } | null | undefined)?.total;
  return typeof number === 'number' && Number.isFinite(number) && number >= 0 ? number : undefined;
}

/** Metadata of one reasoning part merged over what earlier stream parts gave, provider by provider. */
function mergeMetadata(
  base: Record<string, Record<string, unknown>> | undefined,
  next: Record<string, Record<string, unknown>>,
): Record<string, Record<string, unknown>> {
  if (base === undefined) return next;
  const merged = { ...base };
  for (const [provider, fields] of Object.entries(next)) merged[provider] = { ...base[provider], ...fields };
  return merged;
}

/**
 * An AI SDK usage (flat `v2` or split `v3`/`v4`) as a {@link TokenUsage}, with cache reads and writes and
 * reasoning tokens when reported; undefined when it has no counts. Completion tokens include reasoning: a `v2`
 * provider that counts reasoning apart from `outputTokens` (Google's) says so in `totalTokens`, which is then
 * what the prompt leaves of it.
 */
export function usageOf(usage: AISDKUsage | undefined): TokenUsage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const input = count(usage.inputTokens);
  const output = count(usage.outputTokens);
  const total = count((usage as { totalTokens?: unknown }).totalTokens);
  if (input === undefined && output === undefined && total === undefined) return undefined;
  const promptTokens = input ?? 0;
  let completionTokens = output ?? 0;
  if (total !== undefined && total - promptTokens > completionTokens) completionTokens = total - promptTokens;
  const result: TokenUsage = {
    promptTokens,
    completionTokens,
    totalTokens: Math.max(total ?? 0, promptTokens + completionTokens),
  };
  const split = typeof usage.inputTokens === 'object' && usage.inputTokens !== null;
  const flat = usage as { reasoningTokens?: unknown; cachedInputTokens?: unknown };
  const inputs = usage.inputTokens as { cacheRead?: unknown; cacheWrite?: unknown } | undefined;
  const outputs = usage.outputTokens as { reasoning?: unknown } | undefined;
  const cacheRead = reportedCount(split ? inputs?.cacheRead : flat.cachedInputTokens);
  const cacheWrite = split ? reportedCount(inputs?.cacheWrite) : 0;
  const reasoning = reportedCount(split ? outputs?.reasoning : flat.reasoningTokens);
  if (cacheRead > 0) result.cachedPromptTokens = Math.min(cacheRead, promptTokens);
  if (cacheWrite > 0) result.cacheWriteTokens = Math.min(cacheWrite, promptTokens);
  if (reasoning > 0) result.reasoningTokens = reasoning;
  return result;
}

const FINISH_REASONS: Readonly<Record<string, string>> = {
  'tool-calls': 'tool_calls',
  'content-filter': 'content_filter',
};

/** An AI SDK finish reason in OpenAI's spelling (`stop`, `length`, `tool_calls`, `content_filter`, ...). */
export function finishReasonOf(reason: AISDKFinishReason | undefined): string | undefined {
  const unified = typeof reason === 'string' ? reason : reason?.unified;
  if (typeof unified !== 'string') return undefined;
  return FINISH_REASONS[unified] ?? unified;
}

const API_CALL_ERROR = Symbol.for('vercel.ai.error.AI_APICallError');

/** The fields of the AI SDK's `APICallError` that are read. */
interface APICallErrorFields {
  message: string;
  statusCode?: number | undefined;
  responseHeaders?: Record<string, string> | undefined;
  isRetryable?: boolean | undefined;
  cause?: unknown;
}

function isAPICallError(error: unknown): error is Error & APICallErrorFields {
  return (
    error instanceof Error &&
    ((error as unknown as Record<symbol, unknown>)[API_CALL_ERROR] === true ||
      error.name === 'AI_APICallError')
  );
}

/**
 * An AI SDK error in the shape the shared retry machinery (`request-retry.ts`) reads: an `APICallError` with a
 * status becomes the `openai` SDK's error of that status (429, 408 and 5xx retried, `retry-after(-ms)`
 * honoured), one without a status that the provider calls retryable a connection failure (retried), an abort
 * an abort. Other errors (malformed replies: `AI_JSONParseError`, `AI_TypeValidationError`, ...) stay as they
 * are and are not retried. The original error is the `cause`.
 */
export function toSharedAISDKError(error: unknown): unknown {
  if (error instanceof Error && error.name === 'AbortError') {
    return withCause(new OpenAIUserAbortError({ message: error.message }), error);
  }
  if (!isAPICallError(error)) return error;
  let shared: Error;
  // A reply with a success status that could not be read (malformed JSON) is not the server refusing.
  if (typeof error.statusCode === 'number' && error.statusCode < 400) return error;
  if (typeof error.statusCode === 'number') {
    shared = OpenAIError.generate(
      error.statusCode,
      { error: { message: error.message } },
      undefined,
      new Headers(error.responseHeaders ?? {}),
    );
  } else if (error.isRetryable === true) {
    const cause = error.cause instanceof Error ? error.cause : undefined;
    shared = new OpenAIConnectionError({ message: error.message, cause });
  } else return error;
  return withCause(shared, error);
}

function withCause(shared: Error, cause: unknown): Error {
  Object.defineProperty(shared, 'cause', { value: cause, configurable: true, writable: true });
  return shared;
}
