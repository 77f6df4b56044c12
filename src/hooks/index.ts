export type { InternLMActionProcessorOptions } from './action-preprocessor';
export { ActionPreprocessor, actionReturnText, InternLMActionProcessor } from './action-preprocessor';
export type { AsyncHook, HookAgent, HookExecutor, HookResult, SyncHook, SyncHookResult } from './hook';
export { Hook, HookList, hookNameOf, RemovableHandle } from './hook';
export type { MessageLoggerOptions, WritableLike } from './message-logger';
export { MessageLogger } from './message-logger';
