export type { BuiltConfig, ConfigRegistry, CreateAgentOptions, ObjectConfig } from './create-agent';
export { buildFromConfig, closeAll, createAgent } from './create-agent';
export type { ConfigurableClass } from './registry';
export { ROOT_CLASSES } from './registry';
