// Tool names that are not OpenAI-safe, or that lagent gives a meaning (`run`), against a plain SDK server.
import { createServer, type Server as HTTPServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { AsyncActionExecutor } from 'lagent-ts';
import { MCPToolkit } from 'lagent-ts/mcp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const NAMES = ['run', 'files.read', 'files/read', 'a__b'];

/** A stateless MCP server (no session id generator; a fresh SDK server per request) whose tools echo their own name. */
function startServer(): Promise<HTTPServer> {
  const http = createServer(async (request, response) => {
    const server = new Server(
      { name: 'odd names/server', version: '0.1.0' },
      { capabilities: { tools: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: NAMES.map((name) => ({ name, inputSchema: { type: 'object' as const, properties: {} } })),
    }));
    server.setRequestHandler(CallToolRequestSchema, (call) => ({
      content: [{ type: 'text', text: `called ${call.params.name}` }],
    }));
    const transport = new StreamableHTTPServerTransport({});
    response.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request, response);
  });
  return new Promise((resolve) => http.listen(0, '127.0.0.1', () => resolve(http)));
}

describe('MCPToolkit with unusual tool names', () => {
  let http: HTTPServer;
  let kit: MCPToolkit;
  beforeAll(async () => {
    http = await startServer();
    kit = await MCPToolkit.connect({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` });
  });
  afterAll(async () => {
    await kit?.close();
    await new Promise<void>((resolve) => {
      http?.close(() => resolve());
      http?.closeAllConnections();
    });
  });

  it('names the toolkit after the server, OpenAI-safe, and keeps it a toolkit', () => {
    expect(kit.name).toBe('odd_names_server');
    expect(kit.isToolkit).toBe(true);
    expect([...kit.apis.keys()]).toEqual(['run', 'files_read', 'files_read_2', 'a__b']);
    for (const tool of kit.toOpenAITools()) expect(tool.function.name).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('calls each tool by its own name', async () => {
    const executor = new AsyncActionExecutor({ actions: [kit] });
    expect((await executor.forward('odd_names_server.run', {})).toText()).toBe('called run');
    expect((await executor.forward('odd_names_server__files_read', {})).toText()).toBe('called files.read');
    expect((await executor.forward('odd_names_server__files_read_2', {})).toText()).toBe('called files/read');
    expect((await executor.forward('odd_names_server__a__b', {})).toText()).toBe('called a__b');
  });
});
