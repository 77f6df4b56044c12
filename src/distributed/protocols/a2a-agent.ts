import { randomUUID } from 'node:crypto';
import type {
  Message as A2AMessage,
  Part as A2APart,
  Task as A2ATask,
  AgentCard,
  StreamResponse,
} from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { locateBridge } from '../../bridge/location';
import { SyncBridge } from '../../bridge/sync-bridge';
import { effectiveSignal } from '../../core/call-context';
import { AgentMessage, type LagentMessageJSON, type MessageInput } from '../../schema/agent-message';
import { ConfigurationError, LagentError, missingPeer } from '../../schema/errors';
import { type Decision, INTERRUPT_TYPE, type Interrupt, RESUME_TYPE } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import { isPlainObject } from '../../utils/is';
import { HTTPAgentError } from '../http/errors';
import { beginRemote, remoteRefusal } from '../remote-budget';
import { REMOTE_AGENT, remoteInput, remotePlace, throwIfInterrupted } from '../remote-interrupts';

/*
 * A remote A2A agent (any server of A2A 1.0 or 0.3: an `HTTPAgentServer`, Mastra, Google ADK, LangGraph, the
 * SDK's samples) called like a local agent through `@a2a-js/sdk`'s client. A session is an A2A context; a
 * task the remote leaves `input-required` is an interrupt of the local tree (re-rooted at the client's place,
 * as for `AsyncHTTPAgentClient`), and the resume message goes on that task.
 */

/** Options of {@link AsyncA2AAgent} and {@link A2AAgent}. */
export interface A2AAgentOptions {
  /** The remote agent's base URL: its card is at `{url}/.well-known/agent-card.json`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` (an `HTTPAgentServer` started with `token` needs it). */
  token?: string | undefined;
  /** More headers for every request (an API key of another server). */
  headers?: Readonly<Record<string, string>> | undefined;
  /** Where the card is, relative to `url`. @default '.well-known/agent-card.json' */
  cardPath?: string | undefined;
  /** Milliseconds one call may take; `Infinity` for none. @default 300_000 */
  timeout?: number | undefined;
  /** A name for messages and trees. @default 'A2AAgent' */
  name?: string | undefined;
}

/** Options of a call: the session (the A2A context), a signal, a deadline, and metadata for the remote call. */
export type A2ACallOptions = {
  sessionId?: SessionId | undefined;
  signal?: AbortSignal | undefined;
  timeout?: number | undefined;
} & Record<string, unknown>;

/** Call options that belong to this process and never go to the remote as metadata. */
const LOCAL = new Set(['sessionId', 'signal', 'timeout', 'idleTimeout', 'durable', 'callId']);

const ROLE_USER = 1;
const TERMINAL_FAILURES: Readonly<Record<number, string>> = {
  4: 'failed',
  5: 'was cancelled',
  7: 'was rejected',
  8: 'needs authentication',
};
const COMPLETED = 3;
const INPUT_REQUIRED = 6;

interface ClientModule {
  ClientFactory: new (options: unknown) => { createFromUrl(url: string, path?: string): Promise<Client> };
  ClientFactoryOptions: { default: unknown; createFrom(original: unknown, overrides: unknown): unknown };
  JsonRpcTransportFactory: new (options: unknown) => unknown;
  RestTransportFactory: new (options: unknown) => unknown;
  DefaultAgentCardResolver: new (options: unknown) => unknown;
}

async function loadClient(): Promise<ClientModule> {
  try {
    return (await import('@a2a-js/sdk/client')) as unknown as ClientModule;
  } catch (error) {
    throw missingPeer(['@a2a-js/sdk'], 'A2AAgent', error);
  }
}

/**
 * A remote A2A agent called like a local async agent: `call()` sends a message on the session's context
 * (`contextId` is the session id) and resolves to the reply (the task's artifacts as text), `stream()` yields the
 * reply as it grows. Budgets go to the remote in the message's metadata (an `HTTPAgentServer` keeps the call
 * within them and reports what it spent); an abort cancels the remote task (`CancelTask`).
 *
 * It is usable as a sub-agent: hold it in a property of a composite agent and call it in `forward`. A task the
 * remote leaves `input-required` (an `HTTPAgentServer` agent waiting for approval) stops the local call like a
 * local interrupt, with the client's path in the local tree joined with the remote's; resuming the local call
 * sends the decisions on that task (a data part `{ decisions }`). A remote agent of another kind that asks for
 * input gets an interrupt whose tool call is `reply({ question })`: approve it with `arguments: { text }` to
 * send that text, decline it to cancel the task. A failed, rejected or cancelled task, an error answer or an
 * unreachable server is an {@link HTTPAgentError} (a budget or guardrail refusal its own error).
 *
 * `@a2a-js/sdk` is an optional peer, loaded on the first call.
 *
 * @example
 * const researcher = new AsyncA2AAgent({ url: 'http://127.0.0.1:8090', token });
 * const reply = await researcher.call('What is new in A2A 1.0?', { sessionId: 'alice' });
 */
export class AsyncA2AAgent<C = unknown> {
  /** A remote agent: a local tree holding it may stop for its questions (see `interruptsOf`). */
  readonly [REMOTE_AGENT] = true as const;
  readonly url: string;
  readonly name: string;
  readonly #options: A2AAgentOptions;
  readonly #timeout: number;
  #client: Promise<Client> | undefined;
  /** The task each session's context left waiting for input, to resume it. */
  readonly #waiting = new Map<string, string>();

  constructor(options: A2AAgentOptions) {
    if (typeof options !== 'object' || options === null || typeof options.url !== 'string') {
      throw new ConfigurationError({ message: 'A2AAgent expects { url, token?, timeout? }' });
    }
    let base: URL;
    try {
      base = new URL(options.url);
    } catch (error) {
      throw new ConfigurationError({
        message: `A2AAgent: url ${JSON.stringify(options.url)} is not a URL`,
        cause: error,
      });
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new ConfigurationError({
        message: `A2AAgent: url must be http: or https:, got ${base.protocol}`,
      });
    }
    const timeout = options.timeout ?? 300_000;
    if (typeof timeout !== 'number' || !(timeout > 0)) {
      throw new ConfigurationError({
        message: `A2AAgent: timeout must be a positive number, got ${String(timeout)}`,
      });
    }
    this.url = base.href.replace(/\/$/, '');
    this.name = options.name ?? 'A2AAgent';
    this.#options = options;
    this.#timeout = timeout;
  }

  /** The remote agent's card (A2A's `AgentCard`: its name, description, skills, interfaces, ...). */
  async card(): Promise<
    {
      name: string;
      description: string;
      skills: { id: string; name: string; description: string }[];
    } & Record<string, unknown>
  > {
    const card: AgentCard = await (await this.#connect()).getAgentCard();
    return card as unknown as Awaited<ReturnType<AsyncA2AAgent['card']>>;
  }

  /**
   * Sends the messages on the session's context and resolves to the reply. Options other than `sessionId`,
   * `signal` and `timeout` go to the remote as the message's metadata (`budget` within the local budget).
   */
  async call(
    input?: MessageInput | readonly MessageInput[],
    options: A2ACallOptions = {},
  ): Promise<AgentMessage<C>> {
    let final: AgentMessage<C> | undefined;
    for await (const message of this.#exchange(input, options)) final = message;
    return final!;
  }

  /**
   * Streams the reply: chunks (`streamState` 1, the text so far as `content`, the new text as `delta`) as the
   * remote's artifact grows, then the final message, which is also the return value.
   */
  async *stream(
    input?: MessageInput | readonly MessageInput[],
    options: A2ACallOptions = {},
  ): AsyncGenerator<AgentMessage<C>, AgentMessage<C>, undefined> {
    let final: AgentMessage<C> | undefined;
    for await (const message of this.#exchange(input, options, true)) {
      final = message;
      yield message;
    }
    return final!;
  }

  /** Forgets the client (a new one connects on the next call). */
  close(): void {
    this.#client = undefined;
  }

  /** One call: yields chunks when `chunks` is set, and the final message last. */
  async *#exchange(
    input: MessageInput | readonly MessageInput[] | undefined,
    options: A2ACallOptions,
    chunks = false,
  ): AsyncGenerator<AgentMessage<C>, void, undefined> {
    const place = remotePlace(this, this.name);
    const sent = remoteInput(place, input);
    const contextId = String(options.sessionId ?? 0);
    const signal = effectiveSignal(options.signal);
    signal?.throwIfAborted();
    const spend = beginRemote(options, this.url);
    const timeout = options.timeout ?? this.#timeout;
    const controller = new AbortController();
    const timer = Number.isFinite(timeout)
      ? setTimeout(() => controller.abort(new LagentTimeout(this.url, timeout)), timeout)
      : undefined;
    const stop = signal === undefined ? controller.signal : AbortSignal.any([signal, controller.signal]);
    let taskId: string | undefined;
    let reply: AgentMessage<C>;
    // The request runs on its own signal: aborted, the call stops at once, and the remote task is cancelled once
    // its id is known (an abort that comes before the task's first event waits for it, out of the caller's way).
    const request = new AbortController();
    let events: AsyncGenerator<StreamResponse> | undefined;
    const abandon = () => {
      if (taskId !== undefined) {
        this.#cancel(taskId);
        request.abort(stop.reason);
        return;
      }
      const rest = events;
      if (rest === undefined) return request.abort(stop.reason);
      void (async () => {
        try {
          for (;;) {
            const step = await rest.next();
            if (step.done) break;
            const id = taskIdOf(step.value);
            if (id !== undefined) {
              this.#cancel(id);
              break;
            }
          }
        } catch {
          // the request failed: nothing runs to cancel
        } finally {
          request.abort(stop.reason);
        }
      })();
    };
    const stopped = new Promise<never>((_resolve, reject) => {
      if (stop.aborted) reject(stop.reason);
      else stop.addEventListener('abort', () => reject(stop.reason), { once: true });
    });
    stopped.catch(() => undefined);
    try {
      const client = await Promise.race([this.#connect(), stopped]);
      const message = this.#message(sent, contextId);
      const metadata: Record<string, unknown> = {};
      for (const key of Object.keys(spend.options)) {
        if (!LOCAL.has(key) && spend.options[key] !== undefined) metadata[key] = spend.options[key];
      }
      const artifacts = new Map<string, string>();
      let text = '';
      let usage: unknown;
      let outcome: A2ATask | A2AMessage | undefined;
      let last: { state: number; message: A2AMessage | undefined } | undefined;
      events = client.sendMessageStream(
        { tenant: '', message, configuration: undefined, metadata } as never,
        { signal: request.signal },
      ) as AsyncGenerator<StreamResponse>;
      for (;;) {
        const step = await Promise.race([events.next(), stopped]);
        if (step.done) break;
        const payload = step.value.payload;
        if (payload === undefined) continue;
        taskId = taskIdOf(step.value) ?? taskId;
        switch (payload.$case) {
          case 'message':
            outcome = payload.value;
            break;
          case 'task':
            outcome = payload.value;
            if (payload.value.status !== undefined)
              last = { state: payload.value.status.state, message: payload.value.status.message };
            break;
          case 'statusUpdate': {
            const status = payload.value.status;
            if (status !== undefined) last = { state: status.state, message: status.message };
            const reported = (payload.value.metadata as { usage?: unknown } | undefined)?.usage;
            if (reported !== undefined) usage = reported;
            break;
          }
          case 'artifactUpdate': {
            const artifact = payload.value.artifact;
            if (artifact === undefined) break;
            const added = textOf(artifact.parts);
            const before = payload.value.append ? (artifacts.get(artifact.artifactId) ?? '') : '';
            artifacts.set(artifact.artifactId, before + added);
            if (chunks && added !== '') {
              text += added;
              const chunk = new AgentMessage({ sender: this.name, content: text as C, streamState: 1 });
              chunk.delta = added;
              yield chunk;
            }
            break;
          }
        }
      }
      reply = this.#reply(outcome, last, artifacts, usage, contextId);
    } catch (error) {
      spend.fail();
      if (stop.aborted) {
        abandon();
        throw stop.reason;
      }
      request.abort();
      throw this.#failure(error);
    } finally {
      clearTimeout(timer);
    }
    spend.settle(reply);
    yield throwIfInterrupted(place, reply);
  }

  /** The reply of a call: the answer, the interrupt of a task waiting for input, or the error of a failed one. */
  #reply(
    outcome: A2ATask | A2AMessage | undefined,
    last: { state: number; message: A2AMessage | undefined } | undefined,
    artifacts: Map<string, string>,
    usage: unknown,
    contextId: string,
  ): AgentMessage<C> {
    const extraInfo = usage === undefined ? null : { usage };
    if (outcome === undefined)
      throw new HTTPAgentError({ message: `${this.url} answered nothing`, url: this.url });
    if (!('status' in outcome)) {
      return new AgentMessage({ sender: this.name, content: textOf(outcome.parts) as C, extraInfo });
    }
    const task = outcome;
    const state = last?.state ?? task.status?.state ?? 0;
    const said = last?.message === undefined ? '' : textOf(last.message.parts);
    if (state === INPUT_REQUIRED) {
      this.#waiting.set(contextId, task.id);
      const interrupts = interruptsIn(last?.message?.parts ?? [], task.id, said);
      return new AgentMessage({
        sender: this.name,
        type: INTERRUPT_TYPE,
        content: (said || 'Waiting for input') as C,
        formatted: { interrupts },
        extraInfo,
      }) as AgentMessage<C>;
    }
    this.#waiting.delete(contextId);
    if (state === COMPLETED) {
      const content = artifacts.size > 0 ? [...artifacts.values()].join('\n') : said;
      return new AgentMessage({ sender: this.name, content: content as C, extraInfo });
    }
    const refusal = dataOf(last?.message?.parts ?? [])
      .map((data) => remoteRefusal(data))
      .find(Boolean);
    if (refusal !== undefined) throw refusal;
    throw new HTTPAgentError({
      message: `${this.url}: the task ${TERMINAL_FAILURES[state] ?? `ended in state ${state}`}${said ? `: ${said}` : ''}`,
      url: this.url,
      body: task,
    });
  }

  /** The A2A message for an input: text and files, or the decisions of a resume message on the waiting task. */
  #message(
    input: MessageInput | readonly MessageInput[] | AgentMessage | undefined,
    contextId: string,
  ): A2AMessage {
    const list = input === undefined || input === null ? [] : Array.isArray(input) ? input : [input];
    const parts: A2APart[] = [];
    let taskId = '';
    for (const item of list as MessageInput[]) {
      const message =
        item instanceof AgentMessage ? item : typeof item === 'string' ? undefined : AgentMessage.from(item);
      if (message?.type === RESUME_TYPE) {
        const decisions = (message.formatted as { decisions?: Decision[] } | null)?.decisions ?? [];
        const waiting = this.#waiting.get(contextId);
        if (waiting === undefined) {
          throw new HTTPAgentError({
            message: `${this.url}: session ${JSON.stringify(contextId)} has no task waiting for input`,
            url: this.url,
          });
        }
        taskId = waiting;
        // A remote of another kind asked for input: its `reply` interrupt carries the text to send.
        const replies = decisions.filter((decision) => decision.id === waiting);
        if (replies.length > 0) {
          const [decision] = replies;
          if (!decision!.approve) {
            this.#cancel(waiting);
            throw new HTTPAgentError({
              message: `${this.url}: the input was declined; the task is cancelled`,
              url: this.url,
            });
          }
          const args = decision!.arguments;
          const text = isPlainObject(args) ? String(args.text ?? '') : typeof args === 'string' ? args : '';
          parts.push(textPart(text));
        } else parts.push(dataPart({ decisions }));
        continue;
      }
      const content = typeof item === 'string' ? item : message!.content;
      parts.push(textPart(typeof content === 'string' ? content : JSON.stringify(content)));
    }
    return {
      messageId: randomUUID(),
      contextId,
      taskId,
      role: ROLE_USER as A2AMessage['role'],
      parts,
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
  }

  #cancel(taskId: string): void {
    this.#connect()
      .then((client) => client.cancelTask({ tenant: '', id: taskId } as never))
      .catch(() => undefined);
  }

  #failure(error: unknown): unknown {
    if (error instanceof HTTPAgentError || LagentError.isInstance(error)) return error;
    return new HTTPAgentError({
      message: `${this.url}: ${error instanceof Error ? error.message : String(error)}`,
      url: this.url,
      cause: error,
    });
  }

  #connect(): Promise<Client> {
    this.#client ??= (async () => {
      const sdk = await loadClient();
      const headers: Record<string, string> = { ...this.#options.headers };
      if (this.#options.token !== undefined) headers.authorization = `Bearer ${this.#options.token}`;
      const fetchImpl: typeof fetch = (url, init) => {
        const merged = new Headers(init?.headers);
        for (const [key, value] of Object.entries(headers)) merged.set(key, value);
        return fetch(url, { ...init, headers: merged });
      };
      const factory = new sdk.ClientFactory(
        sdk.ClientFactoryOptions.createFrom(sdk.ClientFactoryOptions.default, {
          transports: [
            new sdk.JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
            new sdk.RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
          ],
          cardResolver: new sdk.DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
        }),
      );
      return factory.createFromUrl(this.url, this.#options.cardPath);
    })();
    this.#client.catch(() => {
      this.#client = undefined;
    });
    return this.#client;
  }
}

class LagentTimeout extends LagentError {
  override readonly name: string = 'TimeoutError';
  constructor(url: string, ms: number) {
    super({ message: `${url}: the A2A call took longer than ${ms} ms` });
  }
}

/** The task an event belongs to. */
function taskIdOf(event: StreamResponse): string | undefined {
  const payload = event.payload;
  if (payload === undefined || payload.$case === 'message') return undefined;
  return payload.$case === 'task' ? payload.value.id : payload.value.taskId;
}

function textPart(text: string): A2APart {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

function dataPart(value: unknown): A2APart {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

function textOf(parts: readonly A2APart[] | undefined): string {
  let text = '';
  for (const part of parts ?? []) if (part.content?.$case === 'text') text += part.content.value;
  return text;
}

function dataOf(parts: readonly A2APart[]): unknown[] {
  const data: unknown[] = [];
  for (const part of parts) if (part.content?.$case === 'data') data.push(part.content.value);
  return data;
}

/**
 * The interrupts a task waiting for input carries: an `HTTPAgentServer`'s data parts (`{ interrupt }`), else
 * one `reply` question made of its text (another kind of agent asking for input).
 */
function interruptsIn(parts: readonly A2APart[], taskId: string, said: string): Interrupt[] {
  const interrupts = dataOf(parts)
    .map((data) => (isPlainObject(data) ? data.interrupt : undefined))
    .filter(
      (ask): ask is Interrupt =>
        isPlainObject(ask) && typeof ask.id === 'string' && isPlainObject(ask.toolCall),
    );
  if (interrupts.length > 0) return interrupts;
  return [
    {
      id: taskId,
      kind: 'approval',
      path: '',
      toolCall: { id: taskId, name: 'reply', arguments: { question: said } },
    },
  ];
}

/**
 * Hosts an {@link AsyncA2AAgent} inside the sync bridge's worker for {@link A2AAgent}; not meant to be used
 * directly. Messages cross as Lagent's JSON.
 */
export class A2AAgentHost {
  readonly #agent: AsyncA2AAgent;

  constructor(options: A2AAgentOptions) {
    this.#agent = new AsyncA2AAgent(options);
  }

  async call(input: unknown[], options: A2ACallOptions): Promise<LagentMessageJSON> {
    return (await this.#agent.call(input as MessageInput[], options)).toJSON({ format: 'lagent' });
  }
}

/** Milliseconds a bridged call may block beyond the client's own deadline. */
const BRIDGE_MARGIN_MS = 5_000;

/**
 * The sync twin of {@link AsyncA2AAgent}, for sync agents and scripts: the async client runs in the sync bridge's
 * worker thread, and each call blocks this thread until the remote answers. The remote server must run in
 * another thread or process. An `AbortSignal` cannot fire while the thread is blocked; use `timeout`.
 *
 * @example
 * const remote = new A2AAgent({ url: 'http://127.0.0.1:8090' });
 * const reply = remote.call('hello', { sessionId: 1 });
 * remote.close();
 */
export class A2AAgent<C = unknown> {
  /** A remote agent: a local tree holding it may stop for its questions (see `interruptsOf`). */
  readonly [REMOTE_AGENT] = true as const;
  readonly url: string;
  readonly name: string;
  readonly #bridge: SyncBridge;

  constructor(options: A2AAgentOptions) {
    const probe = new AsyncA2AAgent(options);
    this.url = probe.url;
    this.name = probe.name;
    const timeout = options.timeout ?? 300_000;
    this.#bridge = new SyncBridge(
      { exportName: 'A2AAgentHost', args: [{ ...options }], module: locateBridge().hosts },
      { timeout: Number.isFinite(timeout) ? timeout + BRIDGE_MARGIN_MS : Number.POSITIVE_INFINITY },
    );
  }

  /** Sends the messages on the session's context and returns the reply, blocking until it comes. */
  call(input?: MessageInput | readonly MessageInput[], options: A2ACallOptions = {}): AgentMessage<C> {
    options.signal?.throwIfAborted();
    const place = remotePlace(this, this.name);
    const sent = remoteInput(place, input);
    const spend = beginRemote(options, this.url);
    const { signal: _signal, ...rest } = spend.options;
    let reply: AgentMessage<C>;
    try {
      const list = sent === undefined ? [] : Array.isArray(sent) ? sent : [sent];
      const json = this.#bridge.call<LagentMessageJSON>('call', [
        list.map((item: MessageInput) =>
          item instanceof AgentMessage ? item.toJSON({ format: 'lagent' }) : item,
        ),
        rest,
      ]);
      reply = AgentMessage.from(json) as AgentMessage<C>;
    } catch (error) {
      spend.fail();
      throw sameClass(error);
    }
    spend.settle(reply);
    return throwIfInterrupted(place, reply);
  }

  /** Releases the hosted client; later calls throw. Idempotent. */
  close(): void {
    this.#bridge.close();
  }
}

/** An error from the worker as this side's class. */
function sameClass(error: unknown): unknown {
  const body = (error as { body?: unknown } | null)?.body;
  if (error instanceof Error && error.name === 'HTTPAgentError' && !(error instanceof HTTPAgentError)) {
    const fields = error as unknown as { status?: number; url?: string };
    return (
      remoteRefusal(body) ??
      new HTTPAgentError({
        message: error.message,
        status: fields.status,
        body,
        url: fields.url,
        cause: error.cause,
      })
    );
  }
  return error;
}
