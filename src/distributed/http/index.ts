// HTTP serving: HTTPAgentServer, HTTPAgentClient, AsyncHTTPAgentClient (Lagent's protocol)
export type {
  CallerOptionsPolicy,
  GenerationBounds,
  NumberBounds,
  StopWordBounds,
} from '../caller-options';
export type { A2AServerOptions } from '../protocols/a2a-server';
export type { AGUIOptions } from '../protocols/ag-ui';
export type { OpenAIChatOptions } from '../protocols/openai-chat';
export type { ProtocolName, ProtocolSettings, ProtocolsOption } from '../protocols/register';
export type { AgentProgress, UIMessageStreamOptions } from '../protocols/ui-message-stream';
export type { HTTPAgentClientOptions, RemoteCallOptions, RemoteReadOptions } from './async-client';
export { AsyncHTTPAgentClient } from './async-client';
export { HTTPAgentClient } from './client';
export { HTTPAgentError } from './errors';
export type { HTTPAgentServerOptions, HTTPErrorBody, ServedAgent } from './server';
export { HTTPAgentServer } from './server';
export type { StreamContent } from './sse-writer';
