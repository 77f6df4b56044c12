export { Agent } from './agent';
export type {
  AgentEvents,
  AgentOptions,
  AsyncCallOptions,
  AsyncForwardOptions,
  CallOptions,
  ForwardOptions,
  MemoryConfig,
  ResetOptions,
  StateDict,
  StreamReturn,
} from './agent-base';
export { AgentBase } from './agent-base';
export { AgentDict, AgentList } from './agent-list';
export { AsyncAgent } from './async-agent';
export { AsyncStreamingAgent } from './async-streaming-agent';
export type { AgentNode } from './node';
export type { SequentialCallOptions, SequentialMembers } from './sequential';
export { AsyncSequential, AsyncStreamingSequential, Sequential, StreamingSequential } from './sequential';
export { StreamingAgent } from './streaming-agent';
