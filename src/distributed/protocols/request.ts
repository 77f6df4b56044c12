import type { FastifyReply, FastifyRequest } from 'fastify';
import { AgentBase } from '../../agents/agent-base';
import { contentToText } from '../../agents/aggregator/content';
import { checkAnswer } from '../../agents/interceptors/approvals/decisions';
import { pendingInterrupts } from '../../agents/pending-interrupts';
import type { AgentMessage, MessageInput } from '../../schema/agent-message';
import { LagentError, RunFailedError, ValidationError } from '../../schema/errors';
import { type Decision, RESUME_TYPE } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import { errorMessage } from '../../utils/text';
import { isUnprocessable } from '../caller-options';
import { withRequestResource } from '../http/request-resource';
import { OTHER_SESSION, requestScope } from '../http/session-tokens';
import { WriteTurns } from '../http/sse-writer';
import { refusalBody } from '../remote-budget';
import type { ProtocolHost } from './run';

/*
 * What every protocol route shares: refusing a request with the right status, the session's memory as the
 * truth (a client's copy of the conversation is checked against it, never taken from it), decisions checked
 * against what waits, and server-sent events written at the client's pace.
 */

/** A request a protocol route refuses: `status` is the HTTP status (400, 404, 409, ...), `code` a stable name. */
export class ProtocolRequestError extends ValidationError {
  override readonly name: string = 'ProtocolRequestError';
  readonly status: number;
  readonly code: string;

  constructor(options: { status: number; code: string; message: string; field?: string | undefined }) {
    super({ message: options.message, field: options.field ?? '(root)' });
    this.status = options.status;
    this.code = options.code;
  }
}

/** A 400: the body does not fit the protocol. */
export function badInput(field: string, message: string): ProtocolRequestError {
  return new ProtocolRequestError({ status: 400, code: 'BadRequest', field, message });
}

/** How a failed request or call is answered before anything was streamed. */
export interface Answer {
  status: number;
  code: string;
  message: string;
  /** A budget's or guardrail's fields, when the call was refused for one. */
  refusal?: Record<string, unknown> | undefined;
}

/**
 * The answer to an error: the caller's mistakes as 4xx with their message (a malformed body 400, a value the
 * server's policy refuses 422, a history or decision that does not match the session 409), a budget or a
 * guardrail 422 with its fields, anything else 500 (its message only with `exposeErrors`).
 */
export function answerOf(host: ProtocolHost, error: unknown): Answer {
  if (error instanceof ProtocolRequestError)
    return { status: error.status, code: error.code, message: error.message };
  const refusal = refusalBody(error);
  if (refusal !== undefined)
    return { status: 422, code: String(refusal.error), message: String(refusal.detail), refusal };
  if (error instanceof ValidationError) {
    const status = isUnprocessable(error) || error.field === 'callId' ? 422 : 400;
    return { status, code: error.name, message: error.message };
  }
  const name = error instanceof Error ? error.name : 'Error';
  return {
    status: 500,
    code: name,
    message: host.exposeErrors ? errorMessage(error) : 'Internal Server Error',
  };
}

/** A route a session token may use, for its own session (each route checks it with {@link checkScope}). */
export const SESSION_SCOPED = { config: { sessionScoped: true } };

/** Refuses (403) a request made with a token of another session than the one it names. */
export function checkScope(request: FastifyRequest, sessionId: SessionId): void {
  const scope = requestScope(request.raw);
  if (scope !== undefined && scope !== String(sessionId))
    throw new ProtocolRequestError({ status: 403, code: 'Forbidden', message: OTHER_SESSION });
}

/** Messages as the served agent takes them: their JSON for an agent that is not of this copy of lagent-ts. */
export function inputFor(host: ProtocolHost, input: readonly AgentMessage[]): MessageInput[] {
  if (host.agent instanceof AgentBase) return [...input];
  return input.map((message) => message.toJSON() as MessageInput);
}

/** Whether a run ended because it was cancelled. */
export function isCancelled(error: unknown): boolean {
  return error instanceof RunFailedError && error.status === 'cancelled';
}

/** Whether an error is the caller's (answered 4xx, not told to `onError`). */
export function isCallersMistake(error: unknown): boolean {
  return error instanceof ValidationError || refusalBody(error) !== undefined;
}

/** A message of a client's copy of the conversation, reduced to what is compared with the session's. */
export interface HistoryEntry {
  role: 'user' | 'assistant';
  text: string;
}

/**
 * Checks a client's copy of the conversation (the messages before the newest one) against the session's
 * memory, which stays the truth: its user messages must be the session's, in order and word for word, and it
 * may not hold more assistant turns than user turns, nor one before the first user message (with `turn: 'one
 * message'`, each assistant message is a turn). Assistant texts are
 * not compared (clients render a turn's streamed text in their own way) and are never read. Throws a 409
 * {@link ProtocolRequestError} otherwise. A client may also send the newest message alone.
 */
export async function checkHistory(
  host: ProtocolHost,
  sessionId: SessionId,
  history: readonly HistoryEntry[],
  /** Whether an assistant turn is one message (the AI SDK's) or may be several in a row (tool turns). */
  turn: 'one message' | 'messages' = 'messages',
): Promise<void> {
  if (history.length === 0) return;
  const sent: string[] = [];
  let turns = 0;
  let previous: HistoryEntry['role'] | undefined;
  for (const entry of history) {
    if (entry.role === 'user') sent.push(entry.text);
    else if (previous !== 'assistant' || turn === 'one message') {
      if (sent.length === 0) throw forged('an assistant message comes before the first user message');
      turns++;
    }
    previous = entry.role;
  }
  if (turns > sent.length) throw forged('it holds more assistant turns than user turns');
  const kept = await sessionUserTexts(host, sessionId);
  if (kept === undefined) return;
  if (sent.length !== kept.length) {
    throw forged(
      `it has ${sent.length} earlier user message${sent.length === 1 ? '' : 's'}; the session has ${kept.length}`,
    );
  }
  for (let i = 0; i < sent.length; i++) {
    if (sent[i] !== kept[i]) throw forged(`its user message ${i + 1} is not the session's`);
  }
}

function forged(why: string): ProtocolRequestError {
  return new ProtocolRequestError({
    status: 409,
    code: 'HistoryMismatch',
    field: 'messages',
    message: `the conversation sent does not match the session's (${why}): the server keeps the conversation, so send it as the server streamed it, or send only the new message`,
  });
}

/** The texts of the user messages the served agent's memory holds for a session (undefined: it has none). */
async function sessionUserTexts(host: ProtocolHost, sessionId: SessionId): Promise<string[] | undefined> {
  if (!(host.agent instanceof AgentBase) || host.agent.memory === undefined || host.agent.memory === null)
    return undefined;
  const state = await host.stateOf(sessionId);
  const memory = (state as Record<string, unknown>).memory;
  if (!Array.isArray(memory)) return [];
  const texts: string[] = [];
  for (const message of memory as { sender?: unknown; type?: unknown; content?: unknown }[]) {
    if (message?.sender === 'user' && message.type !== RESUME_TYPE)
      texts.push(contentToText(message.content));
  }
  return texts;
}

/**
 * Checks that every decision answers an interrupt the session waits for (`pendingInterrupts`), as that kind of
 * interrupt is answered (a frontend tool's call with its result); throws a 409 {@link ProtocolRequestError}
 * naming the first that does not. An agent that is not of lagent-ts checks them itself.
 */
export async function checkDecisions(
  host: ProtocolHost,
  sessionId: SessionId,
  decisions: readonly Decision[],
): Promise<void> {
  if (!(host.agent instanceof AgentBase) || decisions.length === 0) return;
  const agent = host.agent;
  const waiting = new Map((await pendingInterrupts(agent, sessionId)).map((ask) => [ask.id, ask.kind]));
  for (const decision of decisions) {
    if (!waiting.has(decision.id)) {
      throw new ProtocolRequestError({
        status: 409,
        code: 'NotWaiting',
        field: 'decisions',
        message:
          waiting.size === 0
            ? `the session waits for no decision; ${JSON.stringify(decision.id)} is not waiting`
            : `${JSON.stringify(decision.id)} is not waiting for a decision (waiting: ${[...waiting.keys()].map((id) => JSON.stringify(id)).join(', ')})`,
      });
    }
    try {
      // An approval is not answered with a tool's result, nor a frontend tool's call without one.
      checkAnswer(agent.name, decision, waiting.get(decision.id));
    } catch (error) {
      throw new ProtocolRequestError({
        status: 409,
        code: 'NotWaiting',
        field: 'decisions',
        message: errorMessage(error),
      });
    }
  }
}

/** An error's message for a client, as the server's `exposeErrors` allows. */
export function clientMessage(host: ProtocolHost, error: unknown): string {
  if (isCallersMistake(error) || (LagentError.isInstance(error) && host.exposeErrors))
    return errorMessage(error);
  return host.exposeErrors ? errorMessage(error) : 'Internal Server Error';
}

/**
 * One streamed answer: the headers go out with the first write (so a request refused before it is still an
 * ordinary error answer), each write says whether the response's buffer has room, and `gone` turns true when
 * the client leaves before the end, which aborts `controller`.
 */
export class EventStream {
  readonly #reply: FastifyReply;
  readonly #headers: Record<string, string>;
  #started = false;
  #gone = false;
  readonly #onClose: () => void;

  constructor(reply: FastifyReply, controller: AbortController, headers: Record<string, string>) {
    this.#reply = reply;
    this.#headers = headers;
    this.#onClose = () => {
      if (!reply.raw.writableFinished) {
        this.#gone = true;
        controller.abort(new Error('the client closed the connection'));
      }
    };
    reply.raw.once('close', this.#onClose);
  }

  get started(): boolean {
    return this.#started;
  }

  get gone(): boolean {
    return this.#gone;
  }

  /** Writes text (starting the answer when it is the first); false when the buffer is full or the client gone. */
  write(text: string | Uint8Array): boolean {
    if (this.#gone) return false;
    if (!this.#started) this.start();
    const batch = this.#batch;
    if (batch === undefined) return this.#reply.raw.write(text);
    if (typeof text !== 'string') {
      this.flush();
      this.#batch = [];
      return this.#reply.raw.write(text);
    }
    batch.push(text);
    this.#batched += text.length;
    if (this.#batched < BATCH_CHARS) return true;
    const room = this.flush();
    this.#batch = [];
    return room;
  }

  /** Texts written since {@link batch}, sent as one write by {@link flush}. */
  #batch: string[] | undefined;
  #batched = 0;

  /**
   * Holds what is written from now on until {@link flush} (or until it grows past 16 KiB): events written in
   * one go (a page of a run's log) cost the response one write, not one each.
   */
  batch(): void {
    this.#batch ??= [];
  }

  /** Sends what {@link batch} held, and writes go out at once again; false when the buffer is full. */
  flush(): boolean {
    const batch = this.#batch;
    this.#batch = undefined;
    this.#batched = 0;
    if (batch === undefined || batch.length === 0 || this.#gone) return !this.#gone;
    return this.#reply.raw.write(batch.length === 1 ? batch[0]! : batch.join(''));
  }

  /** Sends the headers now. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#reply.hijack();
    this.#reply.raw.writeHead(200, this.#headers);
  }

  /** Ends the answer (when it began) and stops watching the connection. */
  end(): void {
    this.flush();
    this.#reply.raw.off('close', this.#onClose);
    if (this.#started && !this.#gone) {
      this.#reply.raw.end();
      return;
    }
    if (!this.#gone) return;
    if (!this.#started) this.#reply.hijack();
    // Nobody reads it any more: the connection goes (a half-closed one would otherwise keep the server open).
    this.#reply.raw.destroy();
  }

  readonly #turns = new WriteTurns();

  /** Resolves once the response's buffer has room again, or the connection is gone (see `WriteTurns`). */
  drained(): Promise<void> {
    return this.#turns.wait(this.#reply.raw);
  }

  /**
   * {@link drained}, or undefined when there is nothing to wait for. What a batch holds is sent before a wait (the
   * client's buffer is judged by what was written).
   */
  pause(): Promise<void> | undefined {
    const wait = this.#turns.pause(this.#reply.raw);
    if (wait !== undefined && this.#batch !== undefined) {
      this.flush();
      this.#batch = [];
    }
    return wait;
  }
}

/** The most text a batch holds before it is written. */
const BATCH_CHARS = 16_384;

/** The headers of a server-sent event stream. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/** Reads the call options a protocol request carries (`kwargs`) through the server's caller policy. */
export function callOptions(
  host: ProtocolHost,
  kwargs: Record<string, unknown>,
  reply: FastifyReply,
  alsoIgnored: readonly string[] = [],
): Record<string, unknown> {
  const { options, ignored } = host.callers.read(kwargs);
  const all = [...alsoIgnored, ...ignored];
  if (all.length > 0) reply.raw.setHeader('lagent-ignored-options', headerList(all));
  return withRequestResource(options, reply.request.raw);
}

/** Keys for a header: those that are plain names, at most 20, then how many more. */
function headerList(keys: readonly string[]): string {
  const shown = keys.filter((key) => /^[\w.-]{1,64}$/.test(key)).slice(0, 20);
  const more = keys.length - shown.length;
  return more > 0 ? [...shown, `(${more} more)`].join(', ') : shown.join(', ');
}

/** Decisions as a resume message's input. */
export function decisionsInput(decisions: readonly Decision[]): Decision[] {
  return decisions.map((decision) => ({ ...decision }));
}

/** Text of an untrusted value, or a 400 when it is not a string. */
export function textOf(value: unknown, field: string): string {
  if (typeof value !== 'string') throw badInput(field, `"${field}" must be a string`);
  return value;
}

/**
 * A file or image a remote client sends: an `http(s)` URL or a `data:` URL only (a path would name a file of the
 * server's, which a model client may read).
 */
export function remoteSource(url: string, field: string): string {
  if (/^(https?:|data:)/i.test(url)) return url;
  throw badInput(field, 'files and images must be http(s) or data: URLs');
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** Answers a protocol request with an HTTP error (`detail`, `error` and what the refusal adds) as JSON. */
export function refuse(reply: FastifyReply, answer: Answer): void {
  reply
    .code(answer.status)
    .type(JSON_TYPE)
    .send(JSON.stringify({ detail: answer.message, error: answer.code, ...answer.refusal }));
}

/**
 * What a route whose call is a run gives `serveRunLog` for its ends: a run of this process that failed before
 * anything was streamed is answered as an HTTP error, as a call that is not a run is; a client that leaves
 * cancels the run only when the server aborts on disconnect.
 */
export function runAnswer(
  host: ProtocolHost,
  reply: FastifyReply,
  local: { readonly result: Promise<unknown> } | undefined,
  runId: string,
): {
  refuse: ((logged: { status: string }) => Promise<boolean>) | undefined;
  left: (() => void) | undefined;
} {
  return {
    refuse:
      local === undefined
        ? undefined
        : async (logged) => {
            if (logged.status === 'cancelled') return false;
            const error: unknown = await local.result.then(
              () => undefined,
              (failure: unknown) => failure,
            );
            refuse(reply, answerOf(host, error));
            return true;
          },
    left:
      host.abortOnDisconnect === true
        ? () => {
            void host.runs.cancel(runId).catch(() => {});
          }
        : undefined,
  };
}
