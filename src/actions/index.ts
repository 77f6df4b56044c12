export { ActionExecutor } from './action-executor';
export type { AsyncActionExecutorOptions } from './async-action-executor';
export { AsyncActionExecutor } from './async-action-executor';
export type { ActionOptions, OpenAIToolsOptions } from './base-action';
export { ActionBase, AsyncBaseAction, BaseAction } from './base-action';
export type { BuiltinActionOptions } from './builtin-actions';
export { FinishAction, InvalidAction, NoAction } from './builtin-actions';
export type { ActionExecutorOptions } from './executor-base';
export { ExecutorBase } from './executor-base';
export { getPluginPrompt } from './plugin-prompt';
export type { AsyncTool, AsyncToolkit, Tool, Toolkit, ToolkitApi, ToolkitOptions, ToolOptions } from './tool';
export { asyncTool, asyncToolkit, tool, toolkit } from './tool';
export type {
  ActionApi,
  ActionCallOptions,
  ActionDescription,
  ActionParameter,
  ActionParameterType,
  ApiDescription,
  ApprovalRule,
  AsyncActionCallOptions,
  ExecutorReply,
  OpenAITool,
  ToolApiSpec,
  ToolContext,
} from './types';
