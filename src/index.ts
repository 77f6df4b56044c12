/**
 * lagent-ts: PyTorch-style composition of LLM agents. Every public name is listed here by hand; the
 * test helpers (mock models, the fake OpenAI-compatible server) live in `lagent-ts/testing`.
 */

export type {
  ActionApi,
  ActionCallOptions,
  ActionDescription,
  ActionExecutorOptions,
  ActionOptions,
  ActionParameter,
  ActionParameterType,
  ApiDescription,
  AsyncActionCallOptions,
  AsyncActionExecutorOptions,
  BuiltinActionOptions,
  ExecutorReply,
  OpenAITool,
  OpenAIToolsOptions,
  ToolApiSpec,
  ToolContext,
  ToolkitApi,
  ToolkitOptions,
  ToolOptions,
} from './actions/index';
export {
  ActionBase,
  ActionExecutor,
  AsyncActionExecutor,
  AsyncBaseAction,
  asyncTool,
  asyncToolkit,
  BaseAction,
  ExecutorBase,
  FinishAction,
  getPluginPrompt,
  InvalidAction,
  NoAction,
  tool,
  toolkit,
} from './actions/index';
export type { SystemInstruction, SystemTemplate } from './agents/aggregator/index';
export { contentToText, DefaultAggregator } from './agents/aggregator/index';
export type { InternLMToolAggregatorOptions } from './agents/aggregator/internlm-tool-aggregator';
export { InternLMToolAggregator } from './agents/aggregator/internlm-tool-aggregator';
export type {
  AgentEvents,
  AgentNode,
  AgentOptions,
  AgentReply,
  AsyncCallOptions,
  AsyncForwardOptions,
  CallOptions,
  ForwardOptions,
  ForwardResult,
  LagentStateDict,
  MemoryConfig,
  ReplyOf,
  ResetOptions,
  SequentialCallOptions,
  SequentialMembers,
  StateDict,
  StateDictOptions,
  StreamOutput,
  StreamReturn,
} from './agents/index';
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
export type { InternLMActionProcessorOptions } from './hooks/action-preprocessor';
export { ActionPreprocessor, actionReturnText, InternLMActionProcessor } from './hooks/action-preprocessor';
export type {
  AsyncHook,
  HookAgent,
  HookExecutor,
  HookResult,
  MessageLoggerOptions,
  SyncHook,
  SyncHookResult,
  WritableLike,
} from './hooks/index';
export { Hook, MessageLogger, RemovableHandle } from './hooks/index';
export type {
  APIMetaTemplate,
  APIRoleTemplate,
  ChatMessage,
  CompletionRequest,
  GenParams,
  GPTAPIOptions,
  LLMCallParams,
  LMMetaTemplate,
  LMRoleBegin,
  LMRoleTemplate,
  ModelReply,
  OpenAICallParams,
  OpenAICompatibleDefaults,
  OpenAICompatibleOptions,
  RawPromptModelOptions,
  ResolvedGenParams,
  StreamChunk,
  TokenUsage,
  ToolChoice,
  ToolSpec,
} from './llms/index';
export {
  APITemplateParser,
  AsyncBaseLLM,
  AsyncGPTAPI,
  AsyncLMDeployServer,
  AsyncRawPromptModel,
  AsyncVllmModel,
  BaseLLM,
  BridgedLLM,
  cutAtStopWords,
  DEFAULT_API_META_TEMPLATE,
  DEFAULT_GEN_PARAMS,
  GPTAPI,
  INTERNLM2_META,
  LMDeployServer,
  LMTemplateParser,
  OpenAICompatibleLLM,
  StopWordFilter,
  UsageTracker,
  VllmModel,
} from './llms/index';
export type { GetMemoryOptions, MemoryManagerOptions, MemoryOptions } from './memory/index';
export { Memory, MemoryManager } from './memory/index';
export type {
  InterpreterParserOptions,
  JSONParserOptions,
  MixedToolParserOptions,
  PluginParserOptions,
  PromptTemplateOptions,
  StrParserOptions,
  TemplateStyle,
  ToolParserOptions,
  ToolResponse,
} from './prompts/index';
export {
  asToolResponse,
  InterpreterParser,
  JSONParser,
  MixedToolParser,
  PluginParser,
  PromptTemplate,
  StrParser,
  TemplateError,
  ToolParser,
  validatePluginCall,
} from './prompts/index';
export type { OutputParser } from './prompts/output-parser';
export { SyncBridgeError } from './schema/errors';
export type {
  ActionResultItem,
  ActionReturnInit,
  AgentMessageInit,
  AgentMessageJSON,
  FunctionCall,
  LagentErrorOptions,
  LagentMessageJSON,
  MessageInput,
  MessageJSONFormat,
  MessageJSONOptions,
  SessionId,
  ToolCall,
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
  MAX_MESSAGE_DEPTH,
  ModelOutputError,
  ModelStatusCode,
  ParseError,
  StateDictError,
  TimeoutError,
  ToolStatusCode,
  toLagentJSON,
  ValidationError,
} from './schema/index';
export type { SyncBridgeCallOptions, SyncBridgeOptions, SyncBridgeTarget } from './utils/sync-bridge';
export { SyncBridge } from './utils/sync-bridge';
