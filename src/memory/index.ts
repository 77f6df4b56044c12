export type { GetMemoryOptions, MemoryOptions } from './memory';
export { Memory } from './memory';
export type { MemoryManagerOptions } from './memory-manager';
export { MemoryManager } from './memory-manager';
