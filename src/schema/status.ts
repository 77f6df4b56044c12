/** States of an agent's message; negative values are errors. */
export const AgentStatusCode = {
  END: 0,
  STREAM_ING: 1,
  SERVER_ERR: -1,
  SESSION_CLOSED: -2,
  SESSION_OUT_OF_LIMIT: -3,
  SESSION_INVALID_ARG: -4,
  SESSION_READY: 2,
  PLUGIN_START: 3,
  PLUGIN_END: 4,
  PLUGIN_RETURN: 5,
  CODING: 6,
  CODE_END: 7,
  CODE_RETURN: 8,
} as const;
export type AgentStatusCode = (typeof AgentStatusCode)[keyof typeof AgentStatusCode];

/** States of a model's (streamed) response. */
export const ModelStatusCode = {
  END: 0,
  STREAM_ING: 1,
  SERVER_ERR: -1,
  SESSION_CLOSED: -2,
  SESSION_OUT_OF_LIMIT: -3,
  SESSION_INVALID_ARG: -4,
  SESSION_READY: 2,
} as const;
export type ModelStatusCode = (typeof ModelStatusCode)[keyof typeof ModelStatusCode];

/** Outcome of a tool call. */
export const ActionStatusCode = {
  ING: 1,
  SUCCESS: 0,
  HTTP_ERROR: -1000,
  ARGS_ERROR: -1001,
  API_ERROR: -1002,
} as const;
export type ActionStatusCode = (typeof ActionStatusCode)[keyof typeof ActionStatusCode];

/** Whether a tool call was valid and what it means for the conversation. */
export const ActionValidCode = {
  FINISH: 1,
  OPEN: 0,
  CLOSED: -1,
  INVALID: -2,
  ABSENT: -3,
} as const;
export type ActionValidCode = (typeof ActionValidCode)[keyof typeof ActionValidCode];

/** What a tool parser found in a model response. */
export const ToolStatusCode = {
  NO_TOOL: 0,
  VALID_TOOL: 1,
  PARSING_ERROR: -1,
} as const;
export type ToolStatusCode = (typeof ToolStatusCode)[keyof typeof ToolStatusCode];
