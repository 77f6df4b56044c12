import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ResolvedApi } from '../actions/action-steps';
import { AsyncBaseAction, checkTimeout } from '../actions/base-action';
import { deepFreeze } from '../actions/describe';
import type { ActionDescription, OpenAITool, ToolContext } from '../actions/types';
import { FROZEN_OPENAI_TOOLS } from '../schema/chat-message';
import { ConfigurationError } from '../schema/errors';
import { shorten, toText } from '../utils/text';
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
  /**
   * How long to wait after a `tools/list_changed` notification before listing the tools again, in ms.
   * Notifications that arrive meanwhile, or while a listing runs, are answered by one more listing.
   * @default 100
   */
  listChangedDebounceMs?: number | undefined;
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
const DEFAULT_DEBOUNCE_MS = 100;
const PLACEHOLDER = 'tools';
/** OpenAI's limit on a function name, which for a toolkit's API is `Name__api`. */
const WIRE_NAME_LIMIT = 64;
/** What a default toolkit name (the server's) is cut to, leaving the rest of the wire name to the API. */
const DEFAULT_NAME_LIMIT = 32;
/** The fewest characters a toolkit name must leave to its API names. */
const MIN_API_NAME = 8;
/** Pages of a tool listing followed at most (a server could hand out cursors forever). */
const MAX_PAGES = 100;
/** Distinct warnings one toolkit gives at most. */
const MAX_WARNINGS = 100;

/** A `tools/list` page read without judging its tools: each is checked alone, and a bad one is skipped. */
const ToolPage = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });

/** A tool name made of `[A-Za-z0-9_-]`, what OpenAI function names allow. */
function safeApiName(text: string): string {
  const safe = text.replace(/[^A-Za-z0-9_-]/g, '_');
  return safe === '' ? 'tool' : safe;
}

/** A toolkit name: also without `__`, which separates the toolkit from the API in `Name__api`. */
function safeName(text: string, fallback: string): string {
  const safe = safeApiName(text)
    .replace(/_{2,}/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, DEFAULT_NAME_LIMIT)
    .replace(/_+$/, '');
  return safe === '' ? fallback : safe;
}

/** A few validation issues as one line: `inputSchema.type: Invalid input`. */
function issuesText(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  const text = issues
    .slice(0, 3)
    .map((issue) => `${issue.path.map(String).join('.') || 'the tool'}: ${issue.message}`)
    .join('; ');
  return shorten(text, 300);
}

/**
 * Gives each tool an API name that is OpenAI-safe, at most `limit` characters, and unused so far: the tool's
 * name, cut, then with `_2`, `_3`, ... (cut further to fit) while taken.
 */
function uniqueApiName(
  toolName: string,
  limit: number,
  taken: ReadonlyMap<string, unknown>,
  next: Map<string, number>,
): string {
  const base = safeApiName(toolName).slice(0, limit);
  if (!taken.has(base)) return base;
  for (let n = next.get(base) ?? 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = `${base.slice(0, limit - suffix.length)}${suffix}`;
    if (!taken.has(candidate)) {
      next.set(base, n + 1);
      return candidate;
    }
  }
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
 * - An HTTP server that ended the session (it answers 404, as `serveMCP` does after `sessionIdleMs` without a
 *   request) gets a new one: the toolkit initializes again and sends the request once more, as MCP asks.
 *
 * Tool names are kept when they are made of letters, digits, `_` and `-`; other characters become `_` in
 * the API name (the server is still called with the tool's own name), and names are cut so that `Name__api`
 * fits OpenAI's 64 characters (`_2`, `_3`, ... keep cut names apart).
 *
 * The server is not trusted: a tool that is not a valid MCP tool, or whose input schema cannot be read, is
 * left out with a warning (`LAGENT_MCP_TOOL_SKIPPED`) instead of failing the connection; `pattern`s are run
 * by RE2, in time linear in the argument, and one RE2 cannot express (lookaround, backreferences) is left
 * to the server with a warning (`LAGENT_MCP_PATTERN_UNCHECKED`); a storm of `list_changed` notifications
 * costs one listing per {@link MCPToolkitCommonOptions.listChangedDebounceMs}. Tools' `outputSchema`s are
 * not compiled or checked.
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
  #transport: Transport;
  /** How to open a new HTTP session when the server ended ours (undefined for stdio). */
  readonly #reopen: (() => Transport) | undefined;
  #reopening: Promise<void> | undefined;
  readonly #onToolsChanged: ((toolkit: MCPToolkit) => void) | undefined;
  readonly #description: string;
  readonly #debounceMs: number;
  #tools: readonly Tool[] = [];
  #openAI: { separator: string; tools: readonly OpenAITool[] } | undefined;
  #generation = 0;
  #closed: Promise<void> | undefined;
  /** The pending listing after a `list_changed` notification, whether one runs, and whether to list again after it. */
  #relistTimer: ReturnType<typeof setTimeout> | undefined;
  #relisting = false;
  #relistAgain = false;
  readonly #warned = new Set<string>();

  private constructor(
    client: Client,
    transport: Transport,
    reopen: (() => Transport) | undefined,
    options: MCPConnectOptions,
    serverInfo: MCPServerInfo,
    timeoutMs: number,
  ) {
    const name = options.name ?? safeName(serverInfo.name, 'mcp');
    const description =
      options.description ?? `Tools of the MCP server ${serverInfo.title ?? serverInfo.name}.`;
    // The base class wants at least one API; the server's tools replace this one before anyone sees it.
    super({ name, description, apis: { [PLACEHOLDER]: { run: () => undefined } } });
    if (name.length > WIRE_NAME_LIMIT - 2 - MIN_API_NAME) {
      throw new ConfigurationError({
        message: `MCPToolkit: name must be at most ${WIRE_NAME_LIMIT - 2 - MIN_API_NAME} characters, so that its APIs' function names (Name__api) fit OpenAI's ${WIRE_NAME_LIMIT}; got ${name.length}`,
      });
    }
    this.#debounceMs = options.listChangedDebounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.#client = client;
    this.#transport = transport;
    this.#reopen = reopen;
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
    const debounceMs = options.listChangedDebounceMs;
    if (debounceMs !== undefined && !(Number.isFinite(debounceMs) && debounceMs >= 0)) {
      throw new ConfigurationError({
        message: `MCPToolkit: listChangedDebounceMs must be a number of ms >= 0, got ${String(debounceMs)}`,
      });
    }
    const sdk = await loadClientSDK('MCPToolkit');
    const reopen = stdio
      ? undefined
      : () =>
          new sdk.StreamableHTTPClientTransport(new URL(options.url), {
            requestInit: { headers: { ...(options.headers ?? {}) } },
          });
    const transport: Transport = stdio
      ? new sdk.StdioClientTransport({
          command: options.command,
          args: [...(options.args ?? [])],
          ...(options.env ? { env: { ...options.env } } : {}),
          ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
          stderr: options.stderr ?? 'inherit',
        })
      : reopen!();
    const client = new sdk.Client({ name: 'lagent-ts', version: '1' }, { capabilities: {} });
    let toolkit: MCPToolkit | undefined;
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
      if (toolkit) toolkit.#listChanged();
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
      toolkit = new MCPToolkit(client, transport, reopen, options, info, timeoutMs);
      toolkit.#apply(await toolkit.#listTools(sdk, signal, connectTimeoutMs));
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
    const tools = await this.#listTools(await loadClientSDK('MCPToolkit'), options.signal, this.timeoutMs);
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
    clearTimeout(this.#relistTimer);
    this.#relistTimer = undefined;
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

  /**
   * Answers `tools/list_changed`: lists again after {@link MCPToolkitCommonOptions.listChangedDebounceMs},
   * once for every notification that came meanwhile, and once more after a listing that notifications
   * overtook; a storm of notifications costs one listing per period, not one each.
   */
  #listChanged(): void {
    if (this.#closed) return;
    if (this.#relisting) {
      this.#relistAgain = true;
      return;
    }
    if (this.#relistTimer !== undefined) return;
    this.#relistTimer = setTimeout(() => {
      this.#relistTimer = undefined;
      this.#relisting = true;
      this.refresh()
        .catch(() => {
          // The list stays as it was; the next notification or refresh() tries again.
        })
        .finally(() => {
          this.#relisting = false;
          if (this.#relistAgain) {
            this.#relistAgain = false;
            this.#listChanged();
          }
        });
    }, this.#debounceMs);
    this.#relistTimer.unref?.();
  }

  /** Reports something about the server's tools once per toolkit (a bounded number of distinct warnings). */
  #warn(message: string, code: string): void {
    if (this.#warned.has(message) || this.#warned.size >= MAX_WARNINGS) return;
    this.#warned.add(message);
    process.emitWarning(`MCPToolkit ${this.name}: ${message}`, { code });
  }

  /** Every page of the server's tools; a tool that is not a valid MCP tool is skipped with a warning. */
  async #listTools(sdk: ClientSDK, signal: AbortSignal | undefined, timeoutMs: number): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const params = cursor === undefined ? {} : { params: { cursor } };
      const result = await this.#send(() =>
        this.#client.request({ method: 'tools/list', ...params }, ToolPage, {
          timeout: timeoutMs,
          ...(signal ? { signal } : {}),
        }),
      );
      for (const raw of result.tools) {
        const tool = sdk.ToolSchema.safeParse(raw);
        if (tool.success) tools.push(tool.data as Tool);
        else {
          const name = (raw as { name?: unknown } | null)?.name;
          this.#warn(
            `skipped the tool ${typeof name === 'string' ? JSON.stringify(shorten(name, 80)) : '(no name)'}: it is not a valid MCP tool (${issuesText(tool.error.issues)})`,
            'LAGENT_MCP_TOOL_SKIPPED',
          );
        }
      }
      if (result.nextCursor === undefined || result.nextCursor === cursor) return tools;
      cursor = result.nextCursor;
    }
    this.#warn(`the tool list was cut after ${MAX_PAGES} pages`, 'LAGENT_MCP_TOOL_SKIPPED');
    return tools;
  }

  /**
   * Makes `tools` the toolkit's APIs (always a toolkit, even with one tool or none). API names fit OpenAI's
   * 64 characters as `Name__api`; a tool whose schema cannot be read is skipped with a warning.
   */
  #apply(tools: readonly Tool[]): void {
    const apis = new Map<string, ResolvedApi>();
    const kept: Tool[] = [];
    const next = new Map<string, number>();
    const limit = WIRE_NAME_LIMIT - 2 - this.name.length;
    for (const tool of tools) {
      const toolName = tool.name;
      let read: ReturnType<typeof toolSchema>;
      const apiName = uniqueApiName(toolName, limit, apis, next);
      try {
        read = toolSchema(apiName, tool.description ?? tool.title ?? '', tool.inputSchema);
      } catch (error) {
        this.#warn(
          `skipped the tool ${JSON.stringify(shorten(toolName, 80))}: its input schema could not be read (${shorten(error instanceof Error ? error.message : toText(error), 300)})`,
          'LAGENT_MCP_TOOL_SKIPPED',
        );
        continue;
      }
      for (const pattern of read.uncheckedPatterns) {
        this.#warn(
          `the pattern /${shorten(pattern, 80)}/ of the tool ${JSON.stringify(shorten(toolName, 80))} is not checked before calls (only patterns RE2 can run in linear time are; the server still checks it)`,
          'LAGENT_MCP_PATTERN_UNCHECKED',
        );
      }
      const { schema, info } = read;
      apis.set(apiName, {
        name: apiName,
        schema,
        signature: info.signature,
        info,
        run: (args, context) => this.#callTool(toolName, args, context),
      });
      kept.push(tool);
    }
    const listed = this as unknown as Listed;
    listed.apis = apis;
    listed.isToolkit = true;
    listed.description = deepFreeze({
      name: this.name,
      description: this.#description,
      api_list: [...apis.values()].map((api) => api.info.description),
    });
    this.#tools = Object.freeze(kept);
    this.#openAI = undefined;
  }

  /**
   * Sends a request; when an HTTP server answers 404 (it ended our session), opens a new session and sends
   * it once more (a 404 means the server did not take the request).
   */
  async #send<T>(request: () => Promise<T>): Promise<T> {
    const transport = this.#transport;
    try {
      return await request();
    } catch (error) {
      if (this.#reopen === undefined || this.#closed || (error as { code?: unknown })?.code !== 404)
        throw error;
      await this.#newSession(transport);
      return request();
    }
  }

  /** Replaces the session `ended` with a new one (once, however many requests found it ended). */
  #newSession(ended: Transport): Promise<void> {
    if (this.#transport !== ended) return this.#reopening ?? Promise.resolve();
    const reopened = (async () => {
      await this.#client.close().catch(() => undefined);
      const transport = this.#reopen!();
      this.#transport = transport;
      await this.#client.connect(transport, { timeout: this.timeoutMs });
      // The new session may offer other tools.
      this.#listChanged();
    })();
    this.#reopening = reopened.finally(() => {
      if (this.#reopening === reopened) this.#reopening = undefined;
    });
    return this.#reopening;
  }

  async #callTool(name: string, args: Record<string, unknown>, context: ToolContext) {
    const result = await this.#send(() =>
      this.#client.callTool({ name, arguments: args }, undefined, {
        timeout: this.timeoutMs,
        ...(context.signal ? { signal: context.signal } : {}),
      }),
    );
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
