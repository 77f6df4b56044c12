// lagent-ts/distributed: agents served over HTTP and scaled out on BullMQ. fastify, bullmq and ioredis are
// optional peers, loaded where they are used. `lagent-ts/distributed/http` and `lagent-ts/distributed/queue`
// hold each half alone (the HTTP half's types need neither bullmq nor ioredis).
export type {
  CallerOptionsPolicy,
  GenerationBounds,
  NumberBounds,
  StopWordBounds,
} from './caller-options';
export {
  AsyncHTTPAgentClient,
  HTTPAgentClient,
  type HTTPAgentClientOptions,
  HTTPAgentError,
  HTTPAgentServer,
  type HTTPAgentServerOptions,
  type HTTPErrorBody,
  type RemoteCallOptions,
  type RemoteReadOptions,
  type ServedAgent,
  type StreamContent,
} from './http/index';
export {
  A2AAgent,
  type A2AAgentOptions,
  type A2ACallOptions,
  AsyncA2AAgent,
} from './protocols/a2a-agent';
export type { A2AServerOptions } from './protocols/a2a-server';
export type { AGUIOptions } from './protocols/ag-ui';
export type { OpenAIChatOptions } from './protocols/openai-chat';
export type { ProtocolName, ProtocolSettings, ProtocolsOption } from './protocols/register';
export type { AgentProgress, UIMessageStreamOptions } from './protocols/ui-message-stream';
export {
  AsyncQueueAgent,
  type AsyncQueueAgentOptions,
  QueueAgentWorker,
  type QueueAgentWorkerOptions,
  type QueueCallOptions,
  QueueConnectionError,
  type QueueHostedAgent,
  type QueueStartOptions,
  type RedisConnection,
  RemoteAgentError,
} from './queue/index';
