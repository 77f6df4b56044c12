// schema

export type { SystemInstruction, SystemTemplate } from './agents/aggregator/index';
export { contentToText, DefaultAggregator } from './agents/aggregator/index';
export type {
  AgentEvents,
  AgentNode,
  AgentOptions,
  AsyncCallOptions,
  AsyncForwardOptions,
  CallOptions,
  ForwardOptions,
  MemoryConfig,
  ResetOptions,
  SequentialCallOptions,
  StateDict,
  StreamReturn,
} from './agents/index';
// agents
export {
  Agent,
  AgentBase,
  AgentDict,
  AgentList,
  AsyncAgent,
  AsyncSequential,
  AsyncStreamingAgent,
  AsyncStreamingSequential,
  Sequential,
  StreamingAgent,
  StreamingSequential,
} from './agents/index';
export type { HookExecutor, HookResult, MessageLoggerOptions, WritableLike } from './hooks/index';
// hooks
export { Hook, MessageLogger, RemovableHandle } from './hooks/index';
export type { ChatMessage, GenParams, LLMCallParams, ResolvedGenParams, StreamChunk } from './llms/index';
// llms
export { AsyncBaseLLM, BaseLLM, cutAtStopWords, DEFAULT_GEN_PARAMS } from './llms/index';
export type { GetMemoryOptions, MemoryManagerOptions, MemoryOptions } from './memory/index';
// memory
export { Memory, MemoryManager } from './memory/index';
// prompts
export type { OutputParser } from './prompts/output-parser';
export type {
  ActionResultItem,
  ActionReturnInit,
  AgentMessageInit,
  AgentMessageJSON,
  FunctionCall,
  LagentErrorOptions,
  MessageInput,
  SessionId,
} from './schema/index';
export {
  ActionReturn,
  ActionStatusCode,
  ActionValidCode,
  AgentMessage,
  AgentStatusCode,
  ConfigurationError,
  HookError,
  LagentError,
  LLMRequestError,
  ModelOutputError,
  ModelStatusCode,
  ParseError,
  StateDictError,
  TimeoutError,
  ToolStatusCode,
  ValidationError,
} from './schema/index';

// actions
