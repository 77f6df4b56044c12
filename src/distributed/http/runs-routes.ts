import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type RecoveredRun, recoverRuns } from '../../agents/runs/recover-runs';
import {
  isResume,
  joinRun,
  type Run,
  type RunLogOptions,
  type RunOutcome,
  type RunPlace,
  runPlaceOf,
  startRun,
} from '../../agents/runs/run';
import { followRunPages, runRests } from '../../agents/runs/run-reader';
import type { MessageInput } from '../../schema/agent-message';
import { ConfigurationError, ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import type { RunEvent, RunRecord } from '../../stores/types';
import { isPlainObject } from '../../utils/is';
import { errorMessage } from '../../utils/text';
import { replaysCalls } from '../caller-options';
import { type ChatRequest, checkSessionId, MAX_SESSION_ID_LENGTH } from './protocol';
import { OTHER_SESSION, requestScope } from './session-tokens';

/*
 * Runs over HTTP: `POST /runs` starts a call in the background and answers at once, `GET /runs/{id}` says where
 * it stands, `GET /runs/{id}/stream` serves its log as server-sent events from any event on (then live, any
 * number of clients, none of which stops the run by leaving), `POST /runs/{id}/cancel` stops it, and
 * `GET /sessions/{id}/runs` lists a session's runs. Other routes of the server (the protocols') serve a run's log
 * in their own stream's shape with {@link relayRunLog}, from the {@link ServerRuns} of the server.
 */

/** The `runs` option of `HTTPAgentServer`: where run logs are kept, and what is recovered at start. */
export interface ServerRunsOptions extends RunLogOptions {
  /**
   * Recover at `listen()` the durable calls a process left unfinished (their leases run out), streaming into
   * their runs' logs: `false` to leave them (to `recover()`, or the session's next call), or how many sessions
   * to recover at once. @default 4 (for an agent with `durable`)
   */
  recover?: boolean | number | undefined;
}

/** An agent that runs its own runs elsewhere and says where their logs are (`AsyncQueueAgent`). */
export interface RunningAgent {
  start(input: unknown, options: Record<string, unknown>): Run;
  /** Where the logs of its runs are. */
  runLog(): Pick<RunPlace, 'store' | 'namespace'>;
  /** Cancels one of its runs wherever it executes (else the run is only marked for its writer). */
  cancelRun?(runId: string): Promise<RunRecord | undefined>;
}

function runsElsewhere(agent: object): agent is RunningAgent {
  return (
    typeof (agent as Partial<RunningAgent>).start === 'function' &&
    typeof (agent as Partial<RunningAgent>).runLog === 'function'
  );
}

/** A server's runs: starting them, reading their logs, recovering them. */
export class ServerRuns {
  readonly #agent: object;
  readonly #options: ServerRunsOptions;
  #place: Pick<RunPlace, 'store' | 'namespace'> | undefined;
  /** Runs this process runs, started here: `close()` waits for them. */
  readonly #running = new Set<Run>();
  /** The streams of run logs being served: `close()` ends them. */
  readonly #relays = new Set<{ stop(): void; done: Promise<void> }>();

  constructor(agent: object, options: ServerRunsOptions | undefined) {
    if (options !== undefined && !isPlainObject(options)) {
      throw new ConfigurationError({
        message: 'HTTPAgentServer: runs must be { store?, namespace?, retainMs?, recover?, ... }',
      });
    }
    const recover = options?.recover;
    if (
      recover !== undefined &&
      typeof recover !== 'boolean' &&
      !(Number.isSafeInteger(recover) && (recover as number) > 0)
    ) {
      throw new ConfigurationError({
        message: `HTTPAgentServer: runs.recover must be true, false or how many sessions at once, got ${String(recover)}`,
      });
    }
    this.#agent = agent;
    this.#options = options ?? {};
  }

  /** Where the server's run logs are (the served agent's own place when it runs its runs elsewhere). */
  get place(): Pick<RunPlace, 'store' | 'namespace'> {
    this.#place ??= runsElsewhere(this.#agent)
      ? this.#agent.runLog()
      : runPlaceOf(this.#agent, this.#options, 'HTTPAgentServer');
    return this.#place;
  }

  /**
   * Starts a run of the served agent on a session and resolves once it is in the store. A resume message goes on
   * with the session's run that waits for it (same id, same log), when there is one; `runId` names the run (a
   * run of that id on the same session is answered as it is, not started twice).
   */
  async start(
    input: MessageInput[],
    sessionId: SessionId,
    callOptions: Record<string, unknown>,
    runId?: string,
  ): Promise<{ run: Run | undefined; record: RunRecord | undefined }> {
    const { store, namespace } = this.place;
    const session = String(sessionId);
    if (runId !== undefined) {
      const existing = await store.readRun(namespace, runId);
      if (existing !== undefined) {
        if (existing.sessionId !== session) {
          throw new ValidationError({
            field: 'callId',
            message: `run ${JSON.stringify(runId)} is a run of another session; a run id belongs to its session`,
          });
        }
        if (!(isResume(input) && existing.status === 'waiting')) return { run: undefined, record: existing };
      }
    } else if (isResume(input)) {
      const waiting = await this.waitingRun(session);
      if (waiting !== undefined) runId = waiting.runId;
    }
    const options: Record<string, unknown> = { ...callOptions, sessionId };
    // A run id is its call's id only for an agent that replays calls.
    if (!replaysCalls(this.#agent)) delete options.callId;
    if (runId !== undefined) options.runId = runId;
    const elsewhere = runsElsewhere(this.#agent);
    const run = elsewhere
      ? this.#agent.start(input, options)
      : startRun(this.#agent as never, input, { ...options, runs: this.#options });
    if (!elsewhere) {
      this.#running.add(run);
      const done = () => this.#running.delete(run);
      run.result.then(done, done);
    }
    await run.ready;
    return { run, record: undefined };
  }

  /** A run, or undefined when the store does not have it. */
  read(runId: string): Promise<RunRecord | undefined> {
    const { store, namespace } = this.place;
    return Promise.resolve(store.readRun(namespace, runId));
  }

  /** The session's newest run that is waiting for a decision, if any. */
  async waitingRun(sessionId: string): Promise<RunRecord | undefined> {
    const { store, namespace } = this.place;
    const { runs } = await store.listRuns(namespace, sessionId, { newestFirst: true, limit: 1 });
    return runs[0]?.status === 'waiting' ? runs[0] : undefined;
  }

  /**
   * The session's newest run when it has not ended (queued, running, or waiting for a decision): what a client
   * that reloads a page reconnects to (`GET /api/chat/{id}/stream` of the AI SDK serves it unless it waits).
   */
  async activeRun(sessionId: string): Promise<RunRecord | undefined> {
    const { store, namespace } = this.place;
    const { runs } = await store.listRuns(namespace, sessionId, { newestFirst: true, limit: 1 });
    const run = runs[0];
    return run !== undefined && run.status !== 'done' && run.status !== 'failed' && run.status !== 'cancelled'
      ? run
      : undefined;
  }

  /** A session's runs, a page at a time. */
  list(sessionId: string, after: string | undefined, limit: number) {
    const { store, namespace } = this.place;
    return Promise.resolve(store.listRuns(namespace, sessionId, { after, limit }));
  }

  /** A run's events after `after`, then live ones, until it rests, a page at a time (see `followRunPages`). */
  follow(
    runId: string,
    after: number,
    signal?: AbortSignal,
  ): AsyncGenerator<readonly RunEvent[], RunRecord | undefined> {
    const { store, namespace } = this.place;
    return followRunPages(store, namespace, runId, { after, signal });
  }

  /** Asks for a run to be cancelled (see `Run.cancel`). */
  cancel(runId: string): Promise<RunRecord | undefined> {
    const agent = this.#agent;
    if (runsElsewhere(agent) && typeof agent.cancelRun === 'function') return agent.cancelRun(runId);
    return joinRun(this.place, runId).cancel();
  }

  /**
   * Resolves once the runs this process started have ended; with `timeoutMs`, those still running then are
   * cancelled (a durable one is recovered by the next process, from what its journal holds).
   */
  async settle(timeoutMs?: number): Promise<void> {
    if (this.#running.size === 0) return;
    const all = Promise.allSettled([...this.#running].map((run) => run.result));
    if (timeoutMs === undefined) {
      await all;
      return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        for (const run of this.#running) void run.cancel().catch(() => {});
        resolve();
      }, timeoutMs);
    });
    await Promise.race([all, late]);
    clearTimeout(timer);
    await all;
  }

  /** Serves a relay until it ends, or until {@link endRelays}. */
  track(relay: { stop(): void; done: Promise<void> }): void {
    this.#relays.add(relay);
    relay.done.finally(() => this.#relays.delete(relay));
  }

  /** Ends every stream of a run log being served (the server is closing), and resolves once they ended. */
  async endRelays(): Promise<void> {
    const relays = [...this.#relays];
    for (const relay of relays) relay.stop();
    await Promise.allSettled(relays.map((relay) => relay.done));
  }

  /** Whether `listen()` recovers, and how many sessions at once. */
  get recovery(): number | undefined {
    const recover = this.#options.recover ?? true;
    if (recover === false || runsElsewhere(this.#agent)) return undefined;
    return recover === true ? undefined : recover;
  }

  /** Recovers the durable calls a process left unfinished, into their runs' logs (`[]` when off). */
  recover(onRecovered?: (run: RecoveredRun) => void): Promise<RecoveredRun[]> {
    if (this.#options.recover === false || runsElsewhere(this.#agent)) return Promise.resolve([]);
    const place = runPlaceOf(this.#agent, this.#options, 'HTTPAgentServer');
    return recoverRuns(this.#agent, place, { concurrency: this.recovery, onRecovered });
  }
}

/** What the run routes need of the server. */
export interface RunRoutesContext {
  runs: ServerRuns;
  /** Reads a chat request as `POST /chat_completion` does (answering and giving undefined when refused). */
  read(request: FastifyRequest, reply: FastifyReply): ChatRequest | undefined;
  /** The request's messages as the agent takes them. */
  inputs(parsed: ChatRequest): MessageInput[];
  /** Answers a failed request (400, 422 or 500 as the error says). */
  fail(reply: FastifyReply, error: unknown): void;
  onError(error: unknown, context: { route: string; sessionId: SessionId | undefined }): void;
}

const JSON_TYPE = 'application/json; charset=utf-8';
/** How often a stream that has nothing to send sends a comment, so proxies keep it open (ms). */
const HEARTBEAT_MS = 15_000;
/** The most text of a page of events written at once. */
const BATCH_CHARS = 16_384;

function errorBody(detail: string, error: string): string {
  return JSON.stringify({ detail, error });
}

/** Registers the run routes on the server's app (behind its guard and token, scoped to sessions). */
export function registerRunRoutes(app: FastifyInstance, context: RunRoutesContext): void {
  const { runs } = context;
  const scoped = { config: { sessionScoped: true } };

  /** The run of a route's id when the request may see it; answers (404, 403) and gives undefined otherwise. */
  const runOf = async (request: FastifyRequest, reply: FastifyReply): Promise<RunRecord | undefined> => {
    const { id } = request.params as { id: string };
    let record: RunRecord | undefined;
    try {
      checkRunId(id);
      record = await runs.read(id);
    } catch (error) {
      answerError(context, reply, error, '/runs');
      return undefined;
    }
    if (record === undefined) {
      reply
        .code(404)
        .type(JSON_TYPE)
        .send(errorBody(`no run ${JSON.stringify(id)}`, 'NotFound'));
      return undefined;
    }
    const scope = requestScope(request.raw);
    if (scope !== undefined && scope !== record.sessionId) {
      reply.code(403).type(JSON_TYPE).send(errorBody(OTHER_SESSION, 'Forbidden'));
      return undefined;
    }
    return record;
  };

  app.post('/runs', scoped, async (request, reply) => {
    const parsed = context.read(request, reply);
    if (parsed === undefined) return reply;
    const { callId, ...callOptions } = parsed.options;
    try {
      const started = await runs.start(
        context.inputs(parsed),
        parsed.sessionId,
        callOptions,
        callId as string | undefined,
      );
      const runId = started.run?.id ?? started.record!.runId;
      reply
        .code(started.run === undefined ? 200 : 202)
        .type(JSON_TYPE)
        .send(JSON.stringify({ runId, sessionId: parsed.sessionId }));
    } catch (error) {
      answerError(context, reply, error, '/runs', parsed.sessionId);
    }
    return reply;
  });

  app.get('/runs/:id', scoped, async (request, reply) => {
    const record = await runOf(request, reply);
    if (record !== undefined) reply.type(JSON_TYPE).send(JSON.stringify(runBody(record)));
    return reply;
  });

  app.post('/runs/:id/cancel', scoped, async (request, reply) => {
    const record = await runOf(request, reply);
    if (record === undefined) return reply;
    try {
      const after = (await runs.cancel(record.runId)) ?? record;
      reply
        .code(runRests(after.status) ? 200 : 202)
        .type(JSON_TYPE)
        .send(JSON.stringify(runBody(after)));
    } catch (error) {
      answerError(context, reply, error, '/runs/cancel', record.sessionId);
    }
    return reply;
  });

  app.get('/runs/:id/stream', scoped, async (request, reply) => {
    let after: number;
    try {
      after = afterOf(request);
    } catch (error) {
      answerError(context, reply, error, '/runs/stream');
      return reply;
    }
    const record = await runOf(request, reply);
    if (record === undefined) return reply;
    // A run that rests, read to its end: nothing more will come (204 also stops an EventSource reconnecting).
    if (runRests(record.status) && after >= record.lastSeq) {
      reply.code(204).send();
      return reply;
    }
    reply.hijack();
    await relayRunLog({ runs, runId: record.runId, after, raw: reply.raw });
    return reply;
  });

  app.get('/sessions/:id/runs', scoped, async (request, reply) => {
    const { id } = request.params as { id: string };
    const query = request.query as Record<string, unknown>;
    try {
      checkSessionId(id);
      const scope = requestScope(request.raw);
      if (scope !== undefined && scope !== id) {
        reply.code(403).type(JSON_TYPE).send(errorBody(OTHER_SESSION, 'Forbidden'));
        return reply;
      }
      const limit = query.limit === undefined ? 100 : wholeNumber('limit', query.limit, 1, 1_000);
      const runAfter = query.after === undefined ? undefined : String(query.after);
      if (runAfter !== undefined) checkRunId(runAfter);
      const page = await runs.list(id, runAfter, limit);
      reply.type(JSON_TYPE).send(
        JSON.stringify({
          runs: page.runs.map((run) => ({
            runId: run.runId,
            status: run.status,
            createdAt: run.createdAt,
            updatedAt: run.updatedAt,
            lastEventId: run.lastSeq,
          })),
          ...(page.next === undefined ? {} : { next: page.next }),
        }),
      );
    } catch (error) {
      answerError(context, reply, error, '/sessions/runs', id);
    }
    return reply;
  });
}

/** What `GET /runs/{id}` answers. */
function runBody(record: RunRecord): Record<string, unknown> {
  const outcome = record.result === undefined ? undefined : (JSON.parse(record.result) as RunOutcome);
  return {
    runId: record.runId,
    sessionId: record.sessionId,
    status: record.status,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    lastEventId: record.lastSeq,
    ...(outcome?.reply === undefined ? {} : { reply: outcome.reply }),
    ...(outcome?.error === undefined ? {} : { error: outcome.error }),
  };
}

function answerError(
  context: RunRoutesContext,
  reply: FastifyReply,
  error: unknown,
  route: string,
  sessionId?: SessionId,
): void {
  if (error instanceof ValidationError) {
    const status = error.field === 'callId' ? 422 : 400;
    reply
      .code(status)
      .type(JSON_TYPE)
      .send(errorBody(errorMessage(error), error.name));
    return;
  }
  context.onError(error, { route, sessionId });
  context.fail(reply, error);
}

function checkRunId(id: string): void {
  if (id.length === 0 || id.length > MAX_SESSION_ID_LENGTH) {
    throw new ValidationError({
      field: 'runId',
      message: `a run id is 1 to ${MAX_SESSION_ID_LENGTH} characters long`,
    });
  }
}

/** The event a stream starts after: `?after=N`, else the `Last-Event-ID` header, else 0. */
function afterOf(request: FastifyRequest): number {
  const query = request.query as Record<string, unknown>;
  if (query.after !== undefined) return wholeNumber('after', query.after, 0, Number.MAX_SAFE_INTEGER);
  const header = request.headers['last-event-id'];
  if (header !== undefined) {
    return wholeNumber(
      'Last-Event-ID',
      Array.isArray(header) ? header[0] : header,
      0,
      Number.MAX_SAFE_INTEGER,
    );
  }
  return 0;
}

function wholeNumber(field: string, value: unknown, min: number, max: number): number {
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string' || !/^\d{1,16}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ValidationError({
      field,
      message: `"${field}" must be a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`,
    });
  }
  return Number(text);
}

/** Options of {@link relayRunLog}. */
export interface RelayRunLogOptions {
  runs: ServerRuns;
  runId: string;
  /** The events after this number. */
  after: number;
  /** The response, not yet started (its head is written here: 200, `text/event-stream`). */
  raw: ServerResponse;
  /**
   * What to write for an event: its server-sent event text (one or more events, each ending in a blank line), or
   * undefined to skip it. @default the event as it is logged: `id: <seq>`, `event: <type>`, `data: <data>`
   */
  encode?: ((event: RunEvent) => string | undefined) | undefined;
  /** What to write once the run rests and its last event was sent (the protocol's end), if anything. */
  end?: ((run: RunRecord | undefined) => string | undefined) | undefined;
  /** More response headers. */
  headers?: Record<string, string> | undefined;
}

/** A run log event as a server-sent event: its number as the `id:`, its type as the event's name. */
export function runEventFrame(event: RunEvent): string {
  const data = event.data;
  const lines = data.includes('\n') || data.includes('\r') ? data.split(/\r\n|\r|\n/).join('\ndata: ') : data;
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${lines}\n\n`;
}

/**
 * Serves a run's log on a response as server-sent events, from the event after `after`, then live until the
 * run rests (ends, or waits for a decision): what `GET /runs/{id}/stream` does, and what a protocol's resume route
 * uses with its own `encode` (the AI SDK UI message stream's `GET /api/chat/{id}/stream`, AG-UI's reconnect).
 * Writes only as fast as the client reads; a client that leaves stops the relay, never the run. A comment every
 * 15 s keeps an idle stream open through proxies.
 */
export function relayRunLog(options: RelayRunLogOptions): Promise<void> {
  const controller = new AbortController();
  const done = relay(options, controller);
  options.runs.track({ stop: () => controller.abort(), done });
  return done;
}

async function relay(options: RelayRunLogOptions, controller: AbortController): Promise<void> {
  const { raw, runs, runId, after } = options;
  const encode = options.encode ?? runEventFrame;
  const onClose = () => controller.abort();
  raw.once('close', onClose);
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    ...options.headers,
  });
  // The head goes now: a client waiting for events past the end of the log knows it is connected.
  raw.flushHeaders();
  const heartbeat = setInterval(() => {
    if (!raw.destroyed) raw.write(': keep-alive\n\n');
  }, HEARTBEAT_MS);
  heartbeat.unref?.();
  const follow = runs.follow(runId, after, controller.signal);
  try {
    let last: RunRecord | undefined;
    pages: for (;;) {
      const step = await follow.next();
      if (step.done) {
        last = step.value;
        break;
      }
      // A page's events go as one write (a page of a long log in writes of at most 16 KiB).
      let batch = '';
      for (const event of step.value) {
        if (raw.destroyed || controller.signal.aborted) break pages;
        const text = encode(event);
        if (text === undefined) continue;
        batch += text;
        if (batch.length < BATCH_CHARS) continue;
        const room = raw.write(batch);
        batch = '';
        if (!room) await drained(raw);
      }
      if (batch !== '' && !raw.write(batch)) await drained(raw);
    }
    if (!raw.destroyed && !controller.signal.aborted) {
      const closing = options.end?.(last);
      if (closing !== undefined) raw.write(closing);
    }
  } catch (error) {
    if (!raw.destroyed) {
      raw.write(
        `event: error\ndata: ${JSON.stringify({ detail: errorMessage(error), error: 'RunLogError' })}\n\n`,
      );
    }
  } finally {
    clearInterval(heartbeat);
    raw.off('close', onClose);
    await follow.return(undefined);
    if (!raw.destroyed) raw.end();
  }
}

/** Resolves once the response has room again, or is gone. */
function drained(raw: ServerResponse): Promise<void> {
  if (!raw.writableNeedDrain || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.once('drain', done);
    raw.once('close', done);
  });
}
