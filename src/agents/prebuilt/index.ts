export type { CompatMode } from './compat';
export { asciiPythonJSON } from './compat';
export type { AgentForInternLMOptions, InternLMOutputFormatOptions } from './internlm-agent';
export {
  AgentForInternLM,
  AsyncAgentForInternLM,
  callsNoTool,
  internLMOutputFormat,
  toolSteps,
} from './internlm-agent';
export type { InternLMPrompts, PromptLanguage } from './internlm-prompts';
export { INTERNLM_PROMPTS, MATH_CODER_PROMPTS } from './internlm-prompts';
export {
  LAGENT_INTERPRETER_CN,
  LAGENT_MATH_CODER_TEMPLATE,
  LAGENT_META_CN,
  LAGENT_PLUGIN_CN,
  LAGENT_REACT_FINISH_FORMAT,
  LAGENT_REACT_FUNCTION_FORMAT,
  LAGENT_REACT_OUTPUT_FORMAT,
  LAGENT_REACT_TEMPLATE,
} from './lagent-prompts';
export type { MaxTurnInfo } from './loop-turns';
export type { MathCoderOptions } from './math-coder';
export { AsyncMathCoder, MathCoder, mathCoderOutputFormat } from './math-coder';
export type { ReActOptions } from './react';
export { AsyncReAct, hasConclusion, ReAct } from './react';
export type { ReActAction, ReActFinish, ReActParseFailure, ReActStep } from './react-output-format';
export {
  isReActParseFailure,
  lagentReActOutputFormat,
  ReActOutputParser,
  reactOutputFormat,
} from './react-output-format';
export type { ReActPrompts } from './react-prompts';
export { REACT_PROMPTS } from './react-prompts';
export type { InternLMChunk, InternLMReply } from './streaming-internlm-agent';
export { AsyncStreamingAgentForInternLM, StreamingAgentForInternLM } from './streaming-internlm-agent';
