export { AsyncBaseLLM, BaseLLM } from './base-llm';
export { DEFAULT_GEN_PARAMS, mergeGenParams, normalizeGenParams } from './gen-params';
export { cutAtStopWords } from './stop-words';
export type { ChatMessage, GenParams, LLMCallParams, ResolvedGenParams, StreamChunk } from './types';
