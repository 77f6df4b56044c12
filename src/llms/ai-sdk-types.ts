/**
 * The parts of the AI SDK's language model specification (`LanguageModelV2`, `V3` and `V4` of
 * `@ai-sdk/provider`) that `AsyncAISDKModel` uses, declared here so that neither the code nor its types depend
 * on the provider package. Every AI SDK language model object (`openai('gpt-4o')`, `anthropic(...)`,
 * `google(...)`, community providers) is assignable to {@link AISDKLanguageModel}.
 */

/** A text part of a prompt message. */
export interface AISDKTextPart {
  type: 'text';
  text: string;
}

/** A tool call the assistant made, as a prompt part (`input` is the parsed arguments object). */
export interface AISDKToolCallPart {
  type: 'tool-call';
  toolCallId: string;
  toolName: string;
  input: unknown;
}

/** A tool's result, as a prompt part. */
export interface AISDKToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: { type: 'text'; value: string } | { type: 'error-text'; value: string };
}

/**
 * A file (or image) part of a prompt message. `data` is, in specification v4, `{ type: 'data', data }` or
 * `{ type: 'url', url }`; in v2 and v3 the base64 text, bytes or URL itself. (Typed `any`: no one type is
 * both, and every version's model must fit {@link AISDKLanguageModel}.)
 */
export interface AISDKFilePart {
  type: 'file';
  mediaType: string;
  filename?: string;
  data: any;
}

/** Reasoning of an earlier assistant turn, given back with the provider's metadata as `providerOptions`. */
export interface AISDKReasoningPromptPart {
  type: 'reasoning';
  text: string;
  providerOptions?: Record<string, Record<string, any>>;
}

/** One message of an AI SDK prompt. */
export type AISDKMessage = (
  | { role: 'system'; content: string }
  | { role: 'user'; content: (AISDKTextPart | AISDKFilePart)[] }
  | { role: 'assistant'; content: (AISDKTextPart | AISDKToolCallPart | AISDKReasoningPromptPart)[] }
  | { role: 'tool'; content: AISDKToolResultPart[] }
) & { providerOptions?: Record<string, Record<string, any>> };

/** A function tool offered to the model. */
export interface AISDKFunctionTool {
  type: 'function';
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  providerOptions?: Record<string, Record<string, any>>;
}

/** The options of one `doGenerate` / `doStream` call, as `AsyncAISDKModel` sends them. */
export interface AISDKCallOptions {
  prompt: AISDKMessage[];
  maxOutputTokens?: number;
  temperature?: number;
  stopSequences?: string[];
  topP?: number;
  topK?: number;
  tools?: AISDKFunctionTool[];
  toolChoice?:
    | { type: 'auto' }
    | { type: 'none' }
    | { type: 'required' }
    | { type: 'tool'; toolName: string };
  abortSignal?: AbortSignal;
  headers?: Record<string, string | undefined>;
  providerOptions?: Record<string, Record<string, any>>;
  /** A JSON reply, fitting `schema` when given. */
  responseFormat?: { type: 'json'; schema?: Record<string, unknown>; name?: string; description?: string };
  /** Specification v4: how hard the model reasons. */
  reasoning?: 'low' | 'medium' | 'high';
}

/** Token usage: flat numbers (`v2`) or split by kind (`v3`, `v4`). */
export type AISDKUsage =
  | {
      inputTokens: number | undefined;
      outputTokens: number | undefined;
      totalTokens?: number | undefined;
      reasoningTokens?: number | undefined;
      cachedInputTokens?: number | undefined;
    }
  | {
      inputTokens: {
        total: number | undefined;
        cacheRead?: number | undefined;
        cacheWrite?: number | undefined;
      };
      outputTokens: { total: number | undefined; reasoning?: number | undefined };
    };

/** Why generation stopped: a string (`v2`) or `{ unified, raw }` (`v3`, `v4`). */
export type AISDKFinishReason = string | { unified: string; raw?: string | undefined };

/** One content part of a result; `AsyncAISDKModel` reads `text` and `tool-call` parts and skips the rest. */
export interface AISDKContent {
  readonly type: string;
}

/** What `doGenerate` resolves to. */
export interface AISDKGenerateResult {
  content: AISDKContent[];
  finishReason: AISDKFinishReason;
  usage: AISDKUsage;
}

/** One part of a `doStream` stream; `AsyncAISDKModel` reads `text-delta`, `tool-call`, `finish` and `error`. */
export interface AISDKStreamPart {
  readonly type: string;
}

/** What `doStream` resolves to. */
export interface AISDKStreamResult {
  stream: ReadableStream<AISDKStreamPart>;
}

/**
 * Any AI SDK language model (specification `v2`, `v3` or `v4`): what `@ai-sdk/openai`, `@ai-sdk/anthropic`,
 * `@ai-sdk/google`, `@ai-sdk/openai-compatible` and community providers return for a model id.
 */
export interface AISDKLanguageModel {
  readonly specificationVersion: 'v2' | 'v3' | 'v4';
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: AISDKCallOptions): PromiseLike<AISDKGenerateResult>;
  doStream(options: AISDKCallOptions): PromiseLike<AISDKStreamResult>;
}
