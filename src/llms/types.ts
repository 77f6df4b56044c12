import type { TokenUsage } from './usage';

export type { ChatMessage } from '../schema/chat-message';

import type { OpenAITool, ToolCall } from '../schema/chat-message';
import type { ReasoningOptions, ReasoningPart } from '../schema/reasoning';
import type { ResponseFormat } from '../schema/response-format';
import type { SessionId } from '../schema/session';
import type { ModelStatusCode } from '../schema/status';

/** Generation parameters, Lagent's names in camelCase. */
export interface GenParams {
  maxNewTokens?: number | undefined;
  temperature?: number | undefined;
  topP?: number | undefined;
  topK?: number | undefined;
  repetitionPenalty?: number | undefined;
  /** Output is cut before the first stop word. A string means a single stop word. */
  stopWords?: string[] | string | undefined;
  /**
   * How hard a reasoning model thinks: OpenAI's `reasoning_effort`, Claude's extended thinking
   * (`thinking.budget_tokens`), the AI SDK's `reasoning`. Unset: the model's default (Claude: no thinking).
   */
  reasoning?: ReasoningOptions | undefined;
}

/** Generation parameters after defaults are applied; `stopWords` is always an array. */
export interface ResolvedGenParams {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  repetitionPenalty: number;
  stopWords: string[];
  /** Set only when given (in the options or for the call). */
  reasoning?: ReasoningOptions | undefined;
}

/**
 * A tool offered to the model: OpenAI function-tool JSON, or anything that lists its tools that way (an
 * action, a toolkit, an executor). A toolkit's API `Name.api` is sent as `Name__api` (OpenAI rejects dots) and
 * the model's calls to it come back named `Name.api`.
 */
export type ToolSpec = OpenAITool | { toOpenAITools(): OpenAITool[] };

/**
 * Whether the model may (`'auto'`), may not (`'none'`) or must (`'required'`) call a tool, or must call the
 * one named (`Name.api` or `Name__api` for a toolkit API).
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/**
 * What `chat()` / `generate()` / `streamChat()` take per call: generation overrides (never stored), the
 * session, for async models an `AbortSignal`, and the tools offered for native function calling. Other keys
 * an agent passes along are ignored by models that do not know them.
 */
export interface LLMCallParams extends GenParams {
  sessionId?: SessionId | undefined;
  signal?: AbortSignal | undefined;
  /** Tools the model may call (sent as OpenAI's `tools`; an empty list sends none). */
  tools?: readonly ToolSpec[] | undefined;
  /** Sent as `tool_choice` when tools are offered. */
  toolChoice?: ToolChoice | undefined;
  /** Sent as `parallel_tool_calls` when tools are offered. */
  parallelToolCalls?: boolean | undefined;
  /** Called with the request's token usage when the server reports it (how a call's `budget` counts). */
  onUsage?: ((usage: TokenUsage) => void) | undefined;
  /**
   * Called before the request is sent again: a client's retry after a failed attempt, or the next model of a
   * fallback chain (`next.model` names it). Throwing stops the request with that error: a call's `budget`
   * counts every attempt this way, and refuses one it has no room for.
   */
  onRetry?: ((next: RetryNotice) => void) | undefined;
  /**
   * Ask for a JSON reply fitting a schema, in the API's native structured-output mode where it has one
   * (ignored elsewhere; a `JSONParser` also asks in the prompt).
   */
  responseFormat?: ResponseFormat | undefined;
  /**
   * Prompt caching, for clients whose API asks for it (Claude): false sends no `cache_control` marks.
   * @default the client's `cache` option (true)
   */
  cache?: boolean | undefined;
  [key: string]: unknown;
}

/** What {@link LLMCallParams.onRetry} is told about the attempt about to be sent. */
export interface RetryNotice {
  /** The model asked next, when it is another one (a fallback chain's next model). */
  model?: string | undefined;
  /**
   * The attempt was sent already (a sync client's retries, made in its worker, are told when its answer
   * comes): it is counted, and what is thrown then fails the call after the fact.
   */
  made?: boolean | undefined;
}

/**
 * A model's whole reply, as `generate()` returns it: the text (cut at stop words) and the tools it asked to
 * call (empty when it answered in text).
 */
export interface ModelReply {
  content: string;
  toolCalls: ToolCall[];
  /** The server's `finish_reason` (`'stop'`, `'length'`, `'tool_calls'`, ...), when it sent one. */
  finishReason?: string | undefined;
  /** What the model reasoned before answering (DeepSeek's `reasoning_content`, Claude's thinking, ...). */
  reasoning?: string | undefined;
  /** The provider's opaque reasoning, to send back with this turn (see `ReasoningPart`). */
  reasoningParts?: ReasoningPart[] | undefined;
  /** The request's token usage, when the server reported it. */
  usage?: TokenUsage | undefined;
}

/**
 * One step of a streamed response: `content` is cumulative, `delta` what this step added. While a reasoning model
 * thinks, chunks carry `reasoningDelta` (their `delta` is then `''`). The `END` chunk carries the complete
 * `toolCalls` when the model called tools (their arguments parsed), and the whole `reasoning` and
 * `reasoningParts` when it reasoned.
 */
export interface StreamChunk {
  state: ModelStatusCode;
  content: string;
  delta: string;
  toolCalls?: ToolCall[] | undefined;
  /** The reasoning text this step added. */
  reasoningDelta?: string | undefined;
  /** On the `END` chunk: the whole reasoning text. */
  reasoning?: string | undefined;
  /** On the `END` chunk: the provider's opaque reasoning (see `ModelReply.reasoningParts`). */
  reasoningParts?: ReasoningPart[] | undefined;
}
