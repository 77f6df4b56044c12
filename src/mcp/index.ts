// lagent-ts/mcp: MCP tools (client toolkit and server) on @modelcontextprotocol/sdk, an optional peer.
export {};
