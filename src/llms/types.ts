export type { ChatMessage } from '../schema/chat-message';

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
}

/** Generation parameters after defaults are applied; `stopWords` is always an array. */
export interface ResolvedGenParams {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  repetitionPenalty: number;
  stopWords: string[];
}

/**
 * What `chat()` / `streamChat()` take per call: generation overrides (never stored), plus the session and,
 * for async models, an `AbortSignal`. Other keys an agent passes along are ignored by models that do not
 * know them.
 */
export interface LLMCallParams extends GenParams {
  sessionId?: SessionId | undefined;
  signal?: AbortSignal | undefined;
  [key: string]: unknown;
}

/** One step of a streamed response: `content` is cumulative, `delta` what this step added. */
export interface StreamChunk {
  state: ModelStatusCode;
  content: string;
  delta: string;
}
