export type { ActionResultItem, ActionReturnInit, ActionReturnJSON, FunctionCall } from './action-return';
export { ActionReturn } from './action-return';
export type {
  AgentMessageInit,
  AgentMessageJSON,
  LagentMessageJSON,
  MessageInput,
  MessageInState,
  MessageJSONFormat,
  MessageJSONOptions,
} from './agent-message';
export { AgentMessage, MAX_MESSAGE_DEPTH, toAgentMessage, toLagentJSON } from './agent-message';
export type { ChatMessage, OpenAITool, ToolCall } from './chat-message';
export type { ContentPart, FilePart, ImagePart, PartSource, TextPart } from './content-parts';
export { contentPartsText, isContentParts } from './content-parts';
export type { LagentErrorOptions } from './errors';
export {
  BudgetExceededError,
  ConfigurationError,
  GuardrailTripped,
  HookError,
  LagentError,
  LLMRequestError,
  ModelOutputError,
  NonDeterminismError,
  ParseError,
  RunFailedError,
  StateDictError,
  StoreConflictError,
  StoreError,
  TimeoutError,
  ValidationError,
} from './errors';
export type {
  AISDKReasoningPart,
  ClaudeRedactedThinkingPart,
  ClaudeThinkingPart,
  OpenAIReasoningItemPart,
  ReasoningInfo,
  ReasoningOptions,
  ReasoningPart,
} from './reasoning';
export { reasoningOf } from './reasoning';
export type { ResponseFormat, StrictJSONSchema } from './response-format';
export { strictJSONSchema } from './response-format';
export type { SessionId } from './session';
export {
  ActionStatusCode,
  ActionValidCode,
  AgentStatusCode,
  ModelStatusCode,
  ToolStatusCode,
} from './status';
export type { ToolCallsFormatted, ToolCallsMessage, ToolResultsMessage } from './tool-calls';
export { hasToolCalls, toolCallsOf } from './tool-calls';
export type { ToolResponse } from './tool-response';
export { asToolResponse } from './tool-response';
