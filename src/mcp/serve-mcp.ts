import { randomUUID } from 'node:crypto';
import { createServer as createHTTPServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { AsyncActionExecutor } from '../actions/async-action-executor';
import type { ActionBase } from '../actions/base-action';
import { checkTimeout } from '../actions/base-action';
import { ConfigurationError } from '../schema/errors';
import { actionReturnResult } from './content';
import { loadServerSDK, type ServerSDK } from './load';

/** Options of {@link serveMCP}. */
export interface ServeMCPOptions {
  /** The tools to offer: each API is one MCP tool, named as in OpenAI function calling (`Name`, `Name__api`). */
  actions: ActionBase | readonly ActionBase[];
  /** The server's name in the handshake. @default 'lagent-ts' */
  name?: string | undefined;
  /** @default '1.0.0' */
  version?: string | undefined;
  /** Instructions for the client's model, sent in the handshake. */
  instructions?: string | undefined;
  /**
   * `'stdio'` serves this process's stdin and stdout (the process is the server a client starts; it stops
   * serving when stdin ends); `'http'` serves Streamable HTTP on `host:port` at `path`.
   * @default 'stdio'
   */
  transport?: 'stdio' | 'http' | undefined;
  /** HTTP only. Requests whose `Host` is not loopback are refused while the host is. @default '127.0.0.1' */
  host?: string | undefined;
  /** HTTP only; 0 picks a free port (see {@link MCPServerHandle.port}). @default 0 */
  port?: number | undefined;
  /** HTTP only: the endpoint's path. @default '/mcp' */
  path?: string | undefined;
  /** Timeout of each tool call, in ms (the tool's `context.signal` is aborted); none by default. */
  timeoutMs?: number | undefined;
}

/** A running MCP server. */
export interface MCPServerHandle {
  /** The endpoint (`http://127.0.0.1:PORT/mcp`); undefined over stdio. */
  readonly url: string | undefined;
  /** The bound port; undefined over stdio. */
  readonly port: number | undefined;
  /** The tools offered, in MCP's shape. */
  tools(): Tool[];
  /** Adds or replaces an action; connected clients are told the tool list changed. */
  set(action: ActionBase): Promise<void>;
  /** Removes an action by name; connected clients are told the tool list changed. False when there was none. */
  delete(name: string): Promise<boolean>;
  /** Stops serving: ends every session and, over HTTP, closes the listening socket and its connections. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

function hostnameOf(hostHeader: string | undefined): string | undefined {
  if (!hostHeader) return undefined;
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return undefined;
  }
}

function sendJSONError(response: ServerResponse, status: number, message: string): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/**
 * Serves lagent actions as an MCP server: each API becomes a tool whose input schema is the JSON Schema of
 * its zod parameters (what `action.toOpenAITools()` gives), and each call's {@link ActionReturn} becomes the
 * result (text items as text, `data:` image and audio URLs as image and audio blocks; an unsuccessful call
 * as an `isError` result with the text the model would see). Calls run through an `AsyncActionExecutor`,
 * so arguments are checked and nothing a tool throws escapes; over HTTP each MCP session is a lagent
 * session (`sessionId`), so tools that keep per-session state keep it per client. A client's cancellation
 * aborts the tool's `context.signal`.
 *
 * @example
 * const server = await serveMCP({ actions: [weather], transport: 'http' });
 * const kit = await MCPToolkit.connect({ url: server.url! });
 * // ...
 * await kit.close();
 * await server.close();
 */
export async function serveMCP(options: ServeMCPOptions): Promise<MCPServerHandle> {
  if (options === null || typeof options !== 'object' || !('actions' in options)) {
    throw new ConfigurationError({ message: 'serveMCP expects { actions, ... }' });
  }
  const transport = options.transport ?? 'stdio';
  if (transport !== 'stdio' && transport !== 'http') {
    throw new ConfigurationError({
      message: `serveMCP: transport must be 'stdio' or 'http', got ${String(transport)}`,
    });
  }
  if (options.timeoutMs !== undefined) checkTimeout(options.timeoutMs);
  const executor = new AsyncActionExecutor({
    actions: Array.isArray(options.actions) ? [...options.actions] : [options.actions as ActionBase],
    timeoutMs: options.timeoutMs,
  });
  const sdk = await loadServerSDK('serveMCP');
  const servers = new Set<Server>();
  let tools = listTools(executor);

  const newServer = (): Server => {
    const server = new sdk.Server(
      { name: options.name ?? 'lagent-ts', version: options.version ?? '1.0.0' },
      {
        capabilities: { tools: { listChanged: true } },
        ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
      },
    );
    handleTools(sdk, server, executor, () => tools);
    servers.add(server);
    server.onclose = () => servers.delete(server);
    return server;
  };
  const changed = async () => {
    tools = listTools(executor);
    await Promise.all([...servers].map((server) => server.sendToolListChanged().catch(() => undefined)));
  };
  const common = {
    tools: () => structuredClone(tools),
    async set(action: ActionBase) {
      executor.set(action);
      await changed();
    },
    async delete(name: string) {
      const deleted = executor.delete(name);
      if (deleted) await changed();
      return deleted;
    },
  };

  if (transport === 'stdio') {
    const server = newServer();
    const stdio = new sdk.StdioServerTransport();
    let closed: Promise<void> | undefined;
    const close = () => {
      closed ??= server.close();
      return closed;
    };
    // The client ends the session by closing our stdin; stop reading so the process can exit.
    process.stdin.once('end', () => void close());
    await server.connect(stdio);
    return { url: undefined, port: undefined, ...common, close };
  }
  return serveHTTP(sdk, options, newServer, servers, common);
}

async function serveHTTP(
  sdk: ServerSDK,
  options: ServeMCPOptions,
  newServer: () => Server,
  servers: Set<Server>,
  common: Pick<MCPServerHandle, 'tools' | 'set' | 'delete'>,
): Promise<MCPServerHandle> {
  const host = options.host ?? '127.0.0.1';
  const path = options.path ?? '/mcp';
  const requestedPort = options.port ?? 0;
  if (!Number.isInteger(requestedPort) || requestedPort < 0 || requestedPort > 65535) {
    throw new ConfigurationError({
      message: `serveMCP: port must be an integer from 0 to 65535, got ${requestedPort}`,
    });
  }
  type Session = InstanceType<ServerSDK['StreamableHTTPServerTransport']>;
  const sessions = new Map<string, Session>();
  const guardHost = LOOPBACK.has(host);

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== path) return sendJSONError(response, 404, `no MCP endpoint at ${url.pathname}`);
    // A server bound to loopback answers only requests addressed to loopback (no DNS rebinding).
    if (guardHost && !LOOPBACK.has(hostnameOf(request.headers.host) ?? '')) {
      return sendJSONError(response, 403, 'this MCP server only answers requests to a loopback host');
    }
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (!session) return sendJSONError(response, 404, 'Session not found');
      return session.handleRequest(request, response);
    }
    if (request.method !== 'POST')
      return sendJSONError(response, 400, 'a request without a session must initialize one');
    const session: Session = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, session);
      },
    });
    session.onclose = () => {
      if (session.sessionId !== undefined) sessions.delete(session.sessionId);
    };
    await newServer().connect(session);
    await session.handleRequest(request, response);
  };

  const http = createHTTPServer((request, response) => {
    handle(request, response).catch((error: unknown) =>
      sendJSONError(response, 500, error instanceof Error ? error.message : 'internal error'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(requestedPort, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const port = (http.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      await Promise.all([...servers].map((server) => server.close().catch(() => undefined)));
      sessions.clear();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    })();
    return closed;
  };
  return { url: `http://${urlHost}:${port}${path}`, port, ...common, close };
}

/** The executor's APIs as MCP tools. */
function listTools(executor: AsyncActionExecutor): Tool[] {
  return executor.toOpenAITools().map(({ function: tool }) => ({
    name: tool.name,
    ...(tool.description ? { description: tool.description } : {}),
    inputSchema: { type: 'object', ...(tool.parameters as Record<string, unknown>) } as Tool['inputSchema'],
  }));
}

function handleTools(
  sdk: ServerSDK,
  server: Server,
  executor: AsyncActionExecutor,
  tools: () => readonly Tool[],
): void {
  const { types } = sdk;
  server.setRequestHandler(types.ListToolsRequestSchema, () => ({ tools: [...tools()] }));
  server.setRequestHandler(types.CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    if (!tools().some((tool) => tool.name === name)) {
      throw new types.McpError(types.ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
    const output = await executor.forward(name, request.params.arguments ?? {}, {
      signal: extra.signal,
      sessionId: extra.sessionId ?? 0,
    });
    return actionReturnResult(output);
  });
}
