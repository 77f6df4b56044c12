import type { LagentStateDict } from '../../agents/state-dict';
import { locateBridge } from '../../bridge/location';
import { sameThreadServerHint } from '../../bridge/same-thread';
import { SyncBridge } from '../../bridge/sync-bridge';
import { AgentMessage, type LagentMessageJSON, type MessageInput } from '../../schema/agent-message';
import { ConfigurationError, LagentError, TimeoutError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { beginRemote, remoteRefusal } from '../remote-budget';
import {
  approveChecks,
  checkRemoteCalls,
  checksAsked,
  toolGuardsHere,
  withToolChecks,
} from '../remote-guards';
import { REMOTE_AGENT, remoteInput, remotePlace, throwIfInterrupted } from '../remote-interrupts';
import {
  AsyncHTTPAgentClient,
  type HTTPAgentClientOptions,
  type RemoteCallOptions,
  type RemoteReadOptions,
} from './async-client';
import { HTTPAgentError } from './errors';
import { messageToWire } from './protocol';

/** Milliseconds a bridged call may block beyond the client's own deadline. */
const BRIDGE_MARGIN_MS = 5_000;

/** The call options that cross the bridge: everything but the signal (a blocked thread cannot fire one). */
function bridgeOptions(options: RemoteCallOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(options)) if (key !== 'signal') out[key] = options[key];
  return out;
}

/**
 * Hosts an {@link AsyncHTTPAgentClient} inside the sync bridge's worker for {@link HTTPAgentClient}; not meant
 * to be used directly. Messages cross as Lagent's JSON.
 */
export class HTTPAgentClientHost {
  readonly #client: AsyncHTTPAgentClient;

  constructor(options: HTTPAgentClientOptions) {
    this.#client = new AsyncHTTPAgentClient(options);
  }

  async call(input: unknown[], options: RemoteCallOptions): Promise<LagentMessageJSON> {
    return (await this.#client.call(input as MessageInput[], options)).toJSON({ format: 'lagent' });
  }

  async *stream(
    input: unknown[],
    options: RemoteCallOptions,
  ): AsyncGenerator<LagentMessageJSON, void, undefined> {
    for await (const message of this.#client.stream(input as MessageInput[], options)) {
      yield message.toJSON({ format: 'lagent' });
    }
  }

  stateDict(sessionId: SessionId, options: RemoteReadOptions): Promise<LagentStateDict> {
    return this.#client.stateDict(sessionId, options);
  }

  isAlive(options: RemoteReadOptions): Promise<boolean> {
    return this.#client.isAlive(options);
  }

  close(): void {
    this.#client.close();
  }
}

/**
 * The sync twin of {@link AsyncHTTPAgentClient}, for sync agents and scripts (Lagent's `HTTPAgentClient`): the
 * async client runs in the sync bridge's worker thread, and each call blocks this thread until the server
 * answers. It is usable as a sub-agent of a sync composite (`Agent` subclass) the same way, with the same
 * protocol, pool, deadlines and retries.
 *
 * The server must run in another thread or process: this thread is blocked while it waits, so a server
 * started on it can never answer (a timeout then says so). An `AbortSignal` cannot fire while the thread
 * is blocked; `signal` is checked before the call; use `timeout`.
 *
 * @example
 * const remote = new HTTPAgentClient({ url: 'http://127.0.0.1:8090' });
 * const reply = remote.call('hello', { sessionId: 1 });
 * remote.stateDict(1);
 * remote.close();
 *
 * `C` and `F` say what the served agent's replies hold (`content`, `formatted`); nothing checks them, so they
 * default to `unknown`. For an agent that answers text: `new AsyncHTTPAgentClient<string>({ url })`.
 */
export class HTTPAgentClient<C = unknown, F = unknown> {
  /** A remote agent: a local tree holding it may stop for its questions (see `interruptsOf`). */
  readonly [REMOTE_AGENT] = true as const;
  readonly url: string;
  readonly name: string;
  readonly #bridge: SyncBridge;
  readonly #idleTimeout: number | undefined;

  constructor(options: HTTPAgentClientOptions) {
    // Checks the options here, so a mistake throws on this side rather than from the worker.
    const probe = new AsyncHTTPAgentClient(options);
    probe.close();
    this.url = probe.url;
    this.name = options.name ?? 'HTTPAgentClient';
    const timeout = options.timeout ?? 300_000;
    this.#idleTimeout = options.idleTimeout;
    this.#bridge = new SyncBridge(
      { exportName: 'HTTPAgentClientHost', args: [{ ...options }], module: locateBridge().hosts },
      { timeout: Number.isFinite(timeout) ? timeout + BRIDGE_MARGIN_MS : Number.POSITIVE_INFINITY },
    );
  }

  /**
   * Sends the messages to the remote agent's session and returns its reply, blocking until it comes. A
   * remote interrupt inside a local agent's call is re-rooted as {@link AsyncHTTPAgentClient.call} says.
   */
  call(input?: MessageInput | readonly MessageInput[], options: RemoteCallOptions = {}): AgentMessage<C, F> {
    options.signal?.throwIfAborted();
    const place = remotePlace(this, this.name);
    const sent = remoteInput(place, input);
    const guards = toolGuardsHere();
    const approved = new Set<string>();
    let next: unknown = sent;
    for (;;) {
      // Each request of the call holds what it is sent of the local budget, and is charged what it spent.
      const spend = beginRemote(options, `${this.url}/chat_completion`);
      let reply: AgentMessage<C, F>;
      try {
        const json = this.#run(() =>
          this.#bridge.call<LagentMessageJSON>(
            'call',
            [wire(next as MessageInput), bridgeOptions(withToolChecks(spend.options, guards))],
            this.#callTimeout(options),
          ),
        );
        reply = AgentMessage.from(json) as AgentMessage<C, F>;
      } catch (error) {
        spend.fail();
        throw error;
      }
      spend.settle(reply);
      const asks = guards === undefined ? [] : checksAsked(reply, this.url);
      if (asks.length === 0) return throwIfInterrupted(place, reply);
      next = this.#checked(asks, approved, options);
    }
  }

  /**
   * The remote call stopped before tool calls: the local tool guardrails check them (they must answer at
   * once: this thread cannot wait), and the message that resumes it approving them.
   */
  #checked(
    asks: ReturnType<typeof checksAsked>,
    approved: Set<string>,
    options: RemoteCallOptions,
  ): AgentMessage {
    const pending = checkRemoteCalls(
      toolGuardsHere()!,
      asks,
      this.name,
      options.sessionId ?? 0,
      options.signal,
    );
    if (pending !== undefined) {
      pending.catch(() => {});
      throw new ConfigurationError({
        message: `${this.name}: a tool guardrail's check returned a promise, which a synchronous client cannot wait for; use checks that answer at once, or AsyncHTTPAgentClient`,
      });
    }
    return approveChecks(
      asks,
      approved,
      (message) => new HTTPAgentError({ message: `${this.url}: ${message}`, url: this.url }),
    );
  }

  /** Streams the remote reply: chunks, then the final message (also the return value); each step blocks. */
  *stream(
    input?: MessageInput | readonly MessageInput[],
    options: RemoteCallOptions = {},
  ): Generator<AgentMessage<C, F>, AgentMessage<C, F>, undefined> {
    options.signal?.throwIfAborted();
    const place = remotePlace(this, this.name);
    const sent = remoteInput(place, input);
    const guards = toolGuardsHere();
    const approved = new Set<string>();
    let next: unknown = sent;
    for (;;) {
      const final = yield* this.#streamOnce(next, options, guards);
      const asks = guards === undefined ? [] : checksAsked(final, this.url);
      if (asks.length === 0) return throwIfInterrupted(place, final as AgentMessage<C, F>);
      next = this.#checked(asks, approved, options);
    }
  }

  /**
   * One streamed request: yields its messages and returns the final one. With tool guardrails in force each
   * message is held until the next comes, so a final check interrupt is answered rather than yielded.
   */
  *#streamOnce(
    sent: unknown,
    options: RemoteCallOptions,
    guards: ReturnType<typeof toolGuardsHere>,
  ): Generator<AgentMessage<C, F>, AgentMessage, undefined> {
    let final: AgentMessage | undefined;
    let previous = '';
    // Each step waits for one event: up to the timeout for the first, the idle timeout for the others.
    const idle = options.idleTimeout ?? this.#idleTimeout;
    const wait = Math.max(options.timeout ?? this.#bridge.timeout - BRIDGE_MARGIN_MS, idle ?? 0);
    const spend = beginRemote(options, `${this.url}/chat_completion/stream`);
    try {
      const steps = this.#bridge.iterate<LagentMessageJSON>(
        'stream',
        [wire(sent as MessageInput), bridgeOptions(withToolChecks(spend.options, guards))],
        this.#callTimeout({ timeout: wait }),
      );
      for (;;) {
        const step = this.#run(() => steps.next());
        if (step.done) break;
        const message = AgentMessage.from(step.value);
        if (typeof message.content === 'string') {
          message.delta = message.content.startsWith(previous)
            ? message.content.slice(previous.length)
            : message.content;
          previous = message.content;
        }
        if (guards !== undefined && final !== undefined) yield final as AgentMessage<C, F>;
        final = message;
        if (guards === undefined) yield message as AgentMessage<C, F>;
      }
      if (final === undefined)
        throw new HTTPAgentError({ message: `${this.url} streamed nothing`, url: this.url });
      spend.settle(final);
    } finally {
      spend.fail(); // a stream that failed or was left: charged all it was allowed (a no-op once settled)
    }
    if (guards !== undefined && checksAsked(final, this.url).length === 0) yield final as AgentMessage<C, F>;
    return final;
  }

  /** The remote agent's state dict for a session, in Lagent's snake_case shape. */
  stateDict(sessionId: SessionId = 0, options: RemoteReadOptions = {}): LagentStateDict {
    options.signal?.throwIfAborted();
    const { signal: _signal, ...rest } = options;
    return this.#run(() => this.#bridge.call<LagentStateDict>('stateDict', [sessionId, rest]));
  }

  /** Whether the server answers `/health_check` with 200. */
  isAlive(options: RemoteReadOptions = {}): boolean {
    const { signal: _signal, ...rest } = options;
    return this.#bridge.call<boolean>('isAlive', [rest]);
  }

  /** Closes the pooled connections and releases the hosted client; later calls throw. Idempotent. */
  close(): void {
    try {
      this.#bridge.call('close');
    } catch {
      // A worker that is gone holds no connections.
    } finally {
      this.#bridge.close();
    }
  }

  #callTimeout(options: RemoteCallOptions): { timeout?: number } {
    const timeout = options.timeout;
    if (timeout === undefined) return {};
    if (typeof timeout !== 'number' || !(timeout > 0)) {
      throw new ConfigurationError({
        message: `HTTPAgentClient: timeout must be a positive number, got ${String(timeout)}`,
      });
    }
    return { timeout: Number.isFinite(timeout) ? timeout + BRIDGE_MARGIN_MS : Number.POSITIVE_INFINITY };
  }

  /** Runs a bridged call; errors come back as this side's classes, and a timeout says when the server shares this thread. */
  #run<T>(call: () => T): T {
    try {
      return call();
    } catch (error) {
      throw this.#explain(error);
    }
  }

  #explain(error: unknown): unknown {
    const body = (error as { body?: unknown } | null)?.body;
    if (error instanceof Error && error.name === 'HTTPAgentError' && remoteRefusal(body) !== undefined)
      return remoteRefusal(body);
    if (error instanceof Error && error.name === 'HTTPAgentError' && !(error instanceof HTTPAgentError)) {
      const fields = error as unknown as { status?: number; body?: unknown; url?: string };
      return new HTTPAgentError({
        message: error.message,
        status: fields.status,
        body: fields.body,
        url: fields.url,
        cause: error.cause,
      });
    }
    if (error instanceof TimeoutError || (LagentError.isInstance(error) && error.name === 'TimeoutError')) {
      const hint = sameThreadServerHint(this.url, 'HTTPAgentClient');
      if (hint !== undefined) {
        Object.defineProperty(error, 'message', {
          value: `${(error as Error).message}. ${hint}`,
          configurable: true,
          writable: true,
        });
      }
    }
    return error;
  }
}

function wire(input: MessageInput | readonly MessageInput[] | undefined): unknown[] {
  if (input === undefined || input === null) return [];
  return (Array.isArray(input) ? input : [input]).map(messageToWire);
}
