import { randomUUID } from 'node:crypto';
import { createServer as createHTTPServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { AsyncActionExecutor } from '../actions/async-action-executor';
import type { ActionBase } from '../actions/base-action';
import { checkTimeout } from '../actions/base-action';
import { isLoopbackHost } from '../core/request-guard';
import { ConfigurationError } from '../schema/errors';
import { actionReturnResult } from './content';
import { HTTPGuard } from './http-guard';
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
  /**
   * HTTP only: the address to bind. A request's `Host` header must name it, a loopback name or an
   * `allowedHosts` entry (no DNS rebinding). Anybody who can reach the port can call the tools unless a
   * `token` is set: keep a server without one on a loopback host.
   * @default '127.0.0.1'
   */
  host?: string | undefined;
  /** HTTP only: more names a request's `Host` header may carry (the port is not compared); `'*'` for any. */
  allowedHosts?: readonly string[] | undefined;
  /**
   * HTTP only: origins (`https://app.example`) whose web pages may call the server; `'*'` for any. A request
   * carrying any other `Origin` (browsers add it to cross-site requests) is answered 403; clients outside a
   * browser send none and are not concerned.
   */
  allowedOrigins?: readonly string[] | undefined;
  /** HTTP only: when set, every request needs `Authorization: Bearer <token>` (compared in constant time), else 401. */
  token?: string | undefined;
  /**
   * HTTP only: a session whose client sent nothing (no POST or DELETE under way or begun) for this long, in ms,
   * is ended, even with its notification stream (GET) open; its client's next request is answered 404 and it
   * initializes a new one (as MCP asks clients to; `MCPToolkit` does).
   * @default 1800000 (30 minutes)
   */
  sessionIdleMs?: number | undefined;
  /** HTTP only: sessions alive at once; an initialization past it is answered 503. @default 1000 */
  maxSessions?: number | undefined;
  /**
   * HTTP only: sessions alive at once for one client (one remote address): an initialization past it ends that
   * client's least recently used session that has no POST under way, or is answered 429 when all have. Behind
   * a reverse proxy every client has the proxy's address: raise it there.
   * @default 100 (or `maxSessions`, when lower)
   */
  maxSessionsPerClient?: number | undefined;
  /** HTTP only: milliseconds a client has to send a request's headers. @default 10_000 */
  headersTimeout?: number | undefined;
  /** HTTP only: milliseconds a client has to send a whole request (headers and body); a tool's work is not counted. @default 30_000 */
  requestTimeout?: number | undefined;
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
  /** MCP sessions alive now (over stdio, 1 until closed). */
  readonly sessionCount: number;
  /** The tools offered, in MCP's shape. */
  tools(): Tool[];
  /** Adds or replaces an action; connected clients are told the tool list changed. */
  set(action: ActionBase): Promise<void>;
  /** Removes an action by name; connected clients are told the tool list changed. False when there was none. */
  delete(name: string): Promise<boolean>;
  /** Stops serving: ends every session and, over HTTP, closes the listening socket and its connections. */
  close(): Promise<void>;
}

const DEFAULT_IDLE_MS = 30 * 60_000;
const DEFAULT_MAX_SESSIONS = 1000;
const DEFAULT_MAX_SESSIONS_PER_CLIENT = 100;
/** As `HTTPAgentServer`'s: a client that trickles its headers is cut off after 10 s, not Node's 60 s (checked every 30 s). */
const DEFAULT_HEADERS_TIMEOUT = 10_000;
const DEFAULT_REQUEST_TIMEOUT = 30_000;
/** The largest request body read before a session exists (the SDK's own default limit). */
const MAX_INIT_BODY = 4 * 1024 * 1024;

function sendJSONError(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  code = -32000,
): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** The request's body, or undefined once it passes `limit` bytes (the rest is not read). */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        request.off('data', onData);
        request.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    request.on('data', onData);
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

function isJSONType(contentType: string | undefined): boolean {
  return contentType?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}

function positive(name: string, value: number | undefined, integer: boolean): void {
  if (value === undefined) return;
  if (
    typeof value !== 'number' ||
    !(value > 0) ||
    !Number.isFinite(value) ||
    (integer && !Number.isInteger(value))
  ) {
    throw new ConfigurationError({
      message: `serveMCP: ${name} must be a positive ${integer ? 'integer' : 'number'}, got ${String(value)}`,
    });
  }
}

/**
 * Serves lagent actions as an MCP server: each API becomes a tool whose input schema is the JSON Schema of
 * its zod parameters (what `action.toOpenAITools()` gives), and each call's `ActionReturn` becomes the
 * result (text items as text, `data:` image and audio URLs as image and audio blocks; an unsuccessful call
 * as an `isError` result with the text the model would see). Calls run through an `AsyncActionExecutor`,
 * so arguments are checked and nothing a tool throws escapes; over HTTP each MCP session is a lagent
 * session (`sessionId`), so tools that keep per-session state keep it per client. A client's cancellation
 * aborts the tool's `context.signal`.
 *
 * Over HTTP the server answers only requests whose `Host` names it (no DNS rebinding), refuses web pages of
 * origins not in `allowedOrigins` and, with a `token`, requests without it. A request without a session
 * builds nothing until it is a JSON initialize request, and an initialization the SDK refuses keeps nothing;
 * sessions end after `sessionIdleMs` without a message from their client (an open notification stream does
 * not count), at most `maxSessions` live at once and `maxSessionsPerClient` per remote address, and a client
 * has `headersTimeout` to send its headers.
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
  positive('sessionIdleMs', options.sessionIdleMs, false);
  positive('maxSessions', options.maxSessions, true);
  positive('maxSessionsPerClient', options.maxSessionsPerClient, true);
  positive('headersTimeout', options.headersTimeout, false);
  positive('requestTimeout', options.requestTimeout, false);
  if (
    (options.headersTimeout ?? DEFAULT_HEADERS_TIMEOUT) > (options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT)
  ) {
    throw new ConfigurationError({
      message: `serveMCP: headersTimeout (${options.headersTimeout ?? DEFAULT_HEADERS_TIMEOUT}) cannot exceed requestTimeout (${options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT})`,
    });
  }
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
    return {
      url: undefined,
      port: undefined,
      get sessionCount() {
        return closed ? 0 : 1;
      },
      ...common,
      close,
    };
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
  const guard = new HTTPGuard({
    host,
    allowedHosts: options.allowedHosts,
    allowedOrigins: options.allowedOrigins,
    token: options.token,
  });
  if (options.token === undefined && !isLoopbackHost(host)) {
    process.emitWarning(
      `serveMCP serves ${host} without a token: anybody who can reach the port can call the tools. Set token, or bind a loopback host.`,
      { code: 'LAGENT_MCP_NO_TOKEN' },
    );
  }
  const idleMs = options.sessionIdleMs ?? DEFAULT_IDLE_MS;
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const perClient = options.maxSessionsPerClient ?? Math.min(DEFAULT_MAX_SESSIONS_PER_CLIENT, maxSessions);
  type Transport = InstanceType<ServerSDK['StreamableHTTPServerTransport']>;
  /**
   * A live session: its transport and server, its client's address, when its client last sent something, and
   * how many of its client's messages (POST, DELETE) are under way. A notification stream (GET) is neither.
   */
  interface Session {
    transport: Transport;
    server: Server;
    client: string;
    lastSeen: number;
    busy: number;
  }
  const sessions = new Map<string, Session>();
  /** The live sessions of each client, least recently used first. */
  const byClient = new Map<string, Set<Session>>();
  /** Initializations under way, counted against `maxSessions` with the sessions (and per client). */
  let starting = 0;
  const startingFor = new Map<string, number>();

  const clientOf = (request: IncomingMessage) => request.socket.remoteAddress ?? '';

  const track = (session: Session, request: IncomingMessage, response: ServerResponse) => {
    if (request.method === 'GET') return;
    session.busy += 1;
    session.lastSeen = Date.now();
    const own = byClient.get(session.client);
    if (own !== undefined) {
      // Most recently used last.
      own.delete(session);
      own.add(session);
    }
    response.once('close', () => {
      session.busy -= 1;
      session.lastSeen = Date.now();
    });
  };
  const forget = (id: string) => {
    const session = sessions.get(id);
    if (session === undefined) return;
    sessions.delete(id);
    const own = byClient.get(session.client);
    own?.delete(session);
    if (own?.size === 0) byClient.delete(session.client);
  };

  /**
   * Makes room for one more session of `client`: true when it has fewer than its limit (with its
   * initializations under way), else after ending its least recently used session with no message under way;
   * false when every one of them is busy.
   */
  const roomFor = (client: string): boolean => {
    const own = byClient.get(client);
    if ((own?.size ?? 0) + (startingFor.get(client) ?? 0) < perClient) return true;
    for (const session of own ?? []) {
      if (session.busy > 0) continue;
      forget(session.transport.sessionId ?? '');
      void session.server.close().catch(() => undefined);
      return true;
    }
    return false;
  };

  /** Starts a session for an initialize request; nothing is built for anything else, and a refusal frees it. */
  const initialize = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (request.method !== 'POST') {
      return sendJSONError(response, 400, 'Bad Request: a request without a session must initialize one');
    }
    if (!isJSONType(request.headers['content-type'])) {
      return sendJSONError(response, 415, 'Unsupported Media Type: Content-Type must be application/json');
    }
    const body = await readBody(request, MAX_INIT_BODY);
    if (body === undefined) {
      return sendJSONError(response, 413, `the request body is over ${MAX_INIT_BODY} bytes`, {
        connection: 'close',
      });
    }
    let message: unknown;
    try {
      message = JSON.parse(body.toString('utf8'));
    } catch {
      return sendJSONError(response, 400, 'Parse error: Invalid JSON', {}, -32700);
    }
    if (!sdk.types.isInitializeRequest(message)) {
      return sendJSONError(response, 400, 'Bad Request: No valid session ID provided');
    }
    const client = clientOf(request);
    if (!roomFor(client)) {
      return sendJSONError(
        response,
        429,
        `this client holds its maximum of ${perClient} sessions, each with a request under way`,
        { 'retry-after': '60' },
      );
    }
    if (sessions.size + starting >= maxSessions) {
      return sendJSONError(response, 503, `the server holds its maximum of ${maxSessions} sessions`, {
        'retry-after': '60',
      });
    }
    starting += 1;
    startingFor.set(client, (startingFor.get(client) ?? 0) + 1);
    const server = newServer();
    try {
      const transport: Transport = new sdk.StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          const session: Session = { transport, server, client, lastSeen: Date.now(), busy: 0 };
          sessions.set(id, session);
          const own = byClient.get(client);
          if (own === undefined) byClient.set(client, new Set([session]));
          else own.add(session);
          track(session, request, response);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) forget(transport.sessionId);
      };
      await server.connect(transport);
      await transport.handleRequest(request, response, message);
    } finally {
      starting -= 1;
      const left = (startingFor.get(client) ?? 1) - 1;
      if (left === 0) startingFor.delete(client);
      else startingFor.set(client, left);
      // The SDK refused the initialization (a bad header, say): nothing of it is kept.
      const id = (server.transport as Transport | undefined)?.sessionId;
      if (id === undefined || !sessions.has(id)) await server.close().catch(() => undefined);
    }
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== path) return sendJSONError(response, 404, `no MCP endpoint at ${url.pathname}`);
    const refusal = guard.check(request);
    if (refusal) {
      const headers: Record<string, string> = refusal.status === 401 ? { 'www-authenticate': 'Bearer' } : {};
      return sendJSONError(response, refusal.status, refusal.message, headers);
    }
    const sessionId = request.headers['mcp-session-id'];
    if (typeof sessionId !== 'string') return initialize(request, response);
    const session = sessions.get(sessionId);
    if (!session) return sendJSONError(response, 404, 'Session not found', {}, -32001);
    track(session, request, response);
    return session.transport.handleRequest(request, response);
  };

  // Sessions whose client sent nothing for idleMs are ended, their notification streams with them.
  const sweeper = setInterval(
    () => {
      const now = Date.now();
      for (const [id, session] of sessions) {
        if (session.busy === 0 && now - session.lastSeen >= idleMs) {
          forget(id);
          void session.server.close().catch(() => undefined);
        }
      }
    },
    Math.max(10, Math.min(idleMs / 2, 60_000)),
  );
  sweeper.unref();

  const headersTimeout = options.headersTimeout ?? DEFAULT_HEADERS_TIMEOUT;
  const requestTimeout = options.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT;
  const http = createHTTPServer(
    {
      headersTimeout,
      requestTimeout,
      // How often Node checks those two deadlines (its default, 30 s, would let them slip by that much).
      connectionsCheckingInterval: Math.min(1_000, headersTimeout),
    },
    (request, response) => {
      handle(request, response).catch((error: unknown) =>
        sendJSONError(response, 500, error instanceof Error ? error.message : 'internal error'),
      );
    },
  );
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
      clearInterval(sweeper);
      await Promise.all([...servers].map((server) => server.close().catch(() => undefined)));
      sessions.clear();
      byClient.clear();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    })();
    return closed;
  };
  return {
    url: `http://${urlHost}:${port}${path}`,
    port,
    get sessionCount() {
      return sessions.size;
    },
    ...common,
    close,
  };
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
