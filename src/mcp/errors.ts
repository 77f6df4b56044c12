import { LagentError } from '../schema/errors';

/** An MCP server could not be started or reached, or did not complete the protocol's handshake. */
export class MCPConnectionError extends LagentError {
  override readonly name: string = 'MCPConnectionError';
}
