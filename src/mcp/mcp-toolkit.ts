import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ResolvedApi } from '../actions/action-steps';
import { AsyncBaseAction, checkTimeout } from '../actions/base-action';
import { deepFreeze } from '../actions/describe';
import type { ActionDescription, OpenAITool, ToolContext } from '../actions/types';
import { FROZEN_OPENAI_TOOLS } from '../schema/chat-message';
import { ConfigurationError } from '../schema/errors';
import { toText } from '../utils/text';
import { toolResultReturn } from './content';
import { MCPConnectionError } from './errors';
import { toolSchema } from './json-schema';
import { type ClientSDK, loadClientSDK } from './load';

/** What both kinds of connection take. */
export interface MCPToolkitCommonOptions {
  /**
   * The toolkit's name: its APIs are called `Name.api` (`Name__api` on the wire).
   * @default the server's name, with characters other than letters, digits, `_` and `-` replaced by `_`
   */
  name?: string | undefined;
  /** What the toolkit is for, for the model. @default a sentence naming the server */
  description?: string | undefined;
  /**
   * Timeout of each request to the server (listing tools, each tool call), in ms; a call that takes longer
   * is an `API_ERROR`, and the server is told to cancel it. A call's own `timeoutMs` applies as well.
   * @default 60000 (the SDK's default)
   */
  timeoutMs?: number | undefined;
  /**
   * Timeout of connecting: starting the server, the handshake and the first listing of tools, in ms.
   * @default 60000
   */
  connectTimeoutMs?: number | undefined;
  /**
   * Called after the tool list changed on the server's `notifications/tools/list_changed` (or on
   * {@link MCPToolkit.refresh}). Executors and agents holding the toolkit offer the new list on their next
   * model call by themselves.
   */
  onToolsChanged?: ((toolkit: MCPToolkit) => void) | undefined;
  /** Cancels connecting. */
  signal?: AbortSignal | undefined;
}

/**
 * A server started as a child process, spoken to over its stdin and stdout.
 *
 * The process gets only `env` plus a small safe set of the parent's variables (`HOME`, `LOGNAME`, `PATH`,
 * `SHELL`, `TERM`, `USER`; on Windows their equivalents), as the MCP SDK does, so that API keys and other
 * secrets of this process do not leak to a third-party server. Pass what it needs in `env`
 * (`env: { ...process.env }` to inherit everything).
 */
export interface MCPStdioOptions extends MCPToolkitCommonOptions {
  /** The program to run, e.g. `npx` or `process.execPath`. */
  command: string;
  /** @default [] */
  args?: readonly string[] | undefined;
  /** Variables added to the safe default set (see above). */
  env?: Readonly<Record<string, string>> | undefined;
  /** @default this process's working directory */
  cwd?: string | undefined;
  /** Where the server's stderr goes. @default 'inherit' */
  stderr?: 'inherit' | 'ignore' | undefined;
}

/** A server reached over Streamable HTTP. */
export interface MCPHTTPOptions extends MCPToolkitCommonOptions {
  /** The server's MCP endpoint, e.g. `http://127.0.0.1:3001/mcp`. */
  url: string | URL;
  /** Headers sent with every request (e.g. `Authorization`). */
  headers?: Readonly<Record<string, string>> | undefined;
}

/** Where {@link MCPToolkit.connect} finds the server: a command to run (stdio) or a URL (Streamable HTTP). */
export type MCPConnectOptions = MCPStdioOptions | MCPHTTPOptions;

/** The server, as it introduced itself. */
export interface MCPServerInfo {
  name: string;
  version: string;
  title?: string | undefined;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const PLACEHOLDER = 'tools';

/** A tool name made of `[A-Za-z0-9_-]`, what OpenAI function names allow. */
function safeApiName(text: string): string {
  const safe = text.replace(/[^A-Za-z0-9_-]/g, '_');
  return safe === '' ? 'tool' : safe;
}

/** A toolkit name: also without `__`, which separates the toolkit from the API in `Name__api`. */
function safeName(text: string, fallback: string): string {
  const safe = safeApiName(text)
    .replace(/_{2,}/g, '_')
    .replace(/^_+|_+$/g, '');
  return safe === '' ? fallback : safe;
}

function isStdio(options: MCPConnectOptions): options is MCPStdioOptions {
  return typeof (options as { command?: unknown }).command === 'string';
}

type Transport =
  | InstanceType<ClientSDK['StdioClientTransport']>
  | InstanceType<ClientSDK['StreamableHTTPClientTransport']>;

/** The fields of an action the tool list sets; readonly to everyone else. */
interface Listed {
  apis: ReadonlyMap<string, ResolvedApi>;
  description: ActionDescription;
  isToolkit: boolean;
}

/**
 * The tools of an MCP server as a lagent toolkit: an {@link AsyncBaseAction} whose APIs are the server's
 * tools, for executors and agents like any other tool (`Name.api`; `Name__api` in OpenAI function calling).
 *
 * - Arguments are checked against each tool's JSON Schema before the call: a bad call is an `ARGS_ERROR`
 *   whose message names the argument and the signature, and never reaches the server.
 * - Text, image, audio and resource results become `ActionReturn` items (images and audio as `data:`
 *   URLs); a result the server flags `isError` is an `API_ERROR` with the server's text.
 * - The tool list follows the server's `notifications/tools/list_changed`.
 * - The caller's abort signal and the per-call timeout reach the request, and the server is told to cancel.
 * - `close()` ends the session and, for a stdio server, its process.
 *
 * Tool names are kept when they are made of letters, digits, `_` and `-`; other characters become `_` in
 * the API name (the server is still called with the tool's own name).
 *
 * @example
 * const kit = await MCPToolkit.connect({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], name: 'everything' });
 * (await kit.call({ a: 1, b: 2 }, 'get-sum')).toText(); // 'The sum of 1 and 2 is 3.'
 * await kit.close();
 */
export class MCPToolkit extends AsyncBaseAction {
  /** The server's name, version and title. */
  readonly serverInfo: MCPServerInfo;
  /** Timeout of each request to the server, in ms. */
  readonly timeoutMs: number;
  readonly #client: Client;
  readonly #transport: Transport;
  readonly #onToolsChanged: ((toolkit: MCPToolkit) => void) | undefined;
  readonly #description: string;
  #tools: readonly Tool[] = [];
  #openAI: { separator: string; tools: readonly OpenAITool[] } | undefined;
  #generation = 0;
  #closed: Promise<void> | undefined;

  private constructor(
    client: Client,
    transport: Transport,
    options: MCPConnectOptions,
    serverInfo: MCPServerInfo,
    timeoutMs: number,
  ) {
    const name = options.name ?? safeName(serverInfo.name, 'mcp');
    const description =
      options.description ?? `Tools of the MCP server ${serverInfo.title ?? serverInfo.name}.`;
    // The base class wants at least one API; the server's tools replace this one before anyone sees it.
    super({ name, description, apis: { [PLACEHOLDER]: { run: () => undefined } } });
    this.#client = client;
    this.#transport = transport;
    this.#onToolsChanged = options.onToolsChanged;
    this.#description = description;
    this.serverInfo = serverInfo;
    this.timeoutMs = timeoutMs;
  }

  /**
   * Connects to an MCP server (starting it, for stdio), lists its tools and resolves to the toolkit. Rejects
   * with an {@link MCPConnectionError} when the server cannot be started or reached (a started process is
   * stopped), with a `ConfigurationError` when the SDK is not installed, and with the signal's reason when
   * `signal` aborts.
   */
  static async connect(options: MCPConnectOptions): Promise<MCPToolkit> {
    if (options === null || typeof options !== 'object') {
      throw new ConfigurationError({
        message: 'MCPToolkit.connect expects { command, ... } or { url, ... }',
      });
    }
    const stdio = isStdio(options);
    if (!stdio && !(typeof options.url === 'string' || options.url instanceof URL)) {
      throw new ConfigurationError({
        message: 'MCPToolkit.connect needs a command (stdio server) or a url (Streamable HTTP server)',
      });
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    checkTimeout(timeoutMs);
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    checkTimeout(connectTimeoutMs);
    const sdk = await loadClientSDK('MCPToolkit');
    const transport: Transport = stdio
      ? new sdk.StdioClientTransport({
          command: options.command,
          args: [...(options.args ?? [])],
          ...(options.env ? { env: { ...options.env } } : {}),
          ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
          stderr: options.stderr ?? 'inherit',
        })
      : new sdk.StreamableHTTPClientTransport(new URL(options.url), {
          requestInit: { headers: { ...(options.headers ?? {}) } },
        });
    const client = new sdk.Client({ name: 'lagent-ts', version: '1' }, { capabilities: {} });
    let toolkit: MCPToolkit | undefined;
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
      toolkit?.refresh().catch(() => {
        // The list stays as it was; the next notification or refresh() tries again.
      });
    });
    const where = stdio ? `"${[options.command, ...(options.args ?? [])].join(' ')}"` : String(options.url);
    const signal = options.signal;
    try {
      await client.connect(transport, { timeout: connectTimeoutMs, ...(signal ? { signal } : {}) });
      const version = client.getServerVersion();
      const info: MCPServerInfo = {
        name: version?.name ?? 'mcp',
        version: version?.version ?? '',
        ...(version?.title !== undefined ? { title: version.title } : {}),
      };
      toolkit = new MCPToolkit(client, transport, options, info, timeoutMs);
      toolkit.#apply(await toolkit.#listTools(signal, connectTimeoutMs));
      return toolkit;
    } catch (error) {
      await client.close().catch(() => undefined);
      if (signal?.aborted) throw signal.reason;
      if (error instanceof ConfigurationError) throw error;
      throw new MCPConnectionError({
        message: `could not connect to the MCP server ${where}: ${error instanceof Error ? error.message : toText(error)}`,
        cause: error,
      });
    }
  }

  /** The server's tools as it last listed them (MCP's own shape, with the original names and schemas). */
  get tools(): readonly Tool[] {
    return this.#tools;
  }

  /** The stdio server's process id; `null` for an HTTP server, or once the process has ended. */
  get pid(): number | null {
    const transport = this.#transport as { pid?: number | null };
    return typeof transport.pid === 'number' ? transport.pid : null;
  }

  /** True once {@link close} was called. */
  get isClosed(): boolean {
    return this.#closed !== undefined;
  }

  /**
   * Lists the server's tools again and replaces the APIs with them (done by itself on the server's
   * `tools/list_changed` notification). Calls to an API that is gone answer `API_ERROR` 'invalid API'.
   */
  async refresh(options: { signal?: AbortSignal | undefined } = {}): Promise<void> {
    const generation = ++this.#generation;
    const tools = await this.#listTools(options.signal, this.timeoutMs);
    // An older listing that arrives after a newer one is dropped.
    if (generation !== this.#generation || this.#closed) return;
    this.#apply(tools);
    this.#onToolsChanged?.(this);
  }

  /**
   * Ends the session: an HTTP session is terminated on the server, a stdio server's stdin is closed and
   * its process stopped (SIGTERM, then SIGKILL, as the SDK does). Safe to call more than once.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      const transport = this.#transport as { terminateSession?: () => Promise<void>; sessionId?: string };
      if (typeof transport.terminateSession === 'function' && transport.sessionId !== undefined) {
        await transport.terminateSession().catch(() => undefined);
      }
      await this.#client.close();
    })();
    return this.#closed;
  }

  override [FROZEN_OPENAI_TOOLS](separator: string): readonly OpenAITool[] {
    if (this.#openAI?.separator === separator) return this.#openAI.tools;
    const tools = [...this.apis.values()].map((api) =>
      deepFreeze({
        type: 'function' as const,
        function: {
          name: `${this.name}${separator}${api.name}`,
          description: api.info.description.description,
          parameters: api.info.jsonSchema as Record<string, unknown>,
        },
      }),
    );
    Object.freeze(tools);
    this.#openAI = { separator, tools };
    return tools;
  }

  async #listTools(signal: AbortSignal | undefined, timeoutMs: number): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#client.listTools(cursor === undefined ? undefined : { cursor }, {
        timeout: timeoutMs,
        ...(signal ? { signal } : {}),
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /** Makes `tools` the toolkit's APIs (always a toolkit, even with one tool or none). */
  #apply(tools: readonly Tool[]): void {
    const apis = new Map<string, ResolvedApi>();
    for (const tool of tools) {
      let apiName = safeApiName(tool.name);
      for (let n = 2; apis.has(apiName); n++) apiName = `${safeApiName(tool.name)}_${n}`;
      const { schema, info } = toolSchema(apiName, tool.description ?? tool.title ?? '', tool.inputSchema);
      const toolName = tool.name;
      apis.set(apiName, {
        name: apiName,
        schema,
        signature: info.signature,
        info,
        run: (args, context) => this.#callTool(toolName, args, context),
      });
    }
    const listed = this as unknown as Listed;
    listed.apis = apis;
    listed.isToolkit = true;
    listed.description = deepFreeze({
      name: this.name,
      description: this.#description,
      api_list: [...apis.values()].map((api) => api.info.description),
    });
    this.#tools = Object.freeze([...tools]);
    this.#openAI = undefined;
  }

  async #callTool(name: string, args: Record<string, unknown>, context: ToolContext) {
    const result = await this.#client.callTool({ name, arguments: args }, undefined, {
      timeout: this.timeoutMs,
      ...(context.signal ? { signal: context.signal } : {}),
    });
    // A server on the protocol's first version answers with `toolResult` instead of content.
    const content =
      'content' in result
        ? (result as CallToolResult)
        : {
            content: [
              { type: 'text' as const, text: toText((result as { toolResult?: unknown }).toolResult) },
            ],
          };
    // `args` and `type` are left empty: the call steps fill in what the model sent and the toolkit's name.
    return toolResultReturn(content, {}, '');
  }
}
