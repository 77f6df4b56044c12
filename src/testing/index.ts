export type {
  FakeAnthropicOptions,
  FakeAnthropicReply,
  FakeAnthropicRequest,
  FakeAnthropicScript,
  FakeAnthropicServer,
} from './fake-anthropic';
export { startFakeAnthropic } from './fake-anthropic';
export type { FakeAnthropicWorkerOptions, FakeAnthropicWorkerServer } from './fake-anthropic-worker';
export { startFakeAnthropicWorker } from './fake-anthropic-worker';
export type { FakeEmbeddingsOptions, FakeEmbeddingsReply } from './fake-embeddings';
export type {
  FakeOpenAIOptions,
  FakeOpenAIServer,
  FakeReply,
  FakeRequest,
  FakeScript,
  FakeToolCall,
} from './fake-openai';
export { startFakeOpenAI } from './fake-openai';
export type { FakeOpenAIWorkerOptions, FakeOpenAIWorkerServer } from './fake-openai-worker';
export { startFakeOpenAIWorker } from './fake-openai-worker';
export { HashEmbedder, type HashEmbedderOptions } from './hash-embedder';
export type {
  AsyncMockLLMOptions,
  MockCall,
  MockLLMOptions,
  MockReply,
  MockResponses,
  MockToolCall,
} from './mock-llm';
export { AsyncMockLLM, MockLLM, MockScriptError } from './mock-llm';
