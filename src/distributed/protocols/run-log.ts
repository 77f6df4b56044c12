import type { FastifyReply } from 'fastify';
import { AgentBase } from '../../agents/agent-base';
import { eventData } from '../../agents/runs/run-events';
import { AgentMessage } from '../../schema/agent-message';
import type { ToolCall } from '../../schema/chat-message';
import type { Decision } from '../../schema/interrupts';
import type { SessionId } from '../../schema/session';
import { AgentStatusCode } from '../../schema/status';
import type { RunEvent } from '../../stores/types';
import { errorMessage } from '../../utils/text';
import type { EventStream } from './request';
import { modelTurnPaths, type ProtocolHost, type RunObserver, type ToolResultText } from './run';

/*
 * A protocol route whose calls are runs (the AI SDK UI message stream, AG-UI) serves them from their logs: the
 * request that starts a run, a client that comes back for it and a second client all read the same events, told
 * to the protocol's encoder by a {@link RunLogReader}, so they all get the same stream. The run goes on whoever
 * reads it or leaves.
 */

/** A run's `error` event: why it failed, or that it was cancelled. */
export interface LoggedError {
  detail: string;
  /** The error's name (`LLMRequestError`, `RunCancelled`, ...). */
  error: string;
  status: string;
}

/** What a {@link RunLogReader} tells besides a {@link RunObserver}'s calls. */
export interface RunLogEnds {
  /** A waiting run goes on with these decisions (the resume of an approval). */
  resumed(decisions: readonly Decision[]): void;
  /** The run's reply: its end, or the interrupt it waits on (the stream waits for what it returns). */
  finish(reply: AgentMessage): void | Promise<void>;
  /** The run failed or was cancelled. */
  fail(error: LoggedError): void;
}

/** The names of errors that are the caller's to read (as `isCallersMistake` finds them in a live call). */
const CALLERS_ERRORS = new Set([
  'ValidationError',
  'ProtocolRequestError',
  'BudgetExceededError',
  'GuardrailTripped',
  'RunCancelled',
]);

/** A logged error's message for a client, as the server's `exposeErrors` allows. */
export function loggedErrorText(host: ProtocolHost, error: LoggedError): string {
  return host.exposeErrors || CALLERS_ERRORS.has(error.error) ? error.detail : 'Internal Server Error';
}

/**
 * Reads a run's log events back into what a live call tells a {@link RunObserver}: the stream's text and reasoning
 * (only the chunks a model streams, as `runCall` reads them), the tree's tool calls and sub-agent calls (not the
 * served agent's own, nor a prebuilt loop's model turns), then the run's end. Events are given in order, from the
 * run's first or from any event that starts a part of it (its first, or the `status` event of a resume).
 */
export class RunLogReader {
  readonly #observer: RunObserver;
  readonly #ends: RunLogEnds;
  readonly #modelTurns: ReadonlySet<string>;
  /** The descriptions of the served agent's sub-agents, by path (a log names an agent, not what it does). */
  readonly #descriptions = new Map<string, string>();
  /** The content of the last logged chunk, when it was text (a `delta` event adds to it). */
  #logged: string | undefined;
  /** The content of the last streamed chunk: what a whole `chunk` event's text adds to. */
  #streamed = '';

  constructor(host: ProtocolHost, observer: RunObserver, ends: RunLogEnds) {
    this.#observer = observer;
    this.#ends = ends;
    const root = host.agent;
    this.#modelTurns = root instanceof AgentBase ? modelTurnPaths(root) : new Set();
    if (root instanceof AgentBase) {
      for (const [prefix, node] of root.namedAgents()) {
        const description = (node as { description?: unknown }).description;
        if (prefix !== '' && typeof description === 'string' && description !== '')
          this.#descriptions.set(prefix.slice(0, -1), description);
      }
    }
  }

  /** Tells what one event of the log says (a promise when the protocol's end is written asynchronously). */
  take(event: RunEvent): void | Promise<void> {
    switch (event.type) {
      case 'delta':
      case 'chunk':
        // Logged in this process: the chunk's value as it was logged, not its text parsed again.
        this.#chunk(event.type, eventData(event) as Record<string, unknown>);
        return;
      case 'agent':
        this.#agent(JSON.parse(event.data) as AgentEventData);
        return;
      case 'message':
        return this.#ends.finish(AgentMessage.from(JSON.parse(event.data)));
      case 'error': {
        const data = JSON.parse(event.data) as Partial<LoggedError>;
        this.#ends.fail({
          detail: String(data.detail ?? ''),
          error: String(data.error ?? 'Error'),
          status: String(data.status ?? 'failed'),
        });
        return;
      }
    }
  }

  #chunk(type: 'delta' | 'chunk', data: Record<string, unknown>): void {
    const given = data.content;
    const content =
      type === 'delta' && typeof given === 'string' && this.#logged !== undefined
        ? this.#logged + given
        : given;
    this.#logged = typeof content === 'string' ? content : undefined;
    if (data.stream_state !== AgentStatusCode.STREAM_ING) return;
    const reasoning = data.reasoning_delta;
    if (typeof reasoning === 'string' && reasoning !== '') this.#observer.reasoning(reasoning);
    if (typeof content !== 'string') return;
    const delta =
      type === 'delta' && typeof given === 'string'
        ? given
        : content.startsWith(this.#streamed)
          ? content.slice(this.#streamed.length)
          : content;
    this.#streamed = content;
    if (delta !== '') this.#observer.text(delta);
  }

  #agent(data: AgentEventData): void {
    const path = typeof data.path === 'string' ? data.path : '';
    const detail = data.detail ?? {};
    switch (data.kind) {
      case 'toolStart':
        this.#observer.toolsStarted(path, toolCallsOf(detail.toolCalls));
        return;
      case 'toolEnd': {
        const results = Array.isArray(detail.results) ? detail.results : [];
        const errors = Array.isArray(detail.errors) ? detail.errors : [];
        const calls = toolCallsOf(detail.toolCalls);
        this.#observer.toolsEnded(
          path,
          calls,
          calls.map((_, index): ToolResultText => {
            const error = errors[index];
            return typeof error === 'string'
              ? { text: error, error }
              : { text: typeof results[index] === 'string' ? results[index] : '' };
          }),
        );
        return;
      }
      case 'resume':
        if (path === '' && Array.isArray(detail.decisions))
          this.#ends.resumed(detail.decisions as Decision[]);
        return;
      case 'callStart':
      case 'callEnd':
      case 'error':
        if (path === '' || this.#modelTurns.has(path)) return;
        if (data.kind === 'callStart')
          this.#observer.agentStarted(
            path,
            typeof data.agent === 'string' ? data.agent : path,
            this.#descriptions.get(path),
          );
        else this.#observer.agentEnded(path, data.kind === 'callEnd' ? 'done' : 'failed');
        return;
    }
  }
}

interface AgentEventData {
  kind?: unknown;
  path?: unknown;
  agent?: unknown;
  detail?: Record<string, unknown> | null;
}

/** The tool calls of a logged agent event: their arguments (logged as JSON text) read back when they parse. */
function toolCallsOf(value: unknown): ToolCall[] {
  if (!Array.isArray(value)) return [];
  return value.map((call: { id?: unknown; name?: unknown; arguments?: unknown }) => ({
    id: String(call?.id ?? ''),
    name: String(call?.name ?? ''),
    arguments: argumentsOf(call?.arguments),
  }));
}

function argumentsOf(value: unknown): Record<string, unknown> | string {
  if (typeof value !== 'string') return (value ?? {}) as Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(value);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // Not JSON (or cut short in the log): given as the text it is.
  }
  return value;
}

/** Options of {@link serveRunLog}. */
export interface ServeRunLogOptions {
  host: ProtocolHost;
  reply: FastifyReply;
  /** The answer, made on `reply` with `controller` (its head goes with the first write). */
  out: EventStream;
  controller: AbortController;
  runId: string;
  sessionId: SessionId;
  /** The events after this number. */
  after: number;
  /** Writes what an event says to `out` (waited on when it returns a promise). */
  take(event: RunEvent): void | Promise<void>;
  /** Writes the protocol's end once the run rests and its last event was taken. */
  end?: (() => void) | undefined;
  /**
   * The run failed before anything was written: answers the request with an HTTP error instead (true), or
   * lets the error be written in the stream (false).
   */
  refuse?: ((error: LoggedError) => Promise<boolean>) | undefined;
  /** Writes that the stream broke (the store failed): the protocol's error. */
  broken?: ((message: string) => void) | undefined;
  /** The client went away before the end. */
  left?: (() => void) | undefined;
  /** Counts the answer as a call in flight (`close()` waits for it), as the request that started the run is. */
  inFlight?: boolean | undefined;
  /**
   * The run was waiting at event `after` and was just resumed: its log is followed once it goes on (a run that
   * another process executes, a queue worker's, may still read as waiting for a while).
   */
  resumed?: boolean | undefined;
  /** The route, for `onError`. */
  route: string;
  /** Sends a server-sent event comment when the stream has been idle 15 s (not in a binary stream). @default true */
  heartbeat?: boolean | undefined;
}

/** How often a stream that has nothing to send sends a comment, so proxies keep it open (ms). */
const HEARTBEAT_MS = 15_000;
/** Shortest and longest wait between two reads of a resumed run that still reads as waiting (ms). */
const RESUME_POLL_MIN_MS = 25;
const RESUME_POLL_MAX_MS = 1_000;

/** Resolves once a resumed run no longer reads as waiting at event `after` (or `signal` aborts). */
async function goesOn(host: ProtocolHost, runId: string, after: number, signal: AbortSignal): Promise<void> {
  let delay = RESUME_POLL_MIN_MS;
  for (;;) {
    const record = await host.runs.read(runId);
    if (record === undefined || record.status !== 'waiting' || record.lastSeq > after || signal.aborted)
      return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, delay);
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
    delay = Math.min(delay * 2, RESUME_POLL_MAX_MS);
  }
}

/**
 * Serves a run's log on a protocol's answer: from the event after `after`, then live until the run rests (it
 * ends, or waits for a decision), written only as fast as the client reads. A client that leaves stops the
 * answer, never the run (`left` decides); the server's `close()` ends it. A comment every 15 s keeps an idle
 * stream open through proxies.
 */
export async function serveRunLog(options: ServeRunLogOptions): Promise<void> {
  const { host, out, controller } = options;
  const finish = options.inFlight === true ? host.begin(controller, options.sessionId) : undefined;
  let stopped!: () => void;
  const done = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  host.runs.track({ stop: () => controller.abort(new Error('the server is closing')), done });
  const heartbeat =
    options.heartbeat === false ? undefined : setInterval(() => out.write(': keep-alive\n\n'), HEARTBEAT_MS);
  heartbeat?.unref?.();
  let follow: AsyncGenerator<readonly RunEvent[], unknown> | undefined;
  let refused = false;
  const { signal } = controller;
  try {
    if (options.resumed === true) await goesOn(host, options.runId, options.after, signal);
    follow = host.runs.follow(options.runId, options.after, signal);
    let rested = false;
    // A page of events (all a run logged in a turn, most often) is written as one write, without waiting between
    // its events unless the client's buffer fills or the stream has kept the event loop for long (`pause`).
    pages: for (;;) {
      const step = await follow.next();
      if (step.done) {
        rested = !signal.aborted;
        break;
      }
      out.batch();
      for (const event of step.value) {
        if (signal.aborted) break pages;
        if (event.type === 'error' && !out.started && options.refuse !== undefined) {
          const data = JSON.parse(event.data) as LoggedError;
          refused = await options.refuse(data);
          if (refused) return;
        }
        const taking = options.take(event);
        if (taking !== undefined) {
          out.flush();
          await taking;
          out.batch();
        }
        if (out.gone) break pages;
        // At the client's pace, letting other connections' work run while a long log is replayed.
        const pause = out.pause();
        if (pause !== undefined) await pause;
      }
      out.flush();
    }
    if (rested && !out.gone) options.end?.();
  } catch (error) {
    // The store failed us: what was sent stays; the client is told the stream broke.
    host.onError(error, { route: options.route, sessionId: options.sessionId });
    if (!out.gone) options.broken?.(`the run's log could not be read: ${errorMessage(error)}`);
  } finally {
    clearInterval(heartbeat);
    await follow?.return(undefined);
    if (out.gone) options.left?.();
    // A run that gave nothing to write (it was stopped before it began) is still answered: an empty stream.
    else if (!refused && !out.started) out.start();
    out.end();
    finish?.();
    stopped();
  }
}
