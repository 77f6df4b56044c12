import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentBase } from '../agents/agent-base';
import type { MemoryStoreOptions } from '../agents/interceptors/session-store/persist';
import { TOOL_TURNS } from '../agents/pending-interrupts';
import type { CallerOptionsPolicy } from '../distributed/caller-options';
import type { HTTPAgentServer, ServedAgent } from '../distributed/http/server';
import { ConfigurationError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import type { SessionStore } from '../stores/types';
import { errorMessage } from '../utils/text';
import { readAssets, type UIAssets } from './assets';
import { EventRelay, EventStreams } from './event-relay';
import { changeSession } from './stored-session';

/** Options of {@link UIServer}. */
export interface UIServerOptions {
  /** The agent the page drives. */
  agent: ServedAgent;
  /** The address to bind. @default '127.0.0.1' */
  host?: string | undefined;
  /** The port; `0` picks a free one. @default 0 */
  port?: number | undefined;
  /**
   * The page's secret: every request but those of the page's own files (which hold nothing) needs it as
   * `Authorization: Bearer <token>`, else 401. The page gets it from {@link UIServer.pageUrl}'s fragment.
   * @default a new random secret at every start (read it from `pageUrl` or `token`)
   */
  token?: string | undefined;
  /** What the page's requests may set on a call besides the session (HTTPAgentServer's `callerOptions`). */
  callerOptions?: CallerOptionsPolicy | undefined;
  /** Keep every session in this store (HTTPAgentServer's `store`). */
  store?: SessionStore | MemoryStoreOptions | undefined;
  /** More names the `Host` header may carry (HTTPAgentServer's `allowedHosts`). */
  allowedHosts?: readonly string[] | undefined;
  /** Where the built page is. @default the package's `dist/ui/` */
  assetsDir?: string | undefined;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** What the page may load and reach: only this server; it may not be framed. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** `http://host:port` of a `Host` header, lower-cased, as a browser writes a page's `Origin`. */
function ownOrigin(host: string | undefined): string | undefined {
  if (!host) return undefined;
  try {
    return new URL(`http://${host}`).origin;
  } catch {
    return undefined;
  }
}

function canonicalOrigin(value: string): string | undefined {
  try {
    return new URL(value).origin;
  } catch {
    return undefined;
  }
}

function sendJSON(reply: FastifyReply, value: unknown, status = 200): void {
  reply.code(status).type(JSON_TYPE).send(JSON.stringify(value));
}

function sendError(reply: FastifyReply, status: number, error: unknown, code: string): void {
  sendJSON(reply, { detail: errorMessage(error), error: code }, status);
}

/**
 * `lagent ui`'s server: an {@link HTTPAgentServer} (its chat, stream and memory routes, its `Host`, `Origin`
 * and token checks) with the page and the routes it needs:
 *
 * - `GET /`, `/ui/app.js`, `/ui/app.css`: the page (built into `dist/ui/`, so nothing is fetched from the network);
 * - `GET /ui/info`: the agent's name and tree (every agent's path, name and class), and `transcript`: the
 *   state-dict key of the memory that holds the conversation with its tool turns (a prebuilt loop's sub-agent);
 * - `GET /ui/sessions`: the sessions any agent of the tree has in memory;
 * - `GET /ui/sessions/:id/interrupts`: what the session waits for (`pendingInterrupts`), so a page reloaded,
 *   switched back or opened in another tab shows the approvals still open;
 * - `POST /ui/sessions/:id/reset`: clears a session in every agent of the tree;
 * - `PUT /ui/state/:id`: loads a state dict (either shape) into a session (`GET /memory/:id` downloads one);
 * - `GET /ui/events`: server-sent events, one `agent` event per event of the tree (`UIEvent`): the recent
 *   ones first, then each as it happens.
 *
 * The page's own requests carry its origin, which is accepted (a page of any other origin is refused). Every
 * route that reads or changes anything needs the server's secret ({@link token}: given, or made at start) as an
 * `Authorization: Bearer` header; the page's own files (`/`, `/ui/app.js`, `/ui/app.css`) hold nothing and load
 * without it. The page opened at {@link pageUrl} takes the secret from the address's fragment (which no request
 * carries) into its tab's `sessionStorage`, cleans the address, and sends the secret with each of its requests
 * and on its event stream. No cookie: a browser sends a cookie of 127.0.0.1 to every local port, so any other
 * local server would receive it.
 */
export class UIServer {
  readonly agent: ServedAgent;
  readonly #token: string;
  readonly #assets: UIAssets;
  readonly #relay: EventRelay | undefined;
  readonly #streams: EventStreams;
  readonly #options: UIServerOptions;
  #server: HTTPAgentServer | undefined;
  #url: string | undefined;

  constructor(options: UIServerOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new ConfigurationError({ message: 'UIServer expects an options object ({ agent, port, ... })' });
    }
    this.agent = options.agent;
    if (options.token !== undefined && (typeof options.token !== 'string' || options.token === '')) {
      throw new ConfigurationError({ message: 'UIServer: token must be a non-empty string' });
    }
    // 256 random bits: the page approves tool calls, so no local process may guess its way in.
    this.#token = options.token ?? randomBytes(32).toString('base64url');
    this.#options = options;
    this.#assets = readAssets(options.assetsDir);
    this.#relay = options.agent instanceof AgentBase ? new EventRelay(options.agent) : undefined;
    this.#streams = new EventStreams(this.#relay);
  }

  /** The server's base URL, once `listen()` resolved. */
  get url(): string {
    if (this.#url === undefined) {
      throw new ConfigurationError({ message: 'UIServer.url is known once listen() has resolved' });
    }
    return this.#url;
  }

  /** The page's secret (the `token` option, or the one made at start). */
  get token(): string {
    return this.#token;
  }

  /**
   * The URL to open in a browser: the base URL with the secret in its fragment (`/#token=...`), which the
   * browser never sends in a request; the page moves it to its tab's storage and cleans the address.
   */
  get pageUrl(): string {
    return `${this.url}/#token=${encodeURIComponent(this.#token)}`;
  }

  /** Starts listening; resolves to the base URL. */
  async listen(): Promise<string> {
    if (this.#server === undefined) {
      const { HTTPAgentServer } = await import('../distributed/http/server');
      this.#server = new HTTPAgentServer({
        agent: this.agent,
        host: this.#options.host ?? '127.0.0.1',
        port: this.#options.port ?? 0,
        token: this.#token,
        store: this.#options.store,
        allowedHosts: this.#options.allowedHosts,
        callerOptions: this.#options.callerOptions,
        // The page shows why a call failed; the server is the user's own.
        exposeErrors: true,
        bodyLimit: 16 * 1024 * 1024,
        setup: (app) => this.#setup(app),
      });
    }
    this.#url = await this.#server.listen();
    return this.#url;
  }

  /** Ends the event streams, then closes the server (calls in flight finish first). */
  async close(): Promise<void> {
    this.#streams.close();
    this.#relay?.close();
    await this.#server?.close();
  }

  #setup(app: FastifyInstance): void {
    app.addHook('onRequest', (request, _reply, done) => {
      // The page's own requests: a browser sends its origin with them (POSTs always), and the origin is that of
      // the `Host` the server was reached by, which the server's own check then vouches for.
      const origin = request.headers.origin;
      if (origin !== undefined && canonicalOrigin(origin) === ownOrigin(request.headers.host)) {
        delete request.headers.origin;
      }
      done();
    });

    // The page's own files: the package's, the same for everyone, holding nothing of the agent. They load without
    // the secret (a `<script src>` cannot carry a header, and a reload must find the page), which the page then
    // sends with every request that reads or changes anything.
    const open = { config: { public: true } };
    app.get('/', open, (_request, reply) => {
      reply.headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(this.#assets.html);
    });
    app.get('/ui/app.js', open, (_request, reply) => {
      reply.headers(PAGE_HEADERS).type('text/javascript; charset=utf-8').send(this.#assets.js);
    });
    app.get('/ui/app.css', open, (_request, reply) => {
      reply.headers(PAGE_HEADERS).type('text/css; charset=utf-8').send(this.#assets.css);
    });
    app.get('/favicon.ico', open, (_request, reply) => {
      reply.code(204).send();
    });

    app.get('/ui/info', (_request, reply) => {
      sendJSON(reply, this.#info());
    });
    app.get('/ui/sessions', (_request, reply) => {
      sendJSON(reply, { sessions: this.#sessions() });
    });
    app.get('/ui/sessions/:id/interrupts', async (request, reply) => {
      const id = (request.params as { id: string }).id;
      try {
        const interrupts = this.agent instanceof AgentBase ? await this.agent.pendingInterrupts(id) : [];
        sendJSON(reply, { sessionId: id, interrupts });
      } catch (error) {
        sendError(reply, 500, error, (error as Error)?.name ?? 'Error');
      }
    });
    app.post('/ui/sessions/:id/reset', (request, reply) => {
      const id = (request.params as { id: string }).id;
      const agent = this.agent as { reset?: (id: SessionId, options?: object) => unknown };
      if (typeof agent.reset !== 'function') {
        sendError(reply, 501, 'this agent has no reset()', 'NotImplemented');
        return;
      }
      return this.#change(reply, id, () => agent.reset!(id, { recursive: true }), { reset: true });
    });
    app.put('/ui/state/:id', (request, reply) => this.#load(request, reply));
    app.get('/ui/events', (_request, reply) => this.#events(reply));
  }

  #info(): unknown {
    const agent = this.agent;
    const tree =
      agent instanceof AgentBase
        ? Array.from(agent.namedAgents(), ([prefix, node]) => ({
            path: prefix === '' ? '' : prefix.slice(0, -1),
            name: node.name,
            className: node.constructor.name,
          }))
        : [{ path: '', name: agent.name ?? 'agent', className: agent.constructor.name }];
    return {
      name: agent.name ?? 'agent',
      className: agent.constructor.name,
      tree,
      transcript: this.#transcriptKey(),
      events: this.#relay !== undefined,
    };
  }

  /** The memory the page shows as the conversation: a prebuilt loop's tool turns, else the root's. */
  #transcriptKey(): string {
    const agent = this.agent;
    if (!(agent instanceof AgentBase)) return 'memory';
    const turns = (agent as unknown as { [TOOL_TURNS]?: unknown })[TOOL_TURNS];
    if (turns === undefined) return 'memory';
    for (const [prefix, node] of agent.namedAgents())
      if (node === turns && prefix !== '') return `${prefix}memory`;
    return 'memory';
  }

  #sessions(): SessionId[] {
    const seen = new Map<string, SessionId>();
    if (this.agent instanceof AgentBase) {
      for (const [, node] of this.agent.namedAgents()) {
        for (const id of node.memory?.sessions() ?? []) seen.set(String(id), id);
      }
    }
    return [...seen.values()];
  }

  #load(request: FastifyRequest, reply: FastifyReply): Promise<void> | undefined {
    const id = (request.params as { id: string }).id;
    const agent = this.agent as { loadStateDict?: (dict: unknown, id: SessionId) => unknown };
    if (typeof agent.loadStateDict !== 'function') {
      sendError(reply, 501, 'this agent has no loadStateDict()', 'NotImplemented');
      return;
    }
    const body = request.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      sendError(reply, 400, 'the body must be a state dict: a JSON object of memories', 'BadRequest');
      return;
    }
    return this.#change(reply, id, () => agent.loadStateDict!(body, id), { loaded: true });
  }

  /** Runs a change of a session's memories (committed to the agent's store when it has one) and answers. */
  async #change(
    reply: FastifyReply,
    id: SessionId,
    change: () => unknown,
    answer: Record<string, unknown>,
  ): Promise<void> {
    try {
      if (this.agent instanceof AgentBase) await changeSession(this.agent, id, change);
      else await change();
      sendJSON(reply, { sessionId: id, ...answer });
    } catch (error) {
      sendError(reply, 400, error, (error as Error)?.name ?? 'Error');
    }
  }

  #events(reply: FastifyReply): void {
    reply.hijack();
    this.#streams.open(reply.raw);
  }
}
