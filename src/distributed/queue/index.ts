// Scale-out on BullMQ: QueueAgentWorker hosts an agent on a queue, AsyncQueueAgent calls it. bullmq and
// ioredis are optional peers, loaded when a worker or client first connects.
export type {
  CallerOptionsPolicy,
  GenerationBounds,
  NumberBounds,
  StopWordBounds,
} from '../caller-options';
export type { AsyncQueueAgentOptions, QueueCallOptions, QueueStartOptions } from './async-queue-agent';
export { AsyncQueueAgent } from './async-queue-agent';
export type { RedisConnection } from './connection';
export { QueueConnectionError, RemoteAgentError } from './errors';
export type { QueueAgentWorkerOptions, QueueHostedAgent } from './worker';
export { QueueAgentWorker } from './worker';
