export type { AISDKModelSyncOptions } from './ai-sdk-model';
export { AISDKModel } from './ai-sdk-model';
export type { AISDKLanguageModel } from './ai-sdk-types';
export type { APIMetaTemplate, APIRoleTemplate } from './api-template-parser';
export { APITemplateParser, DEFAULT_API_META_TEMPLATE } from './api-template-parser';
export type { AISDKCallParams, AISDKModelOptions, AISDKProviderOptions } from './async-ai-sdk-model';
export { AsyncAISDKModel } from './async-ai-sdk-model';
export type { ClaudeAPIOptions, ClaudeCallParams } from './async-claude-api';
export { AsyncClaudeAPI } from './async-claude-api';
export type { GPTAPIOptions } from './async-gpt-api';
export { AsyncGPTAPI } from './async-gpt-api';
export type { OpenAIResponsesAPIOptions } from './async-openai-responses-api';
export { AsyncOpenAIResponsesAPI } from './async-openai-responses-api';
export type { RawPromptModelOptions } from './async-raw-prompt-model';
export { AsyncLMDeployServer, AsyncRawPromptModel, AsyncVllmModel } from './async-raw-prompt-model';
export { AsyncBaseLLM, BaseLLM } from './base-llm';
export { BridgedLLM } from './bridged-llm';
export type { CacheOptions, LLMCacheBackend } from './cached-llm';
export { AsyncCachedLLM, CachedLLM } from './cached-llm';
export type { CircuitBreakerOptions } from './circuit-breaker';
export { CircuitBreaker } from './circuit-breaker';
export { ClaudeAPI } from './claude-api';
export type { FilePathPolicy } from './content-inputs';
export type { AnsweredBy, FallbackEvent, FallbackOptions, FallbackReply } from './fallback-llm';
export { AsyncFallbackLLM, FallbackLLM } from './fallback-llm';
export { DEFAULT_GEN_PARAMS, mergeGenParams, normalizeGenParams } from './gen-params';
export { GPTAPI } from './gpt-api';
export type { LMMetaTemplate, LMRoleBegin, LMRoleTemplate } from './lm-template-parser';
export { LMTemplateParser } from './lm-template-parser';
export { INTERNLM2_META } from './meta-template';
export { MeteredLLM } from './metered-llm';
export type { ChunkSource, ModelMiddleware, ModelRequest } from './model-middleware';
export type {
  CompletionRequest,
  OpenAICallParams,
  OpenAICompatibleDefaults,
  OpenAICompatibleOptions,
  RequestInputs,
} from './openai-compatible-llm';
export { OpenAICompatibleLLM } from './openai-compatible-llm';
export { OpenAIResponsesAPI } from './openai-responses-api';
export { LMDeployServer, VllmModel } from './raw-prompt-model';
export type { RecordedCall } from './recording-file';
export type { RecordingOptions } from './recording-llm';
export { AsyncRecordingLLM, RecordingLLM } from './recording-llm';
export { ReplayMissError } from './replay-error';
export type { ReplayOptions } from './replay-llm';
export { AsyncReplayLLM, ReplayLLM } from './replay-llm';
export { StopWordFilter } from './stop-word-filter';
export { cutAtStopWords } from './stop-words';
export { parseToolArguments, ToolCallAssembler, toAPIToolName } from './tool-calls';
export type {
  ChatMessage,
  GenParams,
  LLMCallParams,
  ModelReply,
  ResolvedGenParams,
  RetryNotice,
  StreamChunk,
  ToolChoice,
  ToolSpec,
} from './types';
export type { TokenUsage } from './usage';
export { UsageTracker } from './usage';
export { AsyncWrappedLLM, WrappedLLM, wrapModel } from './wrapped-llm';
