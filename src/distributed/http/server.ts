import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentBase } from '../../agents/agent-base';
import { finalReply } from '../../agents/final-reply';
import { DURABLE } from '../../agents/interceptors/durable/journal';
import {
  attachStore,
  type MemoryStoreOptions,
  sessionBindingOf,
} from '../../agents/interceptors/session-store/persist';
import type { RecoveredRun } from '../../agents/runs/recover-runs';
import type { LagentStateDict } from '../../agents/state-dict';
import { registerSameThreadServer } from '../../bridge/same-thread';
import { bearerMatches, type Refusal, RequestGuard } from '../../core/request-guard';
import { AgentMessage, asOwnMessage, type MessageInput } from '../../schema/agent-message';
import { ConfigurationError, LagentError, missingPeer, ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import type { SessionStore } from '../../stores/types';
import { isAsyncIterator, isIterator, isThenable } from '../../utils/is';
import { printable } from '../../utils/printable';
import { errorMessage } from '../../utils/text';
import {
  CallerOptions,
  type CallerOptionsPolicy,
  callIdNotHonoured,
  checkCallId,
  isUnprocessable,
  replaysCalls,
} from '../caller-options';
import { loadProtocols, type ProtocolPlan, type ProtocolsOption, planProtocols } from '../protocols/register';
import type { ProtocolHost } from '../protocols/run';
import { refusalBody } from '../remote-budget';
import { OpenConnections } from './open-connections';
import {
  type ChatRequest,
  checkSessionId,
  MAX_SESSION_ID_LENGTH,
  readChatRequest,
  SSE_EVENTS,
} from './protocol';
import { setRequestResource, withRequestResource } from './request-resource';
import { registerRunRoutes, ServerRuns, type ServerRunsOptions } from './runs-routes';
import { ServedSessions } from './served-sessions';
import {
  mintSessionToken,
  OTHER_SESSION,
  requestScope,
  scopeRequest,
  sessionOfToken,
  sessionTokenKey,
} from './session-tokens';
import { SSEWriter, type StreamContent } from './sse-writer';

/**
 * What an {@link HTTPAgentServer} can serve: any agent of lagent-ts (`Agent`, `AsyncAgent`, the streaming
 * variants, `Sequential`s and prebuilt agents), or anything else with `call` and `stateDict` in their shape.
 */
export type ServedAgent = {
  /** The session's state in Lagent's shape (`GET /memory/{id}`), or a promise of it (a remote agent's). */
  stateDict(
    sessionId: SessionId | undefined,
    options: { format: 'lagent' },
  ): LagentStateDict | Promise<LagentStateDict>;
  readonly name?: string | undefined;
  call(input: readonly MessageInput[], options: Record<string, unknown>): unknown;
};

/** Options of {@link HTTPAgentServer}. */
export interface HTTPAgentServerOptions {
  /** The agent to serve. */
  agent: ServedAgent;
  /** The address to bind; keep the default unless the port is protected otherwise. @default '127.0.0.1' */
  host?: string | undefined;
  /** The port; `0` picks a free one (read it from `url` after `listen()`). @default 8090 */
  port?: number | undefined;
  /**
   * When set, every route but `/health_check` needs `Authorization: Bearer <token>`, else 401. Without it,
   * anything that can reach the port can run the agent: keep such a server on a loopback host.
   */
  token?: string | undefined;
  /**
   * More names a request's `Host` header may carry (the port is not compared), besides the loopback names
   * (`localhost`, `127.0.0.1`, `::1`) and `host` (any of the machine's addresses when `host` binds them all).
   * Other requests are answered 403, which stops a web page that rebinds its DNS name to this machine. Add the
   * names clients use through a proxy or a container's port mapping; `'*'` turns the check off.
   */
  allowedHosts?: readonly string[] | undefined;
  /**
   * Origins whose web pages may call the server (`https://app.example`; `'*'` for any). A request that carries
   * any other `Origin` (browsers add it to cross-site requests) is answered 403; requests without one (every
   * client outside a browser) are not concerned. Listed origins also get CORS headers and preflight answers.
   * @default none
   */
  allowedOrigins?: readonly string[] | undefined;
  /**
   * How `/chat_completion/stream` sends chunks: `'delta'`, only the text each chunk adds (`delta` events), or
   * `'cumulative'`, every chunk with all its text so far (`chunk` events, as Lagent's streaming agents yield
   * them). lagent-ts's clients read both.
   * @default 'delta'
   */
  streamContent?: StreamContent | undefined;
  /**
   * Sessions kept in memory for an agent without a store: past it, the least recently used sessions with no
   * call in flight are forgotten (reset in the whole agent tree, with a warning the first time), so clients
   * that invent session ids cannot grow the process without end. With a store, the store's own `maxSessions`
   * applies (forgotten sessions are reloaded from it). `Infinity` keeps every session.
   * @default 10_000
   */
  maxSessions?: number | undefined;
  /**
   * What callers may set on a call besides the session: generation parameters (with bounds), a budget ceiling,
   * options of your own. Keys a body carries that this does not allow — `model`, `messages`, `tools`,
   * `tool_choice`, `extra_body`, unknown ones — are ignored and named in the answer's `Lagent-Ignored-Options`
   * header. @default callers may set `call_id` and `budget` only
   */
  callerOptions?: CallerOptionsPolicy | undefined;
  /**
   * Whose memory a request's call reads and writes: the `resourceId` call option of semantic recall and working
   * memory with `scope: 'resource'`, derived from what your application verified (a header your proxy sets
   * after authenticating, a signed cookie), never from a request body (a body's `resourceId` is always
   * ignored). Called for every `POST` request, after the token check; its answer is set on the call of every
   * route that starts one (`/chat_completion`, its stream, `/runs` and the protocols' routes). `undefined`:
   * the call has none (a resource-scope agent then refuses it, 400). A function that throws answers 401.
   * @default none: no call gets a `resourceId`
   * @example resourceId: (request) => verifiedUser(request.headers.cookie)?.id
   */
  resourceId?: ((request: FastifyRequest) => string | undefined | Promise<string | undefined>) | undefined;
  /** Largest request body in bytes; a larger one is answered 413. @default 1_048_576 */
  bodyLimit?: number | undefined;
  /** Milliseconds a client has to send a request's headers. @default 10_000 */
  headersTimeout?: number | undefined;
  /** Milliseconds a client has to send a whole request (headers and body); the agent's work is not counted. @default 30_000 */
  requestTimeout?: number | undefined;
  /** Milliseconds an idle keep-alive connection stays open. @default 72_000 */
  keepAliveTimeout?: number | undefined;
  /**
   * Put a failing agent's error message in the 500 answer's `detail`. By default the answer says only
   * `Internal Server Error` and the error's class name, as Lagent's server does, and the error goes to `onError`.
   * @default false
   */
  exposeErrors?: boolean | undefined;
  /**
   * Keep every session in this store (`SQLiteStore`, `RedisStore`, `PostgresStore`, ...), as the agent's
   * `memory: { store }` would: each call's turn is committed before it is answered, a server killed and
   * started again answers `GET /memory/{id}` with every committed turn, and several servers may share the
   * store. Give options (`{ store, namespace, leaseMs, maxSessions }`) to choose more than the store. An
   * agent built with `memory: { store }` needs none.
   */
  store?: SessionStore | MemoryStoreOptions | undefined;
  /**
   * The protocols served besides Lagent's own, behind the same `Host`, `Origin` and token checks and the same
   * `callerOptions`: `'openai'` (`POST /v1/chat/completions`, `GET /v1/models`), `'ai-sdk'` (the AI SDK's UI
   * message stream for `useChat`, `POST /api/chat`), `'ag-ui'` (`POST /ag-ui`, with `@ag-ui/encoder`) and `'a2a'`
   * (the agent card at `/.well-known/agent-card.json` and JSON-RPC at `/a2a`, with `@a2a-js/sdk`). A list of
   * names, or settings per protocol (`{ 'ai-sdk': { path: '/chat' }, a2a: false }`). By default all four; one
   * whose optional peer is missing then answers 501 saying what to install (named explicitly, `listen()` fails).
   * @default every protocol
   */
  protocols?: ProtocolsOption | undefined;
  /**
   * Called with the server's Fastify app before the server adds its own hooks and routes: routes added here are
   * answered behind the same `Host`, `Origin` and token checks (a route whose `config` has `public: true` is
   * answered without the token, as `/health_check` is: for files that hold nothing), and `onRequest` hooks added
   * here run before those checks. Used by `lagent ui`.
   */
  setup?: ((app: FastifyInstance) => void) | undefined;
  /**
   * Runs (`POST /runs`, `GET /runs/{id}`, `GET /runs/{id}/stream`, `POST /runs/{id}/cancel`,
   * `GET /sessions/{id}/runs`): where their logs are kept (`store`: by default the agent's `durable` store, else
   * `store` above, else this process), how long (`retainMs`), and how many sessions `listen()` recovers at once
   * (`recover`: the durable calls a process left unfinished are finished into their runs' logs; `false` leaves
   * them).
   */
  runs?: ServerRunsOptions | undefined;
  /**
   * Whether a client that goes away from `POST /chat_completion(/stream)` stops its call. By default a durable
   * agent's call goes on to its end (its reply is kept: a retry with its call id gets it), and any other call
   * stops and takes its turn back. Runs (`POST /runs`) never stop for a client; the calls of `POST /api/chat`
   * and `POST /ag-ui`, which are runs (a client comes back for them), stop only when this is set `true`.
   * @default true, false for an agent with `durable`
   */
  abortOnDisconnect?: boolean | undefined;
  /** Told about every agent call that failed (the answer was a 500 or an SSE `error` event). @default writes one line to stderr */
  onError?:
    | ((error: unknown, context: { route: string; sessionId: SessionId | undefined }) => void)
    | undefined;
}

/** The JSON body of every error answer. */
export interface HTTPErrorBody {
  /** What went wrong, in a sentence (FastAPI's key, which Lagent's clients read). */
  detail: string;
  /** A stable code: the error class (`ValidationError`, `LLMRequestError`, ...) or Fastify's code. */
  error: string;
}

type Fastify = FastifyInstance;

/** Loads Fastify, an optional peer of `lagent-ts/distributed`. */
async function loadFastify(): Promise<(options: Record<string, unknown>) => Fastify> {
  try {
    const module = (await import('fastify')) as unknown as {
      default?: (options: Record<string, unknown>) => Fastify;
      fastify?: (options: Record<string, unknown>) => Fastify;
    };
    const factory = module.fastify ?? module.default;
    if (typeof factory !== 'function') throw new Error('fastify exports no factory');
    return factory;
  } catch (error) {
    throw missingPeer(['fastify'], 'HTTPAgentServer', error);
  }
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigurationError({
      message: `HTTPAgentServer: ${name} must be a positive number, got ${String(value)}`,
    });
  }
  return value;
}

function errorName(error: unknown): string {
  if (error instanceof Error) return error.name;
  return 'Error';
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Serves an agent over HTTP with Python Lagent's protocol (`lagent.distributed.http_serve`), snake_case on
 * the wire, so Lagent's `HTTPAgentClient` and lagent-ts's {@link AsyncHTTPAgentClient} both talk to it:
 *
 * - `POST /chat_completion` `{ message: [string | AgentMessage dump], session_id, ...kwargs }` answers the
 *   reply, `AgentMessage.model_dump()`'s shape. Of the kwargs, the call gets only what `callerOptions` allows
 *   (`max_new_tokens` as `maxNewTokens`, kept within its bounds), `budget` (within `callerOptions.maxBudget`)
 *   and `call_id`; the others are ignored and named in a `Lagent-Ignored-Options` header.
 * - An `Idempotency-Key` header (or `call_id` in the body) is the call's `callId`: a durable agent replays a
 *   call it has seen rather than run it again; the answer carries the key in the same header. A key reused
 *   with another session or input is answered 422, and so is a key sent to an agent that cannot replay calls
 *   (no `durable` store in its tree).
 * - `POST /chat_completion/stream`, the same body, answers server-sent events: the streamed messages (a
 *   `chunk` event with the first one whole, then `delta` events with only the text each adds; every chunk whole
 *   with `streamContent: 'cumulative'`), then one `message` event with the final message (a non-streaming agent
 *   sends only that), or an `error` event. The agent's stream is pulled only as fast as the client reads. A
 *   client that goes away stops the call, which leaves the session as it was.
 * - `GET /memory/{session_id}` answers the agent's state dict for the session, in Lagent's shape (empty
 *   memories for a session it has not seen).
 * - `GET /health_check` answers `{ status: 'success', timestamp }`, without the token.
 *
 * Bad requests are answered and touch no session: malformed JSON, a missing `message`, a mistyped generation
 * parameter, call id or budget, or a session id over 1,024 characters 400, a value `callerOptions` refuses 422, a body that is not `application/json` 415, a body over
 * `bodyLimit` 413, a bad or missing token 401, a `Host` that is not this server's (`allowedHosts`) or a web page's
 * `Origin` (`allowedOrigins`) 403, so a page in a browser cannot drive a server that has no token; every error
 * answer is `{ detail, error }`. A failing agent answers 500 and its call
 * takes its turn back, as any failed call does. A client too slow to send its headers (`headersTimeout`) or its
 * whole request (`requestTimeout`) gets 408; the agent's own work has no server-side deadline (the client's
 * `timeout` bounds it, and a client that leaves stops the call). `close()` drains the calls in flight.
 *
 * Calls on one session run one at a time in order (the agent's own session lanes); sessions run
 * concurrently with an async agent. A sync agent (`Agent`, `StreamingAgent`) is served as it is: each call
 * runs to its end on the event loop, so the server answers nothing else meanwhile; serve async agents for
 * concurrency. Fastify, an optional peer, is loaded by `listen()`.
 *
 * @example
 * const server = new HTTPAgentServer({ agent, port: 0 });
 * await server.listen();
 * const remote = new AsyncHTTPAgentClient({ url: server.url });
 * await remote.call('hello', { sessionId: 1 });
 * await server.close();
 */
export class HTTPAgentServer {
  readonly agent: ServedAgent;
  readonly host: string;
  readonly #port: number;
  readonly #token: Buffer | undefined;
  readonly #bodyLimit: number;
  readonly #headersTimeout: number;
  readonly #requestTimeout: number;
  readonly #keepAliveTimeout: number;
  readonly #exposeErrors: boolean;
  readonly #guard: RequestGuard;
  readonly #streamContent: StreamContent;
  readonly #onError: NonNullable<HTTPAgentServerOptions['onError']>;
  readonly #setup: HTTPAgentServerOptions['setup'];
  readonly #callers: CallerOptions;
  readonly #resourceOf: HTTPAgentServerOptions['resourceId'];
  readonly #protocols: ProtocolPlan;
  #app: Fastify | undefined;
  #url: string | undefined;
  #listening: Promise<string> | undefined;
  #closing: Promise<void> | undefined;
  #forget: (() => void) | undefined;
  #inFlight = 0;
  #drained: (() => void) | undefined;
  /** The sessions clients used, bounded, for an agent that keeps them in memory only. */
  readonly #sessions: ServedSessions | undefined;
  readonly #calls = new Set<AbortController>();
  readonly #runs: ServerRuns;
  readonly #abortOnDisconnect: boolean;
  /** `abortOnDisconnect` as given (the protocols' runs go on unless it is true). */
  readonly #abortOnDisconnectOption: boolean | undefined;
  /** Connections on which nothing was sent yet. */
  readonly #silent = new Set<Duplex>();
  #recovery: Promise<RecoveredRun[]> | undefined;

  constructor(options: HTTPAgentServerOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new ConfigurationError({
        message: 'HTTPAgentServer expects an options object ({ agent, port, ... })',
      });
    }
    const { agent } = options;
    if (
      agent === null ||
      typeof agent !== 'object' ||
      typeof agent.call !== 'function' ||
      typeof agent.stateDict !== 'function'
    ) {
      throw new ConfigurationError({
        message: 'HTTPAgentServer needs an agent (an object with call and stateDict)',
      });
    }
    const port = options.port ?? 8090;
    if (!Number.isInteger(port) || port < 0 || port > 65_535) {
      throw new ConfigurationError({
        message: `HTTPAgentServer: port must be an integer 0..65535, got ${String(port)}`,
      });
    }
    if (options.token !== undefined && (typeof options.token !== 'string' || options.token.length === 0)) {
      throw new ConfigurationError({ message: 'HTTPAgentServer: token must be a non-empty string' });
    }
    if (options.store !== undefined) {
      if (!(agent instanceof AgentBase)) {
        throw new ConfigurationError({ message: 'HTTPAgentServer: store needs an agent of lagent-ts' });
      }
      const store = options.store;
      attachStore(agent, 'acquireSession' in store ? { store } : store);
    }
    this.agent = agent;
    const maxSessions = options.maxSessions ?? 10_000;
    if (maxSessions !== Number.POSITIVE_INFINITY && !(Number.isInteger(maxSessions) && maxSessions > 0)) {
      throw new ConfigurationError({
        message: `HTTPAgentServer: maxSessions must be a positive integer or Infinity, got ${String(maxSessions)}`,
      });
    }
    const reset = (agent as { reset?: unknown }).reset;
    this.#sessions =
      typeof reset === 'function' &&
      sessionBindingOf(agent) === undefined &&
      maxSessions !== Number.POSITIVE_INFINITY
        ? new ServedSessions(maxSessions, (id) => reset.call(agent, id, { recursive: true }))
        : undefined;
    this.host = options.host ?? '127.0.0.1';
    this.#port = port;
    this.#token = options.token === undefined ? undefined : Buffer.from(options.token);
    this.#runs = new ServerRuns(agent, options.runs);
    if (options.abortOnDisconnect !== undefined && typeof options.abortOnDisconnect !== 'boolean') {
      throw new ConfigurationError({ message: 'HTTPAgentServer: abortOnDisconnect must be true or false' });
    }
    this.#abortOnDisconnect = options.abortOnDisconnect ?? !isDurable(agent);
    this.#abortOnDisconnectOption = options.abortOnDisconnect;
    this.#bodyLimit = positive('bodyLimit', options.bodyLimit, 1_048_576);
    this.#headersTimeout = positive('headersTimeout', options.headersTimeout, 10_000);
    this.#requestTimeout = positive('requestTimeout', options.requestTimeout, 30_000);
    this.#keepAliveTimeout = positive('keepAliveTimeout', options.keepAliveTimeout, 72_000);
    if (this.#headersTimeout > this.#requestTimeout) {
      throw new ConfigurationError({
        message: `HTTPAgentServer: headersTimeout (${this.#headersTimeout}) cannot exceed requestTimeout (${this.#requestTimeout})`,
      });
    }
    this.#exposeErrors = options.exposeErrors ?? false;
    this.#callers = new CallerOptions('HTTPAgentServer', options.callerOptions);
    if (options.resourceId !== undefined && typeof options.resourceId !== 'function') {
      throw new ConfigurationError({
        message:
          'HTTPAgentServer: resourceId must be a function of the request (whose memory its calls read), e.g. (request) => verifiedUser(request)?.id',
      });
    }
    this.#resourceOf = options.resourceId;
    this.#protocols = planProtocols(options.protocols, 'HTTPAgentServer');
    this.#guard = new RequestGuard({
      host: this.host,
      allowedHosts: options.allowedHosts,
      allowedOrigins: options.allowedOrigins,
      owner: 'HTTPAgentServer',
    });
    const streamContent = options.streamContent ?? 'delta';
    if (streamContent !== 'delta' && streamContent !== 'cumulative') {
      throw new ConfigurationError({
        message: `HTTPAgentServer: streamContent must be 'delta' or 'cumulative', got ${String(streamContent)}`,
      });
    }
    this.#streamContent = streamContent;
    if (options.setup !== undefined && typeof options.setup !== 'function') {
      throw new ConfigurationError({
        message: 'HTTPAgentServer: setup must be a function of the Fastify app',
      });
    }
    this.#setup = options.setup;
    this.#onError =
      options.onError ??
      ((error, { route, sessionId }) => {
        const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        // The session id, and often the message, are the client's: escaped, they cannot drive the terminal.
        process.stderr.write(
          `HTTPAgentServer: ${route} (session ${printable(String(sessionId))}) failed: ${printable(text)}\n`,
        );
      });
  }

  /** The server's base URL, e.g. `http://127.0.0.1:8090`; available once `listen()` resolved. */
  get url(): string {
    if (this.#url === undefined) {
      throw new ConfigurationError({ message: 'HTTPAgentServer.url is known once listen() has resolved' });
    }
    return this.#url;
  }

  /** How many agent calls are running now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * What `listen()` recovered: the durable calls a process left unfinished, each finished into its run's log
   * (see `runs.recover`); `[]` before `listen()` and for an agent without `durable`.
   */
  get recovery(): Promise<RecoveredRun[]> {
    return this.#recovery ?? Promise.resolve([]);
  }

  /**
   * A token that acts for one session only (this server's `token` signs it; changing the token revokes it): its
   * bearer may call the agent on that session, read its memory, and start, read, follow and cancel its runs;
   * every other session and route is refused (403). For a browser or a user who should see their own
   * conversation. `ttlMs` bounds its life.
   */
  sessionToken(sessionId: SessionId, options: { ttlMs?: number | undefined } = {}): string {
    if (this.#token === undefined) {
      throw new ConfigurationError({ message: 'HTTPAgentServer.sessionToken needs a server with a token' });
    }
    const { ttlMs } = options;
    if (ttlMs !== undefined && !(Number.isSafeInteger(ttlMs) && ttlMs > 0)) {
      throw new ConfigurationError({
        message: 'HTTPAgentServer.sessionToken: ttlMs must be a positive integer',
      });
    }
    return mintSessionToken(
      sessionTokenKey(this.#token),
      String(sessionId),
      ttlMs === undefined ? undefined : Date.now() + ttlMs,
    );
  }

  /** Starts listening; resolves to the base URL. Calling it again returns the same promise. */
  listen(): Promise<string> {
    if (this.#closing)
      return Promise.reject(new ConfigurationError({ message: 'HTTPAgentServer is closed' }));
    this.#listening ??= this.#start();
    return this.#listening;
  }

  /**
   * Stops accepting connections, waits for the calls in flight (streams included) to finish and be answered,
   * and closes every connection once it has nothing left to answer (at once the idle ones and those that never
   * sent a request), so no client holds the close open. With `timeout`, calls still running after that many ms
   * are aborted (each takes its turn back) and their connections closed. Idempotent: later calls return the
   * first call's promise.
   */
  close(options: { timeout?: number | undefined } = {}): Promise<void> {
    this.#closing ??= this.#stop(options.timeout);
    return this.#closing;
  }

  async #start(): Promise<string> {
    const createFastify = await loadFastify();
    const protocols = await loadProtocols(this.#protocols);
    const app = createFastify({
      logger: false,
      http: {
        headersTimeout: this.#headersTimeout,
        requestTimeout: this.#requestTimeout,
        // How often Node checks those two deadlines (its default, 30 s, would let them slip by that much).
        connectionsCheckingInterval: Math.min(1_000, this.#headersTimeout, this.#requestTimeout),
      },
      bodyLimit: this.#bodyLimit,
      // Percent-encoding can make each character of a session id up to 12 bytes of the path.
      routerOptions: { maxParamLength: MAX_SESSION_ID_LENGTH * 12 },
      frameworkErrors: (error: unknown, _request: FastifyRequest, reply: FastifyReply) => {
        const status = (error as { statusCode?: unknown }).statusCode;
        const code = (error as { code?: unknown }).code;
        reply
          .code(typeof status === 'number' ? status : 400)
          .type(JSON_TYPE)
          .send(errorBody((error as Error).message, typeof code === 'string' ? code : 'BadRequest'));
      },
      clientErrorHandler: answerClientError,
      requestTimeout: this.#requestTimeout,
      keepAliveTimeout: this.#keepAliveTimeout,
      // Keep-alive connections with nothing in flight are closed by close(); busy ones finish their call.
      forceCloseConnections: 'idle',
      return503OnClosing: true,
    });
    this.#routes(app);
    const protocolHost = this.#protocolHost();
    for (const register of protocols) register(app, protocolHost);
    // As Fastify stops listening (no connection arrives after this), every connection is ended once it has
    // nothing left to answer: a client's spare or idle keep-alive connection would otherwise hold the close, and
    // the process, open.
    const connections = new OpenConnections(app.server);
    app.addHook('preClose', (done) => {
      connections.closeAll();
      done();
    });
    this.#app = app;
    app.server.on('connection', (socket: Duplex) => {
      this.#silent.add(socket);
      const heard = () => this.#silent.delete(socket);
      socket.once('data', heard);
      socket.once('close', heard);
    });
    await app.listen({ host: this.host, port: this.#port });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : this.#port;
    const host = this.host.includes(':') ? `[${this.host}]` : this.host;
    this.#url = `http://${host}:${port}`;
    this.#forget = registerSameThreadServer(port, `HTTPAgentServer at ${this.#url}`);
    // Calls a process left unfinished (it was killed) are finished into their runs' logs while the server answers.
    this.#recovery = this.#runs.recover().catch((error: unknown) => {
      this.#onError(error, { route: 'recovery', sessionId: undefined });
      return [];
    });
    return this.#url;
  }

  async #stop(timeout: number | undefined): Promise<void> {
    const app = this.#app;
    if (this.#listening) await this.#listening.catch(() => undefined);
    if (app === undefined || this.#app === undefined) return;
    // Stop accepting; answer the calls in flight; end each connection once it has nothing left to answer.
    const closed = app.close();
    if (this.#inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      if (timeout !== undefined) {
        timer = setTimeout(() => {
          const reason = new Error(`HTTPAgentServer closed with calls still running after ${timeout} ms`);
          for (const controller of this.#calls) controller.abort(reason);
          app.server.closeAllConnections?.();
        }, timeout);
      }
      await new Promise<void>((resolve) => (this.#drained = resolve));
      clearTimeout(timer);
    }
    // Runs started here end (or, past the timeout, are cancelled) before the process goes; then the streams of
    // run logs end, and the connections that hold nothing close (idle ones, and those of clients that opened one
    // and never sent a request: HTTP clients open spare ones).
    await this.#runs.settle(timeout);
    await this.#runs.endRelays();
    app.server.closeIdleConnections?.();
    for (const socket of this.#silent) socket.destroy();
    await closed;
    this.#forget?.();
    this.#forget = undefined;
  }

  #routes(app: Fastify): void {
    this.#setup?.(app);
    // Bodies are JSON, and only JSON: a web page can send text/plain, form or typeless bodies to any site
    // without asking first (no CORS preflight), but not application/json.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      const text = body as string;
      if (text.length === 0) {
        done(null, undefined);
        return;
      }
      try {
        done(null, JSON.parse(text));
      } catch (error) {
        done(
          Object.assign(new Error(`malformed JSON: ${(error as Error).message}`), {
            statusCode: 400,
            code: 'MalformedJSON',
          }),
          undefined,
        );
      }
    });

    const guard = this.#guard;
    app.addHook('onRequest', (request, reply, done) => {
      const origin = request.headers.origin;
      const refusal = guard.check(request.headers.host, origin);
      if (refusal !== undefined) {
        refuse(reply, refusal);
        return;
      }
      if (origin !== undefined) {
        // An allowed page: CORS headers on the answer (set on the raw response, so streams carry them too).
        reply.raw.setHeader('access-control-allow-origin', origin);
        reply.raw.setHeader('vary', 'Origin');
        reply.raw.setHeader('access-control-expose-headers', 'idempotency-key, lagent-ignored-options');
        if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
          reply
            .code(204)
            .header('access-control-allow-methods', 'GET, POST')
            .header(
              'access-control-allow-headers',
              'authorization, content-type, idempotency-key, last-event-id, x-session-id, a2a-version, a2a-extensions',
            )
            .header('access-control-max-age', '600')
            .send();
          return;
        }
      }
      done();
    });

    if (this.#token !== undefined) {
      const expected = this.#token;
      const sessionKey = sessionTokenKey(expected);
      app.addHook('onRequest', (request, reply, done) => {
        const config = request.routeOptions.config as
          | { public?: unknown; sessionScoped?: unknown }
          | undefined;
        if (
          request.url.split('?', 1)[0] === '/health_check' ||
          config?.public === true ||
          bearerMatches(request.headers.authorization, expected)
        ) {
          done();
          return;
        }
        // A session token: its session's routes only (each checks the session).
        const session = sessionOfToken(sessionKey, request.headers.authorization);
        if (session !== undefined) {
          if (config?.sessionScoped === true) {
            scopeRequest(request.raw, session);
            done();
            return;
          }
          reply
            .code(403)
            .type(JSON_TYPE)
            .send(errorBody('this token is for one session, and this route is not', 'Forbidden'));
          return;
        }
        reply
          .code(401)
          .header('www-authenticate', 'Bearer')
          .type(JSON_TYPE)
          .send(errorBody('a valid bearer token is required', 'Unauthorized'));
      });
    }

    const resourceOf = this.#resourceOf;
    if (resourceOf !== undefined) {
      // After the token check and the body: the application's own check of who calls.
      app.addHook('preHandler', async (request, reply) => {
        if (request.method !== 'POST') return;
        let resourceId: string | undefined;
        try {
          resourceId = await resourceOf(request);
        } catch (error) {
          const detail = this.#exposeErrors ? errorMessage(error) : 'Unauthorized';
          return reply.code(401).type(JSON_TYPE).send(errorBody(detail, 'Unauthorized'));
        }
        if (resourceId === undefined) return;
        if (typeof resourceId !== 'string' || resourceId === '' || resourceId.length > 1_024) {
          this.#onError(
            new ConfigurationError({
              message: `HTTPAgentServer: resourceId must give a string of 1 to 1,024 characters or undefined, got ${typeof resourceId === 'string' ? `${resourceId.length} characters` : typeof resourceId}`,
            }),
            { route: request.url.split('?', 1)[0]!, sessionId: undefined },
          );
          return reply
            .code(500)
            .type(JSON_TYPE)
            .send(errorBody('Internal Server Error', 'ConfigurationError'));
        }
        setRequestResource(request.raw, resourceId);
      });
    }

    app.setErrorHandler((error: unknown, request, reply) => {
      const status = (error as { statusCode?: unknown }).statusCode;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        const code = (error as { code?: unknown }).code;
        const detail =
          status === 413
            ? `the body is larger than the limit of ${this.#bodyLimit} bytes`
            : status === 415
              ? `the body must be JSON sent as Content-Type: application/json, got ${JSON.stringify(request.headers['content-type'] ?? 'none')}`
              : (error as Error).message;
        reply
          .code(status)
          .type(JSON_TYPE)
          .send(errorBody(detail, typeof code === 'string' ? code : errorName(error)));
        return;
      }
      reply
        .code(500)
        .type(JSON_TYPE)
        .send(errorBody('Internal Server Error', errorName(error)));
    });
    app.setNotFoundHandler((_request, reply) => {
      reply.code(404).type(JSON_TYPE).send(errorBody('Not Found', 'NotFound'));
    });

    app.get('/health_check', (_request, reply) => {
      reply.type(JSON_TYPE).send(JSON.stringify({ status: 'success', timestamp: Date.now() / 1000 }));
    });

    app.get('/memory/:session_id', SESSION_SCOPED, (request, reply) => {
      const { session_id: sessionId } = request.params as { session_id: string };
      try {
        checkSessionId(sessionId);
      } catch (error) {
        badRequest(reply, error);
        return;
      }
      if (!inScope(request, reply, sessionId)) return;
      let dict: LagentStateDict | Promise<LagentStateDict>;
      try {
        dict = this.#stateOf(sessionId);
      } catch (error) {
        this.#onError(error, { route: '/memory', sessionId });
        this.#fail(reply, error);
        return;
      }
      Promise.resolve(dict).then(
        (value) => reply.type(JSON_TYPE).send(JSON.stringify(value)),
        (error: unknown) => {
          this.#onError(error, { route: '/memory', sessionId });
          this.#fail(reply, error);
        },
      );
      return reply;
    });

    app.post('/chat_completion', SESSION_SCOPED, (request, reply) => this.#chat(request, reply));
    app.post('/chat_completion/stream', SESSION_SCOPED, (request, reply) => this.#stream(request, reply));
    registerRunRoutes(app, {
      runs: this.#runs,
      read: (request, reply) => this.#read(request, reply),
      inputs: (parsed) => this.#inputs(parsed),
      fail: (reply, error) => this.#fail(reply, error),
      onError: this.#onError,
    });
  }

  /** A session's state dict in Lagent's shape; a stored session is read from the store (what was committed). */
  #stateOf(sessionId: SessionId): LagentStateDict | Promise<LagentStateDict> {
    const binding = sessionBindingOf(this.agent);
    return binding !== undefined
      ? binding.storedState(this.agent as unknown as AgentBase, sessionId)
      : this.agent.stateDict(sessionId, { format: 'lagent' });
  }

  /** What the protocols' routes use of this server (see `protocols/run.ts`). */
  #protocolHost(): ProtocolHost {
    return {
      agent: this.agent,
      callers: this.#callers,
      exposeErrors: this.#exposeErrors,
      hasToken: this.#token !== undefined,
      runs: this.#runs,
      abortOnDisconnect: this.#abortOnDisconnectOption,
      begin: (controller, sessionId) => this.#begin(controller, sessionId),
      onError: (error, context) => this.#onError(error, context),
      stateOf: async (sessionId) => this.#stateOf(sessionId),
    };
  }

  /** Answers a failed call with 500 (the error's message in `detail` only with `exposeErrors`). */
  #fail(reply: FastifyReply, error: unknown): void {
    // A budget passed or a guardrail tripped is the caller's to know: their fields go back (422).
    const refusal = refusalBody(error);
    if (refusal !== undefined) {
      reply.code(422).type(JSON_TYPE).send(JSON.stringify(refusal));
      return;
    }
    // A call id (Idempotency-Key) reused for another session or input: well formed, but refused (422).
    if (isCallIdRefusal(error)) {
      reply
        .code(422)
        .type(JSON_TYPE)
        .send(errorBody(errorMessage(error), errorName(error)));
      return;
    }
    // The caller's own input refused by the agent (a malformed resume, a decision for nothing that waits): 400.
    if (error instanceof ValidationError) {
      badRequest(reply, error);
      return;
    }
    const name = errorName(error);
    const message = errorMessage(error);
    const detail = this.#exposeErrors ? message : 'Internal Server Error';
    reply.code(500).type(JSON_TYPE).send(errorBody(detail, name));
  }

  #begin(controller: AbortController, sessionId: SessionId): () => void {
    this.#inFlight++;
    this.#calls.add(controller);
    const session = this.#sessions?.begin(sessionId);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      session?.();
      this.#inFlight--;
      this.#calls.delete(controller);
      if (this.#inFlight === 0 && this.#drained) {
        const drained = this.#drained;
        this.#drained = undefined;
        drained();
      }
    };
  }

  /**
   * Reads a chat request: the body through the caller policy, the `Idempotency-Key` header into `callId`. Sets
   * the answer's headers that say what was taken; answers and gives undefined when the request is refused.
   */
  #read(request: FastifyRequest, reply: FastifyReply): ChatRequest | undefined {
    let parsed: ChatRequest;
    try {
      parsed = readChatRequest(request.body, this.#callers);
      const header = request.headers['idempotency-key'];
      if (header !== undefined) {
        const key = checkCallId('Idempotency-Key', Array.isArray(header) ? header.join(',') : header);
        if (parsed.options.callId !== undefined && parsed.options.callId !== key) {
          throw new ValidationError({
            field: 'call_id',
            message: 'the Idempotency-Key header and "call_id" name different calls; give one of them',
          });
        }
        parsed.options.callId = key;
      }
    } catch (error) {
      if (isUnprocessable(error)) {
        reply
          .code(422)
          .type(JSON_TYPE)
          .send(errorBody(errorMessage(error), errorName(error)));
      } else badRequest(reply, error);
      return undefined;
    }
    if (!inScope(request, reply, String(parsed.sessionId))) return undefined;
    const callId = parsed.options.callId as string | undefined;
    if (callId !== undefined && !replaysCalls(this.agent)) {
      const error = callIdNotHonoured();
      reply.code(422).type(JSON_TYPE).send(errorBody(error.message, error.name));
      return undefined;
    }
    // Set on the raw response: a stream's headers carry them too.
    if (callId !== undefined) reply.raw.setHeader('idempotency-key', callId);
    if (parsed.ignored.length > 0) reply.raw.setHeader('lagent-ignored-options', headerList(parsed.ignored));
    withRequestResource(parsed.options, request.raw);
    return parsed;
  }

  /**
   * The request's messages as the agent takes them: this copy's messages for an agent of lagent-ts, their JSON
   * for any other (an agent of another copy of lagent-ts, whose `AgentMessage.from` takes plain objects).
   */
  #inputs(parsed: ChatRequest): MessageInput[] {
    if (this.agent instanceof AgentBase) return parsed.messages;
    return parsed.messages.map((message) => message.toJSON() as MessageInput);
  }

  async #chat(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const parsed = this.#read(request, reply);
    if (parsed === undefined) return;
    const controller = new AbortController();
    const end = this.#begin(controller, parsed.sessionId);
    const onClose = () => {
      if (!reply.raw.writableFinished && this.#abortOnDisconnect) {
        controller.abort(new Error('the client closed the connection'));
      }
    };
    reply.raw.once('close', onClose);
    try {
      const options = { ...parsed.options, sessionId: parsed.sessionId, signal: controller.signal };
      const json = toWire(await finalReply(this.agent.call(this.#inputs(parsed), options)));
      reply.type(JSON_TYPE).send(JSON.stringify(json));
    } catch (error) {
      if (controller.signal.aborted)
        reply.hijack(); // the client is gone: nobody to answer
      else {
        this.#onError(error, { route: '/chat_completion', sessionId: parsed.sessionId });
        this.#fail(reply, error);
      }
    } finally {
      reply.raw.off('close', onClose);
      end();
    }
  }

  async #stream(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const parsed = this.#read(request, reply);
    if (parsed === undefined) return;
    const controller = new AbortController();
    const end = this.#begin(controller, parsed.sessionId);
    const raw = reply.raw;
    const writer = new SSEWriter(raw, this.#streamContent);
    let gone = false;
    const onClose = () => {
      if (!raw.writableFinished) {
        gone = true;
        if (this.#abortOnDisconnect) controller.abort(new Error('the client closed the connection'));
      }
    };
    raw.once('close', onClose);
    // Headers go out with the first event, so a call that fails before it is still a plain 500.
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      reply.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
    };
    const send = (event: string, data: unknown) => {
      if (gone) return;
      start();
      writer.event(event, data);
    };
    try {
      const options = { ...parsed.options, sessionId: parsed.sessionId, signal: controller.signal };
      let result = this.agent.call(this.#inputs(parsed), options);
      if (isThenable(result)) result = await result;
      if (isAsyncIterator(result) || (isIterator(result) && !(result instanceof AgentMessage))) {
        const onChunk = (chunk: unknown) => {
          // A call that outlives its client is pulled to its end, its chunks sent to nobody.
          if (gone) return !this.#abortOnDisconnect;
          start();
          writer.chunk(
            typeof chunk === 'string'
              ? new AgentMessage({ sender: 'assistant', content: chunk })
              : (asOwnMessage(chunk) ?? chunk),
          );
          return true;
        };
        // An async stream is pulled only while the client takes what was sent (the response's buffer drains),
        // so a client that stops reading stops the agent rather than filling the server's memory. A sync
        // agent's stream is pulled without yielding to the event loop, so nothing else runs on its session
        // meanwhile (a sync call cannot wait for another); it is written whole, a reply's text once.
        result = isAsyncIterator(result)
          ? await relay(result, onChunk, () => writer.drained())
          : relaySync(result as Iterator<unknown>, onChunk);
      }
      if (!gone) {
        send(SSE_EVENTS.message, toWire(result));
        raw.end();
      }
    } catch (error) {
      if (gone) {
        if (!started) reply.hijack();
      } else {
        this.#onError(error, { route: '/chat_completion/stream', sessionId: parsed.sessionId });
        if (started) {
          const name = errorName(error);
          const detail =
            this.#exposeErrors && error instanceof Error ? error.message : 'Internal Server Error';
          send(SSE_EVENTS.error, refusalBody(error) ?? ({ detail, error: name } satisfies HTTPErrorBody));
          raw.end();
        } else {
          this.#fail(reply, error);
        }
      }
    } finally {
      raw.off('close', onClose);
      end();
    }
  }
}

/**
 * Sends a stream's chunks (messages with `streamState` STREAM_ING) as they come, through `onChunk` (which answers
 * false when the client is gone). Another item is held back as the final message, because a streaming agent
 * yields its final message and also returns it; it goes out as a chunk only if something follows it.
 */
class Relay {
  #held: unknown;
  #hasHeld = false;
  constructor(readonly onChunk: (chunk: unknown) => boolean) {}

  /** Takes one item; false when the client is gone. */
  take(item: unknown): boolean {
    if (this.#hasHeld) {
      this.#hasHeld = false;
      if (!this.onChunk(this.#held)) return false;
    }
    if (isChunk(item)) return this.onChunk(item);
    this.#held = item;
    this.#hasHeld = true;
    return true;
  }

  /** The final message of a stream that returned `value`. */
  finish(value: unknown, last: unknown): unknown {
    if (value === undefined || value === null) return last;
    if (this.#hasHeld && this.#held !== value) this.onChunk(this.#held);
    return value;
  }
}

const GONE = 'the client closed the connection';

/**
 * Pulls an async stream to its end through a {@link Relay}, waiting on `drained` after each item before it
 * pulls the next; returns the final message.
 */
async function relay(
  stream: AsyncIterator<unknown>,
  onChunk: (chunk: unknown) => boolean,
  drained: () => Promise<void>,
): Promise<unknown> {
  const relayed = new Relay(onChunk);
  let last: unknown;
  for (;;) {
    const step = await stream.next();
    if (step.done) return relayed.finish(step.value, last);
    last = step.value;
    if (!relayed.take(step.value)) {
      await stream.return?.(undefined);
      throw new Error(GONE);
    }
    await drained();
  }
}

/** {@link relay} for a sync stream, pulled without yielding to the event loop. */
function relaySync(stream: Iterator<unknown>, onChunk: (chunk: unknown) => boolean): unknown {
  const relayed = new Relay(onChunk);
  let last: unknown;
  for (;;) {
    const step = stream.next();
    if (step.done) return relayed.finish(step.value, last);
    last = step.value;
    if (!relayed.take(step.value)) {
      stream.return?.(undefined);
      throw new Error(GONE);
    }
  }
}

/** A streamed chunk rather than a final message. */
function isChunk(value: unknown): boolean {
  return asOwnMessage(value)?.streamState === AgentStatusCode.STREAM_ING;
}

/** A call's result in its wire form. */
function toWire(result: unknown): unknown {
  // A message of this copy, or of another copy of lagent-ts (an agent module with its own).
  const message = asOwnMessage(result);
  if (message !== undefined) return message.toJSON({ format: 'lagent' });
  if (typeof result === 'string')
    return new AgentMessage({ sender: 'assistant', content: result }).toJSON({ format: 'lagent' });
  return result;
}

/** A call refused for its id (reused with another session or input): the caller's to fix, 422. */
function isCallIdRefusal(error: unknown): boolean {
  return error instanceof ValidationError && error.field === 'callId';
}

/** Keys for a header: those that are plain names, at most 20, then how many more. */
function headerList(keys: readonly string[]): string {
  const shown = keys.filter((key) => /^[\w.-]{1,64}$/.test(key)).slice(0, 20);
  const more = keys.length - shown.length;
  return more > 0 ? [...shown, `(${more} more)`].join(', ') : shown.join(', ');
}

function errorBody(detail: string, error: string): string {
  const body: HTTPErrorBody = { detail, error };
  return JSON.stringify(body);
}

function refuse(reply: FastifyReply, refusal: Refusal): void {
  reply.code(refusal.status).type(JSON_TYPE).send(errorBody(refusal.detail, refusal.code));
}

/**
 * Answers a request Node could not parse or that was too slow (before Fastify sees it), with the same
 * `{ detail, error }` body as every other error answer: 408 for a client too slow to send its request, 431
 * for headers over Node's limit, else 400.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'the request did not arrive in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'the request line and headers are larger than the server accepts']
        : [400, `the request is not valid HTTP (${error.code ?? 'parse error'})`];
  const body = errorBody(detail, error.code ?? 'BadRequest');
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: ${JSON_TYPE}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** The options of a route that takes session tokens (each checks that the session is the token's). */
const SESSION_SCOPED = { config: { sessionScoped: true } };

/** False (and answered 403) when the request's token is for another session than `sessionId`. */
function inScope(request: FastifyRequest, reply: FastifyReply, sessionId: string): boolean {
  const scope = requestScope(request.raw);
  if (scope === undefined || scope === sessionId) return true;
  reply.code(403).type(JSON_TYPE).send(errorBody(OTHER_SESSION, 'Forbidden'));
  return false;
}

/** True for an agent whose own calls are durable: a call outlives its client by default. */
function isDurable(agent: object): boolean {
  return (agent as { [DURABLE]?: unknown })[DURABLE] !== undefined;
}

function badRequest(reply: FastifyReply, error: unknown): void {
  const detail = errorMessage(error);
  const name =
    error instanceof ValidationError || LagentError.isInstance(error) ? errorName(error) : 'BadRequest';
  reply.code(400).type(JSON_TYPE).send(errorBody(detail, name));
}
