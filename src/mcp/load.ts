import { ConfigurationError, missingPeer } from '../schema/errors';
import { loadRE2 } from './patterns';

/** The parts of `@modelcontextprotocol/sdk` the client side uses. */
export interface ClientSDK {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport;
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport;
  ToolListChangedNotificationSchema: typeof import('@modelcontextprotocol/sdk/types.js').ToolListChangedNotificationSchema;
  ToolSchema: typeof import('@modelcontextprotocol/sdk/types.js').ToolSchema;
}

/** The parts of `@modelcontextprotocol/sdk` the server side uses. */
export interface ServerSDK {
  Server: typeof import('@modelcontextprotocol/sdk/server/index.js').Server;
  StdioServerTransport: typeof import('@modelcontextprotocol/sdk/server/stdio.js').StdioServerTransport;
  StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
  types: typeof import('@modelcontextprotocol/sdk/types.js');
}

const missing = (feature: string, error: unknown) =>
  missingPeer(['@modelcontextprotocol/sdk'], feature, error);

let client: Promise<ClientSDK> | undefined;
let server: Promise<ServerSDK> | undefined;

/**
 * Loads the client half of the MCP SDK, an optional peer, with dynamic `import()` (never at import time); a
 * missing package is a {@link ConfigurationError} saying what to install.
 */
export function loadClientSDK(feature = 'MCPToolkit'): Promise<ClientSDK> {
  client ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([index, stdio, http, types]) => ({
    Client: index.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    ToolSchema: types.ToolSchema,
  }));
  const sdk = client.catch((error: unknown) => {
    client = undefined;
    throw missing(feature, error);
  });
  // Servers' argument patterns are checked with RE2 (see patterns.ts), an optional peer of its own.
  return Promise.all([sdk, loadRE2(feature)]).then(([loaded]) => loaded);
}

/** Loads the server half of the MCP SDK; see {@link loadClientSDK}. */
export function loadServerSDK(feature = 'serveMCP'): Promise<ServerSDK> {
  server ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/stdio.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([index, stdio, http, types]) => ({
    Server: index.Server,
    StdioServerTransport: stdio.StdioServerTransport,
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    types,
  }));
  return server.catch((error: unknown) => {
    server = undefined;
    throw missing(feature, error);
  });
}
