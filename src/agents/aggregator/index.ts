export { contentToText } from './content';
export type { SystemInstruction, SystemTemplate } from './default-aggregator';
export { DefaultAggregator } from './default-aggregator';
export type { InternLMToolAggregatorOptions } from './internlm-tool-aggregator';
export { InternLMToolAggregator } from './internlm-tool-aggregator';
export type { TokenCounter, TokenWindowAggregatorOptions } from './token-window-aggregator';
export { TokenWindowAggregator } from './token-window-aggregator';
