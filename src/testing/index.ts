export type { AsyncMockLLMOptions, MockCall, MockLLMOptions, MockResponses } from './mock-llm';
export { AsyncMockLLM, MockLLM, MockScriptError } from './mock-llm';
