export { contentToText } from './content';
export type { SystemInstruction, SystemTemplate } from './default-aggregator';
export { DefaultAggregator } from './default-aggregator';
