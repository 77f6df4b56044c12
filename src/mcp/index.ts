// lagent-ts/mcp: MCP tools (client toolkit and server) on @modelcontextprotocol/sdk, an optional peer.
export { actionReturnResult, contentItem, itemContent, toolResultReturn } from './content';
export { MCPConnectionError } from './errors';
export type {
  MCPConnectOptions,
  MCPHTTPOptions,
  MCPServerInfo,
  MCPStdioOptions,
  MCPToolkitCommonOptions,
} from './mcp-toolkit';
export { MCPToolkit } from './mcp-toolkit';
export type { MCPServerHandle, ServeMCPOptions } from './serve-mcp';
export { serveMCP } from './serve-mcp';
