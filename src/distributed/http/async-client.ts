import http from 'node:http';
import https from 'node:https';
import type { LagentStateDict } from '../../agents/state-dict';
import { effectiveSignal } from '../../core/call-context';
import { AgentMessage, type MessageInput } from '../../schema/agent-message';
import { ConfigurationError } from '../../schema/errors';
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
import { HTTPAgentError } from './errors';
import { chatRequestBody, messageToWire, SSE_EVENTS } from './protocol';
import { readEvents } from './sse-reader';
import { exchange, parseAnswer, readText, type Transport } from './transport';

/** Options of {@link AsyncHTTPAgentClient} and {@link HTTPAgentClient}. */
export interface HTTPAgentClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8090`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` (an `HTTPAgentServer` started with `token` needs it). */
  token?: string | undefined;
  /**
   * Milliseconds one call may take, retries included (for `stream()`, until its first event: SSE comments do not
   * count); `Infinity` for none.
   * @default 300_000
   */
  timeout?: number | undefined;
  /**
   * `stream()` only: milliseconds the stream may go without an event between two events (the time your loop
   * spends on an event is not counted; SSE comments, such as keep-alives, do not count as events);
   * `Infinity` for none.
   * @default the `timeout`
   */
  idleTimeout?: number | undefined;
  /**
   * Largest answer read whole (a reply, a state dict), in bytes; for `stream()`, the largest event. A larger
   * one fails the call with an {@link HTTPAgentError} rather than filling this process's memory.
   * @default 67_108_864 (64 MiB)
   */
  maxResponseBytes?: number | undefined;
  /**
   * Attempts after the first when the request cannot have been run: the server could not be reached, answered
   * 503, or closed a kept-alive connection before a POST's bytes went out (for a read, at any time). @default 2
   */
  retries?: number | undefined;
  /** Milliseconds before the first retry, doubling after each. @default 100 */
  retryDelay?: number | undefined;
  /** Connections kept open to the server at most (the keep-alive pool). @default 64 */
  maxSockets?: number | undefined;
  /** A name for messages and trees. @default 'HTTPAgentClient' */
  name?: string | undefined;
}

/** Options of a remote call: the session, an abort signal, a deadline, and keyword arguments for the remote agent. */
export type RemoteCallOptions = {
  sessionId?: SessionId | undefined;
  signal?: AbortSignal | undefined;
  /** Overrides the client's `timeout` for this call. */
  timeout?: number | undefined;
  /** Overrides the client's `idleTimeout` for this call (`stream()` only). */
  idleTimeout?: number | undefined;
} & Record<string, unknown>;

/** Options of a remote read (`stateDict`, `isAlive`). */
export interface RemoteReadOptions {
  signal?: AbortSignal | undefined;
  timeout?: number | undefined;
}

/** Milliseconds a pooled connection may stay idle. */
const IDLE_SOCKET_MS = 4_000;

function checkNumber(name: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value < min) {
    throw new ConfigurationError({
      message: `HTTPAgentClient: ${name} must be a number >= ${min}, got ${String(value)}`,
    });
  }
  return value;
}

/** The inputs of a call in their wire form. */
function wireMessages(input: MessageInput | readonly MessageInput[] | undefined | null): unknown[] {
  if (input === undefined || input === null) return [];
  const list = Array.isArray(input) ? input : [input];
  return list.map(messageToWire);
}

/** A reply from the wire as an {@link AgentMessage}; anything else is an {@link HTTPAgentError}. */
function toMessage(json: unknown, url: string): AgentMessage {
  try {
    return AgentMessage.from(json);
  } catch (error) {
    throw new HTTPAgentError({
      message: `${url} answered something that is not a message: ${(error as Error).message}`,
      url,
      body: json,
      cause: error,
    });
  }
}

/**
 * An agent served over HTTP (by an `HTTPAgentServer`, or Python Lagent's `http_serve` app), called like a
 * local async agent: `call()` posts to `/chat_completion` and resolves to the remote reply as an
 * {@link AgentMessage}, `stream()` reads `/chat_completion/stream`, `stateDict()` reads `/memory/{session_id}`.
 *
 * It is usable as a sub-agent: hold it in a property of a composite agent and call it in `forward`. A call made
 * there inherits the composite call's abort signal, like any sub-call. Its memory lives on the server, so it is
 * not part of the composite's agent tree (`stateDict`, `reset`), and a composite call that fails later cannot take
 * back the turn the server stored: design remote steps to be the last, or to be harmless to repeat.
 *
 * Connections are kept alive in a pool of its own (`close()` ends it). Each call has a deadline (`timeout`, retries
 * included). A request that could not reach the server, or that the server answered 503 (it did not start on
 * it), is retried (`retries`); a POST whose bytes went out on a connection that was then cut is not, since the
 * server may have received it, so a turn is never sent twice (a read is). Answers are read up to
 * `maxResponseBytes`. Every failure is an {@link HTTPAgentError} (an error answer carries the server's `status`
 * and `body`), except deadlines (a `TimeoutError`) and aborts (the signal's reason).
 *
 * @example
 * const remote = new AsyncHTTPAgentClient({ url: 'http://127.0.0.1:8090' });
 * const reply = await remote.call('hello', { sessionId: 1 });
 * const memory = await remote.stateDict(1);
 *
 * `C` and `F` say what the served agent's replies hold (`content`, `formatted`); nothing checks them, so they
 * default to `unknown`. For an agent that answers text: `new AsyncHTTPAgentClient<string>({ url })`.
 */
export class AsyncHTTPAgentClient<C = unknown, F = unknown> {
  /** A remote agent: a local tree holding it may stop for its questions (see `interruptsOf`). */
  readonly [REMOTE_AGENT] = true as const;
  readonly url: string;
  readonly name: string;
  readonly #transport: Transport;
  readonly #idleTimeout: number | undefined;

  constructor(options: HTTPAgentClientOptions) {
    if (typeof options !== 'object' || options === null || typeof options.url !== 'string') {
      throw new ConfigurationError({ message: 'HTTPAgentClient expects { url, token?, timeout? }' });
    }
    let base: URL;
    try {
      base = new URL(options.url);
    } catch (error) {
      throw new ConfigurationError({
        message: `HTTPAgentClient: url ${JSON.stringify(options.url)} is not a URL`,
        cause: error,
      });
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new ConfigurationError({
        message: `HTTPAgentClient: url must be http: or https:, got ${base.protocol}`,
      });
    }
    if (!base.pathname.endsWith('/')) base.pathname = `${base.pathname}/`;
    const timeout = checkNumber('timeout', options.timeout, 300_000, 1);
    const maxSockets = checkNumber('maxSockets', options.maxSockets, 64, 1);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    // A pooled connection idle for IDLE_SOCKET_MS is closed (sooner when the server's Keep-Alive header says
    // so): before the keep-alive timeout of common servers (5 s for uvicorn and Node), so a request rarely
    // goes out on a connection the server is closing, where a POST could not be sent again.
    const poolOptions = { keepAlive: true, maxSockets, scheduling: 'lifo' as const, timeout: IDLE_SOCKET_MS };
    this.url = base.href.replace(/\/$/, '');
    this.name = options.name ?? 'HTTPAgentClient';
    this.#transport = {
      base,
      agent: base.protocol === 'https:' ? new https.Agent(poolOptions) : new http.Agent(poolOptions),
      headers,
      timeout,
      retries: Math.floor(checkNumber('retries', options.retries, 2, 0)),
      retryDelay: checkNumber('retryDelay', options.retryDelay, 100, 0),
      maxResponseBytes: checkNumber('maxResponseBytes', options.maxResponseBytes, 64 * 1024 * 1024, 1),
    };
    this.#idleTimeout =
      options.idleTimeout === undefined ? undefined : checkNumber('idleTimeout', options.idleTimeout, 0, 1);
  }

  /**
   * Sends the messages to the remote agent's session and resolves to its reply. Options other than
   * `sessionId`, `signal` and `timeout` are keyword arguments of the remote call, sent in snake_case.
   *
   * Called inside a local agent's `forward`, a remote interrupt reply stops the local call like a local
   * interrupt: the outermost local call returns it with the client's path in the local tree joined with the
   * remote's (the calling agent's path, then the property holding the client, else its `name`), and resuming
   * that call sends the remote a resume message of its own ids in place of this input.
   */
  async call(
    input?: MessageInput | readonly MessageInput[],
    options: RemoteCallOptions = {},
  ): Promise<AgentMessage<C, F>> {
    const place = remotePlace(this, this.name);
    const sent = remoteInput(place, input);
    const guards = toolGuardsHere();
    const sessionId = options.sessionId ?? 0;
    const approved = new Set<string>();
    let next: unknown = sent;
    for (;;) {
      // Each request of the call holds what it is sent of the local budget, and is charged what it spent.
      const spend = beginRemote(options, `${this.url}/chat_completion`);
      let reply: AgentMessage<C, F>;
      try {
        const body = JSON.stringify(
          chatRequestBody(
            wireMessages(next as MessageInput),
            sessionId,
            withToolChecks(spend.options, guards),
            place !== undefined,
          ),
        );
        let json: unknown;
        try {
          json = await this.#requestJSON('POST', 'chat_completion', body, options);
        } catch (error) {
          throw (error instanceof HTTPAgentError ? remoteRefusal(error.body) : undefined) ?? error;
        }
        reply = toMessage(json, `${this.url}/chat_completion`) as AgentMessage<C, F>;
      } catch (error) {
        spend.fail();
        throw error;
      }
      spend.settle(reply);
      const asks = guards === undefined ? [] : checksAsked(reply, this.url);
      if (asks.length === 0) return throwIfInterrupted(place, reply);
      // The remote call stopped before tool calls: the local tool guardrails check them.
      await checkRemoteCalls(guards!, asks, this.name, sessionId, effectiveSignal(options.signal));
      next = approveChecks(asks, approved, (message) => this.#refused(message));
    }
  }

  #refused(message: string): HTTPAgentError {
    return new HTTPAgentError({ message: `${this.url}: ${message}`, url: this.url });
  }

  /**
   * Streams the remote agent's reply: its chunks (messages with `streamState` 1, cumulative `content` and the new
   * text in `delta`, whichever form the server sent), then the final message, which is also the generator's
   * return value. A non-streaming remote agent gives only the final message, and so does a server without the
   * stream route (Lagent's own), through `/chat_completion`. Leaving the loop early closes the request, which
   * stops the remote call and leaves its session as it was. The `timeout` runs until the first event; after it,
   * each event must follow the previous within `idleTimeout`; `signal` stops the stream at any time.
   */
  async *stream(
    input?: MessageInput | readonly MessageInput[],
    options: RemoteCallOptions = {},
  ): AsyncGenerator<AgentMessage<C, F>, AgentMessage<C, F>, undefined> {
    const signal = effectiveSignal(options.signal);
    signal?.throwIfAborted();
    const place = remotePlace(this, this.name);
    const sent = remoteInput(place, input);
    const guards = toolGuardsHere();
    const approved = new Set<string>();
    let next: unknown = sent;
    for (;;) {
      const leg = this.#streamOnce(next, options, signal, guards, place !== undefined) as AsyncGenerator<
        AgentMessage<C, F>,
        AgentMessage<C, F>,
        undefined
      >;
      const final = yield* leg;
      const asks = guards === undefined ? [] : checksAsked(final, this.url);
      if (asks.length === 0) {
        yield final;
        return throwIfInterrupted(place, final);
      }
      // The remote call stopped before tool calls: the local tool guardrails check them, then it goes on.
      await checkRemoteCalls(guards!, asks, this.name, options.sessionId ?? 0, signal);
      next = approveChecks(asks, approved, (message) => this.#refused(message));
    }
  }

  /** One streamed request: yields its chunks, returns its final message (not yielded). */
  async *#streamOnce(
    sent: unknown,
    options: RemoteCallOptions,
    signal: AbortSignal | undefined,
    guards: ReturnType<typeof toolGuardsHere>,
    nested: boolean,
  ): AsyncGenerator<AgentMessage, AgentMessage, undefined> {
    const url = `${this.url}/chat_completion/stream`;
    const timeout = options.timeout ?? this.#transport.timeout;
    const idleTimeout = checkNumber('idleTimeout', options.idleTimeout, this.#idleTimeout ?? timeout, 1);
    const began = performance.now();
    const controller = new AbortController();
    const combined = signal === undefined ? controller.signal : AbortSignal.any([signal, controller.signal]);
    const maxBytes = this.#transport.maxResponseBytes;
    let response: http.IncomingMessage | undefined;
    const spend = beginRemote(options, url);
    try {
      const body = JSON.stringify(
        chatRequestBody(
          wireMessages(sent as MessageInput),
          options.sessionId ?? 0,
          withToolChecks(spend.options, guards),
          nested,
        ),
      );
      response = await exchange(
        this.#transport,
        'POST',
        'chat_completion/stream',
        body,
        combined,
        async (answer, attemptSignal) => {
          const status = answer.statusCode ?? 0;
          if (status === 404) {
            // Lagent's own server has no stream route: the reply comes whole from /chat_completion.
            await readText(answer, attemptSignal, maxBytes, url);
            return Object.assign(answer, { fallback: true });
          }
          if (status >= 300 || !(answer.headers['content-type'] ?? '').includes('text/event-stream')) {
            const text = await readText(answer, attemptSignal, maxBytes, url);
            const json = parseAnswer({ status, headers: answer.headers, text }, url);
            // A server that answers the stream route with a message: take it as the final one.
            return Object.assign(answer, { single: json });
          }
          return answer;
        },
        timeout,
      );
      const { single, fallback } = response as { single?: unknown; fallback?: boolean };
      if (single !== undefined || fallback) {
        let message: AgentMessage;
        if (single !== undefined) {
          message = toMessage(single, url);
          spend.settle(message);
        } else {
          spend.cancel(); // the stream route is not there: the call counts its own
          message = await this.call(sent as MessageInput, { ...options, signal });
        }
        message.delta = typeof message.content === 'string' ? message.content : '';
        return message;
      }
      const open = response;
      combined.addEventListener('abort', () => open.destroy(combined.reason as Error), { once: true });
      let final: AgentMessage | undefined;
      let previous = '';
      const events = readEvents(response, {
        url,
        signal: combined,
        maxEventBytes: maxBytes,
        // The timeout covers the wait for the first event, headers included.
        firstEventTimeout: timeout - (performance.now() - began),
        idleTimeout,
      });
      for await (const event of events) {
        if (event.event === SSE_EVENTS.error) {
          const refusal = remoteRefusal(event.data);
          if (refusal !== undefined) throw refusal;
          const detail = (event.data as { detail?: unknown } | null)?.detail;
          throw new HTTPAgentError({
            message: `${url} failed mid-stream: ${typeof detail === 'string' ? detail : 'error'}`,
            status: 500,
            body: event.data,
            url,
          });
        }
        const message = toMessage(event.data, url);
        if (event.event === SSE_EVENTS.delta) {
          // The text added to the previous chunk's: the chunk's content is that text plus this.
          const delta = typeof message.content === 'string' ? message.content : '';
          message.content = previous + delta;
          message.delta = delta;
        } else if (typeof message.content === 'string') {
          message.delta = message.content.startsWith(previous)
            ? message.content.slice(previous.length)
            : message.content;
        }
        previous = typeof message.content === 'string' ? message.content : '';
        // The final message is the caller's to yield (or, a remote check, to answer).
        if (event.event === SSE_EVENTS.message) final = message;
        else yield message;
      }
      if (final === undefined) {
        throw new HTTPAgentError({ message: `${url} ended the stream without a final message`, url });
      }
      spend.settle(final);
      return final;
    } finally {
      spend.fail(); // a stream that failed or was left: charged all it was allowed (a no-op once settled)
      // Leaving early (or failing) closes the request; the server then stops the remote call.
      controller.abort(new Error('the stream was left'));
      response?.destroy();
    }
  }

  /** The remote agent's state dict for a session, in Lagent's snake_case shape (empty memories for an unknown session). */
  async stateDict(sessionId: SessionId = 0, options: RemoteReadOptions = {}): Promise<LagentStateDict> {
    const path = `memory/${encodeURIComponent(String(sessionId))}`;
    return (await this.#requestJSON('GET', path, undefined, options)) as LagentStateDict;
  }

  /** Whether the server answers `/health_check` with 200 (Lagent's `is_alive`). */
  async isAlive(options: RemoteReadOptions = {}): Promise<boolean> {
    try {
      return await exchange(
        { ...this.#transport, retries: 0 },
        'GET',
        'health_check',
        undefined,
        effectiveSignal(options.signal),
        async (response, attemptSignal) => {
          await readText(
            response,
            attemptSignal,
            this.#transport.maxResponseBytes,
            `${this.url}/health_check`,
          );
          return response.statusCode === 200;
        },
        options.timeout ?? Math.min(this.#transport.timeout, 5_000),
      );
    } catch {
      return false;
    }
  }

  /** One request whose answer is JSON: the parsed answer, or the server's error as a thrown one. */
  #requestJSON(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    options: RemoteReadOptions,
  ): Promise<unknown> {
    const signal = effectiveSignal(options.signal);
    signal?.throwIfAborted();
    const url = `${this.url}/${path}`;
    return exchange(
      this.#transport,
      method,
      path,
      body,
      signal,
      async (response, attemptSignal) =>
        parseAnswer(
          {
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: await readText(response, attemptSignal, this.#transport.maxResponseBytes, url),
          },
          url,
        ),
      options.timeout ?? this.#transport.timeout,
    );
  }

  /** Closes the pooled connections. Calls after it still work, on new connections. */
  close(): void {
    this.#transport.agent.destroy();
  }
}
