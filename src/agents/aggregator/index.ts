export { contentToText } from './content';
export type { SystemInstruction, SystemTemplate } from './default-aggregator';
export { DefaultAggregator } from './default-aggregator';
export type { InternLMToolAggregatorOptions, InternLMWindowOptions } from './internlm-tool-aggregator';
export { InternLMToolAggregator } from './internlm-tool-aggregator';
export type { SummarizeOptions, SummaryFormatted } from './summarize';
export { isSummary, SUMMARY_INSTRUCTION } from './summarize';
export type { TokenCounter, TokenWindowAggregatorOptions } from './token-window-aggregator';
export { TokenWindowAggregator } from './token-window-aggregator';
