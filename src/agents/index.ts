export { Agent } from './agent';
export type {
  AgentChunk,
  AgentEvents,
  AgentOptions,
  AgentReply,
  AsyncCallOptions,
  AsyncForwardOptions,
  CallOptions,
  ForwardOptions,
  ForwardResult,
  MemoryConfig,
  ParsedReply,
  RecalledMessage,
  RecoveredSession,
  RecoverOptions,
  ReplyOf,
  ResetOptions,
  StreamFinal,
  StreamOutput,
  StreamReturn,
} from './agent-base';
export { AgentBase } from './agent-base';
export { AgentDict } from './agent-dict';
export { AgentList } from './agent-list';
export type { AgentNode } from './agent-tree';
export { AsyncAgent } from './async-agent';
export { AsyncStreamingAgent } from './async-streaming-agent';
export type { DurableOptions } from './interceptors/durable/journal';
export type { WorkingMemoryOptions } from './interceptors/working-memory/record';
export type {
  FunctionCallingAgentOptions,
  FunctionCallingChunk,
  FunctionCallingReply,
} from './prebuilt/function-calling-agent';
export {
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  FunctionCallingAgent,
  StreamingFunctionCallingAgent,
} from './prebuilt/function-calling-agent';
export type {
  AgentForInternLMOptions,
  CompatMode,
  InternLMChunk,
  InternLMOutputFormatOptions,
  InternLMPrompts,
  InternLMReply,
  MathCoderOptions,
  MaxTurnInfo,
  PromptLanguage,
  ReActAction,
  ReActFinish,
  ReActOptions,
  ReActParseFailure,
  ReActPrompts,
  ReActStep,
} from './prebuilt/index';
export {
  AgentForInternLM,
  AsyncAgentForInternLM,
  AsyncMathCoder,
  AsyncReAct,
  AsyncStreamingAgentForInternLM,
  asciiPythonJSON,
  callsNoTool,
  hasConclusion,
  INTERNLM_PROMPTS,
  internLMOutputFormat,
  isReActParseFailure,
  LAGENT_INTERPRETER_CN,
  LAGENT_MATH_CODER_TEMPLATE,
  LAGENT_META_CN,
  LAGENT_PLUGIN_CN,
  LAGENT_REACT_FINISH_FORMAT,
  LAGENT_REACT_FUNCTION_FORMAT,
  LAGENT_REACT_OUTPUT_FORMAT,
  LAGENT_REACT_TEMPLATE,
  lagentReActOutputFormat,
  MATH_CODER_PROMPTS,
  MathCoder,
  mathCoderOutputFormat,
  REACT_PROMPTS,
  ReAct,
  ReActOutputParser,
  reactOutputFormat,
  StreamingAgentForInternLM,
} from './prebuilt/index';
export type { RunLogEvent, RunLogOptions, StartOptions } from './runs/run';
export { joinRun, Run } from './runs/run';
export { RUN_EVENT_TYPES } from './runs/run-events';
export type { SequentialCallOptions, SequentialMembers } from './sequential';
export { AsyncSequential, AsyncStreamingSequential, Sequential, StreamingSequential } from './sequential';
export type { LagentStateDict, StateDict, StateDictOptions } from './state-dict';
export { StreamingAgent } from './streaming-agent';
