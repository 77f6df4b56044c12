// lagent-ts/tools: real tools. Heavy dependencies are optional peers, loaded where they are used.
export { BridgedTool, type BridgedToolTarget } from './bridged-tool';
export * from './office/index';
export * from './python/index';
export * from './web/index';
