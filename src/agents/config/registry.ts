import { ActionExecutor } from '../../actions/action-executor';
import { AsyncActionExecutor } from '../../actions/async-action-executor';
import { FinishAction, InvalidAction, NoAction } from '../../actions/builtin-actions';
import { ActionPreprocessor, InternLMActionProcessor } from '../../hooks/action-preprocessor';
import { MessageLogger } from '../../hooks/message-logger';
import { AsyncClaudeAPI } from '../../llms/async-claude-api';
import { AsyncGPTAPI } from '../../llms/async-gpt-api';
import { AsyncLMDeployServer, AsyncVllmModel } from '../../llms/async-raw-prompt-model';
import { ClaudeAPI } from '../../llms/claude-api';
import { GPTAPI } from '../../llms/gpt-api';
import { LMDeployServer, VllmModel } from '../../llms/raw-prompt-model';
import { InterpreterParser } from '../../prompts/parsers/interpreter-parser';
import { MixedToolParser } from '../../prompts/parsers/mixed-tool-parser';
import { PluginParser } from '../../prompts/parsers/plugin-parser';
import { StrParser } from '../../prompts/parsers/str-parser';
import { ToolParser } from '../../prompts/parsers/tool-parser';
import { PromptTemplate } from '../../prompts/prompt-template';
import { Agent } from '../agent';
import { AgentDict } from '../agent-dict';
import { AgentList } from '../agent-list';
import { DefaultAggregator } from '../aggregator/default-aggregator';
import { InternLMToolAggregator } from '../aggregator/internlm-tool-aggregator';
import { AsyncAgent } from '../async-agent';
import { AsyncStreamingAgent } from '../async-streaming-agent';
import {
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  FunctionCallingAgent,
  StreamingFunctionCallingAgent,
} from '../prebuilt/function-calling-agent';
import { AgentForInternLM, AsyncAgentForInternLM } from '../prebuilt/internlm-agent';
import { AsyncMathCoder, MathCoder } from '../prebuilt/math-coder';
import { AsyncReAct, ReAct } from '../prebuilt/react';
import {
  AsyncStreamingAgentForInternLM,
  StreamingAgentForInternLM,
} from '../prebuilt/streaming-internlm-agent';
import { AsyncSequential, AsyncStreamingSequential, Sequential, StreamingSequential } from '../sequential';
import { StreamingAgent } from '../streaming-agent';

/** A class a config may name: anything constructed with `new`. */
export type ConfigurableClass = abstract new (...args: any[]) => unknown;

/**
 * The classes of the root entry a config names by `type`: agents, models, parsers, aggregators, hooks, the
 * built-in actions and executors. Classes that need values JSON cannot hold (a zod schema, a stream) are left
 * out; pass them in a config built in code, or in `registry`.
 */
export const ROOT_CLASSES: Readonly<Record<string, ConfigurableClass>> = Object.freeze({
  Agent,
  AsyncAgent,
  StreamingAgent,
  AsyncStreamingAgent,
  FunctionCallingAgent,
  AsyncFunctionCallingAgent,
  StreamingFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  AgentForInternLM,
  AsyncAgentForInternLM,
  StreamingAgentForInternLM,
  AsyncStreamingAgentForInternLM,
  MathCoder,
  AsyncMathCoder,
  ReAct,
  AsyncReAct,
  Sequential,
  AsyncSequential,
  StreamingSequential,
  AsyncStreamingSequential,
  AgentList,
  AgentDict,
  GPTAPI,
  AsyncGPTAPI,
  ClaudeAPI,
  AsyncClaudeAPI,
  LMDeployServer,
  AsyncLMDeployServer,
  VllmModel,
  AsyncVllmModel,
  StrParser,
  ToolParser,
  InterpreterParser,
  PluginParser,
  MixedToolParser,
  PromptTemplate,
  DefaultAggregator,
  InternLMToolAggregator,
  MessageLogger,
  ActionPreprocessor,
  InternLMActionProcessor,
  FinishAction,
  InvalidAction,
  NoAction,
  ActionExecutor,
  AsyncActionExecutor,
});
