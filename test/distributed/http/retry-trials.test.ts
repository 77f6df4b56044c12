import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { AgentMessage } from 'lagent-ts';
import { AsyncHTTPAgentClient } from 'lagent-ts/distributed/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, postgresBinaries, startPostgres } from '../../stores/postgres-server';
import { type RedisServer, startRedis } from '../queue/redis-server';

/*
 * Retry-after-crash trials over HTTP. `lagent serve` serves a durable refund agent (fixtures/refund-agent.ts:
 * sessions and journals in SQLite, Redis or PostgreSQL; a Refund tool, not retrySafe, that appends a line to a
 * file per refund; a scripted model). Each trial's session first gets a question answered without a tool, then
 * "refund order X" with an idempotency key (the AsyncHTTPAgentClient's callId, an Idempotency-Key header,
 * `call_id` in the body, or the stream route), and the server is SIGKILLed at a point chosen per trial from a
 * seeded generator: at every write of the call to the store (a lease taken or given back, every journal entry,
 * the commit) before and after, at each model call, before and after the refund's side effect, or after the
 * reply was written and before the client read it; sometimes the server that recovers is killed too. In some
 * trials the client gives up instead while the Refund runs (it closes the connection, as on a timeout): the
 * call goes on to its end without it (a durable agent's call outlives its client), and the client's retry with
 * the same key gets that call's reply (it waits for the session while the call runs). A new server is started
 * on the same store (it recovers unfinished calls at start-up), and the client sends the same request with the
 * same key until it gets a reply. Per trial:
 *
 * - the refund happened exactly once when the reply says it did, at most once when the reply says its outcome
 *   is unknown, never twice (doubled);
 * - the session's memory holds both turns exactly once, the refund's reply the one the client got (else lost);
 * - the same request sent again gets the same reply back (`idempotentReplay`), and nothing runs.
 *
 * The trials run in lanes, concurrently, each with one server at a time. The two lanes of a store serve the same
 * agent (one namespace), as replicas behind a load balancer would: a server that starts recovers the other
 * lane's unfinished calls too, the first question goes to the other lane's server when it runs, and so does a
 * retry sometimes (that server holds the session as it was before the refund). Servers take leases of 300 ms
 * (`--lease-ms`), so a dead one is taken over soon. The CLI and the agent module are bundled once (esbuild,
 * sharing one copy of the library), so a server starts in a fraction of a second. Everything waits for events
 * (a process's exit, a line it printed, an answer), never for time.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/refund-agent.ts', import.meta.url));
const SEED = 0x5eed_2026;
const LEASE_MS = 300;
/** Trials in all, shared evenly by the stores (those that can run here). */
const TRIALS = 120;
/** Lanes per store: they serve the same agent (one namespace), as replicas behind a load balancer would. */
const LANES_PER_STORE = 2;
/** The agent of each store: a streaming one (its stream relayed by the stream route) or not. */
const STREAMING: Record<Kind, boolean> = { sqlite: true, redis: false, postgres: true };
/** Attempts of one trial (a request and its retries) before it counts as never answered. */
const MAX_ATTEMPTS = 10;

type Kind = 'sqlite' | 'redis' | 'postgres';
type Mode = 'client' | 'header' | 'stream' | 'body';

/**
 * What goes wrong in one attempt: the server dies the nth time it reaches `point` for the trial's session, or
 * right after it answered (`reply-lost`); or, with `hang`, the Refund tool waits at `point` until the client
 * gives up (it closes the connection, as a client that timed out does), then goes on: the call runs to its end
 * without its client, and the retry gets its reply.
 */
type Kill = { point: string; n: number; hang?: true; hold?: true } | 'reply-lost';

/** The kill points of one call, in the order a call reaches them. */
const POINTS = [
  'store:acquireSession:before',
  'store:acquireSession:after',
  'journal:begin:before',
  'journal:begin:after',
  'model:0',
  'journal:model:before',
  'journal:model:after',
  'journal:started:before',
  'journal:started:after',
  'tool:before',
  'tool:after',
  'journal:tool:before',
  'journal:tool:after',
  'model:1',
  'store:commitTurn:before',
  'store:commitTurn:after',
  'store:finishJournal:before',
  'store:finishJournal:after',
  'store:releaseSession:before',
  'store:releaseSession:after',
];

let dir: string;
let cli: string;
let agentModule: string;
let redis: RedisServer | undefined;
let postgres: PostgresServer | undefined;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  // Inside the project, so the bundle finds the project's node_modules (its packages stay outside it).
  const cache = join(ROOT, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  dir = mkdtempSync(join(cache, 'lagent-retry-trials-'));
  const binaries = postgresBinaries();
  const [, redisServer, postgresServer] = await Promise.all([
    build({
      entryPoints: { cli: join(ROOT, 'src/cli/index.ts'), agent: FIXTURE },
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      packages: 'external',
      outdir: join(dir, 'bundle'),
      logLevel: 'warning',
    }),
    startRedis(),
    'bin' in binaries ? startPostgres(binaries.bin) : undefined,
  ]);
  writeFileSync(refundsFile(), '');
  cli = join(dir, 'bundle', 'cli.js');
  agentModule = join(dir, 'bundle', 'agent.js');
  redis = redisServer;
  postgres = postgresServer;
}, 60_000);

afterAll(async () => {
  await Promise.all(
    [...children].map((child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      return exited;
    }),
  );
  await redis?.close();
  await postgres?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** A seeded generator of numbers in [0, 1) (mulberry32). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)]!;
}

/** One trial's plan: its session and key, the client, and where each server it uses is killed. */
interface Trial {
  session: string;
  key: string;
  input: string;
  cents: number;
  mode: Mode;
  /** The kill of the first server, then of the servers that take over (none past the list). */
  kills: Kill[];
  /** The first retry after a kill goes to the other lane's server (when it runs). */
  elsewhere: boolean;
}

function plan(lane: string, index: number, seed: number): Trial {
  const next = random(seed);
  const session = `${lane}-t${index}`;
  const cents = 100 + Math.floor(next() * 9900);
  const roll = next();
  const first: Kill =
    roll < 0.08
      ? 'reply-lost'
      : roll < 0.16
        ? { point: pick(next, ['tool:before', 'tool:after']), n: 1, hang: true }
        : { point: pick(next, POINTS), n: 1 };
  // The journal has two model entries: the second one is a point of its own.
  if (first !== 'reply-lost' && first.point.startsWith('journal:model') && next() < 0.5) first.n = 2;
  const kills: Kill[] = [first];
  // Sometimes the server that takes over dies too, at a point its recovery of the call reaches: a lease taken
  // (the nth time, as a lease held by the dead server is polled for a while), or a point past the first kill.
  if (next() < 0.35) {
    const past = first === 'reply-lost' ? POINTS.length : POINTS.indexOf(first.point) + 1;
    const point = pick(next, [...new Set([...POINTS.slice(0, 2), ...POINTS.slice(past)])]);
    kills.push({ point, n: point.startsWith('store:acquireSession') ? 1 + Math.floor(next() * 3) : 1 });
  }
  const mode: Mode =
    first === 'reply-lost'
      ? pick(next, ['header', 'body'] as const)
      : pick(next, ['client', 'header', 'body', 'stream'] as const);
  const elsewhere = next() < 0.4;
  return {
    elsewhere,
    session,
    key: `${session}/key`,
    input: `refund order ${session} for ${cents} cents`,
    cents,
    mode,
    kills,
  };
}

/** A running `lagent serve`. */
interface Server {
  child: ChildProcess;
  url: string;
  exited: Promise<NodeJS.Signals | number | null>;
  /** How it ended, once it has. */
  ended?: NodeJS.Signals | number | null;
  output(): string;
}

/** One lane: a namespace in a store, its files, and the one server it runs at a time. */
class Lane {
  readonly name: string;
  /** The agent's name: the namespace of its sessions and journals in the store, shared by the store's lanes. */
  readonly agent: string;
  readonly storeUrl: string;
  readonly streaming: boolean;
  readonly events: string;
  readonly killFile: string;
  server: Server | undefined;
  started = 0;
  /** What its servers printed on stderr that says a recovery failed. */
  readonly recoveryErrors: string[] = [];
  /**
   * Recoveries that stopped because another server took the call's lease (this one was slower than its lease
   * to renew it, on a busy machine): fencing at work, and the other server finishes the call.
   */
  fenced = 0;

  constructor(kind: Kind, index: number, agent = `refunds-${kind}`) {
    this.name = `${kind}${index}`;
    this.agent = agent;
    this.storeUrl =
      kind === 'sqlite'
        ? `sqlite:${join(dir, 'sessions.db')}`
        : kind === 'redis'
          ? redis!.url
          : postgres!.connectionString;
    this.streaming = STREAMING[kind];
    this.events = join(dir, `${this.name}.events`);
    this.killFile = join(dir, `${this.name}.kill`);
    writeFileSync(this.events, '');
    writeFileSync(this.killFile, '{}');
  }

  /** Where the next server of this lane dies (read by the agent module at each point). */
  arm(session: string, kill: Kill | undefined): void {
    const spec = kill === undefined || kill === 'reply-lost' ? {} : { session, ...kill };
    // Written whole, then renamed: the server reads it at any time.
    writeFileSync(`${this.killFile}.next`, JSON.stringify(spec));
    renameSync(`${this.killFile}.next`, this.killFile);
  }

  /**
   * The live server, started when there is none; one killed before it listens (at a point of its start-up
   * recovery) is told to `killed`, and another is started.
   */
  async serve(killed?: () => void): Promise<Server> {
    if (this.server?.ended !== undefined) this.server = undefined;
    while (this.server === undefined) {
      this.server = await this.#start();
      if (this.server === undefined) killed?.();
    }
    return this.server;
  }

  /** Waits for the server's exit after a request was cut: it must have been killed. */
  async died(): Promise<NodeJS.Signals | number | null> {
    const server = this.server!;
    const how = await server.exited;
    this.server = undefined;
    return how;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.child.kill('SIGTERM');
    await server.exited;
  }

  /** Starts `lagent serve`; undefined when it was killed before it said where it listens. */
  #start(): Promise<Server | undefined> {
    this.started++;
    const child = spawn(
      process.execPath,
      [cli, 'serve', '--agent', agentModule, '--port', '0', '--lease-ms', String(LEASE_MS)],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          TRIAL_STORE: this.storeUrl,
          TRIAL_AGENT: this.agent,
          TRIAL_STREAMING: this.streaming ? '1' : '0',
          REFUNDS: refundsFile(),
          EVENTS: this.events,
          KILL_FILE: this.killFile,
          NODE_COMPILE_CACHE: join(dir, 'compile-cache'),
          NODE_NO_WARNINGS: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.add(child);
    let stdout = '';
    let stderr = '';
    let server: Server | undefined;
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => {
      child.once('exit', (code, signal) => {
        children.delete(child);
        if (server !== undefined) server.ended = signal ?? code;
        resolve(signal ?? code);
      });
    });
    return new Promise((resolve, reject) => {
      child.stdout!.setEncoding('utf8').on('data', (text: string) => {
        stdout += text;
        const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
        if (url !== undefined && server === undefined) {
          server = { child, url, exited, output: () => stdout + stderr };
          resolve(server);
        }
      });
      let partial = '';
      child.stderr!.setEncoding('utf8').on('data', (text: string) => {
        stderr += text;
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          if (!/recovering .* failed/.test(line)) continue;
          if (/no longer (leased|held)/.test(line)) this.fenced++;
          else this.recoveryErrors.push(line);
        }
      });
      void exited.then((how) => {
        if (how === 'SIGKILL') resolve(undefined);
        else
          reject(new Error(`lagent serve (${this.name}) exited ${how} before listening: ${stdout}${stderr}`));
      });
    });
  }
}

/** What one request got: a reply, an error answer, or nothing (the connection was cut). */
type Answer =
  | { reply: { content: unknown; extraInfo: Record<string, unknown> | null } }
  | { status: number; detail: string }
  | { cut: string };

/**
 * Sends the trial's request the trial's way. With `reply-lost`, kills the server once it answered; with a
 * `hang`, gives up (aborts the request) once the server says its tool waits there.
 */
async function send(lane: Lane, server: Server, trial: Trial, kill: Kill | undefined): Promise<Answer> {
  const controller = new AbortController();
  let answered = false;
  if (kill !== undefined && kill !== 'reply-lost' && kill.hang) {
    const marker = `${trial.session} ${kill.point} HANGING`;
    void until(() => answered || readFileSync(lane.events, 'utf8').includes(marker)).then(() => {
      controller.abort(new Error('the client gave up'));
      // The call goes on without its client (a durable agent's does): its tool, waiting for the client to go,
      // is told it went, and finishes.
      writeFileSync(`${lane.killFile}.${trial.session}.gone`, '');
    });
  }
  try {
    return await sendOnce(server, trial, kill === 'reply-lost', controller.signal);
  } finally {
    answered = true;
  }
}

/** Resolves once `check()` holds, polling every 20 ms. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 20));
}

async function sendOnce(
  server: Server,
  trial: Trial,
  loseReply: boolean,
  signal: AbortSignal,
): Promise<Answer> {
  const { session, key, input } = trial;
  if (trial.mode === 'client' || trial.mode === 'stream') {
    const client = new AsyncHTTPAgentClient({ url: server.url });
    try {
      let reply: AgentMessage;
      if (trial.mode === 'client')
        reply = await client.call(input, { sessionId: session, callId: key, signal });
      else {
        const stream = client.stream(input, { sessionId: session, callId: key, signal });
        let last: AgentMessage | undefined;
        for await (const chunk of stream) last = chunk;
        reply = last!;
      }
      return { reply: { content: reply.content, extraInfo: reply.extraInfo as Record<string, unknown> } };
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status !== undefined) {
        return {
          status,
          detail: `${(error as Error).message} ${JSON.stringify((error as { body?: unknown }).body)}`,
        };
      }
      return { cut: String((error as Error).message) };
    } finally {
      client.close();
    }
  }
  let response: Response;
  try {
    response = await fetch(`${server.url}/chat_completion`, {
      signal,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(trial.mode === 'header' ? { 'idempotency-key': key } : {}),
      },
      body: JSON.stringify({
        message: [input],
        session_id: session,
        ...(trial.mode === 'body' ? { call_id: key } : {}),
      }),
    });
  } catch (error) {
    return { cut: String((error as Error).cause ?? error) };
  }
  if (loseReply) {
    // The reply was written; the server dies before the client reads it.
    server.child.kill('SIGKILL');
    await server.exited;
    await response.body?.cancel().catch(() => undefined);
    return { cut: 'the reply was lost' };
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    return { cut: String((error as Error).cause ?? error) };
  }
  if (response.status !== 200) return { status: response.status, detail: text };
  const json = JSON.parse(text) as { content: unknown; extra_info: Record<string, unknown> | null };
  return { reply: { content: json.content, extraInfo: json.extra_info } };
}

/** What one trial found. */
interface TrialResult {
  name: string;
  problems: string[];
  doubled: boolean;
  lost: boolean;
  unknown: boolean;
  /** The client's first reply was already a replay (the call had finished: the reply was lost, or a recovery finished it). */
  replayedFirst: boolean;
  /** Replies to the same request sent again that were replays of the same reply. */
  replays: number;
  killed: number;
  planned: number;
  /** The first turn was answered by the other lane's server. */
  firstElsewhere: boolean;
  /** The refund was answered by the other lane's server, after this lane's was killed. */
  retriedElsewhere: boolean;
  /** Attempts the client gave up (it closed the connection while the call ran). */
  gaveUp: number;
  errorAnswers: number;
}

function emptyResult(name: string): TrialResult {
  return {
    name,
    problems: [],
    doubled: false,
    lost: false,
    unknown: false,
    replayedFirst: false,
    replays: 0,
    killed: 0,
    planned: 0,
    firstElsewhere: false,
    retriedElsewhere: false,
    gaveUp: 0,
    errorAnswers: 0,
  };
}

/** The question a trial's session gets first, and what it is answered. */
function firstQuestion(trial: Trial): { key: string; input: string; reply: string } {
  return {
    key: `${trial.session}/first`,
    input: `how is order ${trial.session}?`,
    reply: `All is well with order ${trial.session}.`,
  };
}

/** The live server of the other lane of the same store (a replica of this lane's), if it has one now. */
function otherServer(lane: Lane, lanes: readonly Lane[]): Server | undefined {
  const server = lanes.find((each) => each !== lane && each.agent === lane.agent)?.server;
  return server?.ended === undefined ? server : undefined;
}

/**
 * Sends the trial's first turn (no kill armed), to the other lane's server when it runs; its reply's content,
 * or what went wrong.
 */
async function firstTurn(
  lane: Lane,
  lanes: readonly Lane[],
  trial: Trial,
  result: TrialResult,
): Promise<unknown> {
  const { key, input } = firstQuestion(trial);
  const question: Trial = { ...trial, key, input, mode: 'header' };
  const other = otherServer(lane, lanes);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    // The other lane's server may die meanwhile (its own trial's kill): then this lane's answers, same key.
    const server = attempt === 0 && other !== undefined ? other : await lane.serve();
    const answer = await send(lane, server, question, undefined);
    if ('reply' in answer) {
      result.firstElsewhere = server === other;
      return answer.reply.content;
    }
    if (server !== other) return answer;
  }
  return 'no answer';
}

async function runTrial(lane: Lane, trial: Trial, lanes: readonly Lane[]): Promise<TrialResult> {
  const name = `${lane.name}/${trial.session} ${trial.mode} ${trial.kills
    .map((kill) =>
      kill === 'reply-lost' ? kill : `${kill.hang ? 'client gone at ' : ''}${kill.point}#${kill.n}`,
    )
    .join(' then ')}`;
  const result = emptyResult(name);
  result.planned = trial.kills.length;
  const { problems } = result;
  let reply: { content: unknown; extraInfo: Record<string, unknown> | null } | undefined;
  let next = 0;
  // What goes wrong next: the trial's next kill point.
  const disrupted = () => {
    next++;
    lane.arm(trial.session, trial.kills[next]);
  };
  const killed = () => {
    result.killed++;
    disrupted();
  };
  // A first turn, answered without a tool: by the other lane's server when it runs (so a server that later
  // recovers or retries the refund may hold the session as it was before it), else by this lane's.
  const earlier = await firstTurn(lane, lanes, trial, result);
  if (typeof earlier !== 'string') {
    problems.push(`the first turn got ${JSON.stringify(earlier)}`);
    return result;
  }
  lane.arm(trial.session, trial.kills[0]);
  let elsewhere = trial.elsewhere;
  for (let attempt = 0; attempt < MAX_ATTEMPTS && reply === undefined; attempt++) {
    // After the first kill, the retry may land on the other lane's server, as a load balancer would send it.
    const other = elsewhere && result.killed > 0 ? otherServer(lane, lanes) : undefined;
    if (other !== undefined) elsewhere = false;
    const server = other ?? (await lane.serve(killed));
    const kill = other === undefined ? trial.kills[next] : undefined;
    const answer = await send(lane, server, trial, kill);
    if ('reply' in answer) {
      result.retriedElsewhere = other !== undefined;
      reply = answer.reply;
      break;
    }
    // The other server died meanwhile (its own trial's kill, or its lane's end): this lane's takes the retry.
    if (other !== undefined && 'cut' in answer) continue;
    if ('status' in answer) {
      result.errorAnswers++;
      // A call whose lease another server took (this one was too slow to renew it, on a busy machine) stops: the
      // client sends it again with the same key. Any other error answer is a failure.
      if (answer.status === 500 && /StoreConflictError/.test(answer.detail)) continue;
      problems.push(`attempt ${attempt} answered ${answer.status}: ${answer.detail.slice(0, 300)}`);
      break;
    }
    if (kill !== undefined && kill !== 'reply-lost' && kill.hang) {
      // The client gave up; it sends the request again, to the same server.
      result.gaveUp++;
      disrupted();
      continue;
    }
    // The connection was cut: the server was killed.
    const how = await lane.died();
    if (how !== 'SIGKILL') problems.push(`the server ended ${how} (${answer.cut}): ${server.output()}`);
    killed();
  }
  // The server that answered may have been armed to die later (a kill point it never reached): disarm it.
  lane.arm(trial.session, undefined);
  const refunds = refundsOf(trial.session);
  result.doubled = refunds > 1;
  if (result.doubled) problems.push(`refunded ${refunds} times`);
  if (reply === undefined) {
    result.lost = true;
    problems.push('never answered');
    return result;
  }
  result.replayedFirst = reply.extraInfo?.idempotentReplay === true;
  const content = String(reply.content);
  const done = `Refund of order ${trial.session}: refunded ${trial.cents} cents`;
  // A call whose client gave up goes on to its end (no server died: nothing made its outcome unknown).
  if (result.gaveUp > 0 && result.killed === 0 && content !== done)
    problems.push('the client gave up, and its call did not go on to its end');
  if (content === done) {
    if (refunds !== 1) {
      result.lost = true;
      problems.push(`the reply says refunded, and the refund ran ${refunds} times`);
    }
  } else if (
    /^Refund of order \S+: Refund was running when the process stopped, and its outcome is unknown/.test(
      content,
    )
  ) {
    result.unknown = true;
  } else problems.push(`unexpected reply ${JSON.stringify(content)}`);
  if (reply.extraInfo?.callId !== trial.key)
    problems.push(`the reply's callId is ${reply.extraInfo?.callId}`);

  // The session's memory: the turn exactly once, ending with the reply the client got. Then the same request
  // again: the same reply, from the journal; nothing runs, the memory stays. (The server that answered may die
  // still, at a kill point it reached after its answer: then on the next one.)
  for (let tries = 0; ; tries++) {
    const server = await lane.serve();
    const found = await checkAfter(lane, server, trial, content, refunds).catch(
      (error: unknown) => error as Error,
    );
    if (!(found instanceof Error)) {
      problems.push(...found.problems);
      result.lost ||= found.lost;
      result.replays += found.replayed ? 1 : 0;
      break;
    }
    if (tries > 0 || (await server.exited) !== 'SIGKILL') {
      problems.push(`checking the session failed: ${found.message}`);
      break;
    }
    lane.server = undefined;
    result.killed++;
  }
  if (problems.length > 0) {
    // Every server's, the other lane's too (its start-up recovery may have taken the call over).
    const events = lanes.flatMap((each) =>
      readFileSync(each.events, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith(`${trial.session} `))
        .map((line) => `${each.name}:${line.slice(trial.session.length + 1)}`),
    );
    problems.push(`events: ${events.join(', ')}`);
  }
  return result;
}

/** The checks of a trial that got its reply; throws when the server is gone. */
async function checkAfter(
  lane: Lane,
  server: Server,
  trial: Trial,
  content: string,
  refunds: number,
): Promise<{ problems: string[]; lost: boolean; replayed: boolean }> {
  const problems: string[] = [];
  let lost = false;
  const client = new AsyncHTTPAgentClient({ url: server.url });
  try {
    const before = (await client.stateDict(trial.session)) as Record<
      string,
      { content: unknown; sender: string }[]
    >;
    const top = (before.memory ?? []).map((m) => [m.sender, m.content]);
    const first = firstQuestion(trial);
    const turns = [
      ['user', first.input],
      [lane.agent, first.reply],
      ['user', trial.input],
      [lane.agent, content],
    ];
    if (JSON.stringify(top) !== JSON.stringify(turns)) {
      lost = true;
      problems.push(`memory holds ${JSON.stringify(top)}`);
    }
    const inner = (before['agent.memory'] ?? []).map((m) => m.sender);
    if (inner.join() !== ['user', lane.agent, 'user', lane.agent, 'ActionExecutor', lane.agent].join()) {
      problems.push(`the inner agent's memory holds messages of ${inner.join()}`);
    }
    const again = await send(lane, server, { ...trial, mode: 'header' }, undefined);
    if ('cut' in again) throw new Error(again.cut);
    const replayed =
      'reply' in again && again.reply.content === content && again.reply.extraInfo?.idempotentReplay === true;
    if (!replayed) problems.push(`sent again, got ${JSON.stringify(again)}`);
    const after = await client.stateDict(trial.session);
    if (JSON.stringify(after) !== JSON.stringify(before)) problems.push('the memory changed when sent again');
    if (refundsOf(trial.session) !== refunds) problems.push('the refund ran again when sent again');
    return { problems, lost, replayed };
  } finally {
    client.close();
  }
}

/** The file every server's Refund tool appends its refunds to: `<order> <cents>` lines. */
function refundsFile(): string {
  return join(dir, 'refunds');
}

/** How often the order of `session` was refunded. */
function refundsOf(session: string): number {
  return readFileSync(refundsFile(), 'utf8')
    .split('\n')
    .filter((line) => line.split(' ')[0] === session).length;
}

describe('retry after a crash, over HTTP', () => {
  it('a client re-sending with the same idempotency key after the server was killed: no refund twice, no turn lost', async () => {
    const kinds: Kind[] = postgres ? ['sqlite', 'redis', 'postgres'] : ['sqlite', 'redis'];
    const started = performance.now();
    const lanes = kinds.flatMap((kind) =>
      Array.from({ length: LANES_PER_STORE }, (_, i) => new Lane(kind, i)),
    );
    const results = await Promise.all(
      lanes.map(async (lane, l) => {
        const count = Math.ceil(TRIALS / lanes.length);
        const found: TrialResult[] = [];
        try {
          for (let i = 0; i < count; i++) {
            const trial = plan(lane.name, i, SEED + l * 1000 + i);
            found.push(
              await runTrial(lane, trial, lanes).catch((error: unknown) => ({
                ...emptyResult(`${lane.name}/${trial.session}`),
                problems: [`the trial failed: ${(error as Error).stack}`],
              })),
            );
          }
        } finally {
          await lane.stop();
        }
        return found;
      }),
    );
    const all = results.flat();
    const failed = all.filter((r) => r.problems.length > 0);
    const sum = (f: (r: TrialResult) => number | boolean) => all.reduce((n, r) => n + Number(f(r)), 0);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `retry-after-crash trials over HTTP: ${all.length} trials (${kinds.join(', ')}; ${lanes.length} lanes), ` +
        `${sum((r) => r.killed > 0)} with the server killed, ${sum((r) => r.gaveUp > 0)} with the client giving up; ` +
        `${sum((r) => r.killed)} servers killed (of ${sum((r) => r.planned)} planned: some points are not reached again), ` +
        `${lanes.reduce((n, lane) => n + lane.started, 0)} started; ` +
        `doubled: ${sum((r) => r.doubled)}, lost: ${sum((r) => r.lost)}, outcome unknown: ${sum((r) => r.unknown)}, ` +
        `first reply a replay: ${sum((r) => r.replayedFirst)}, replays: ${sum((r) => r.replays)}, ` +
        `first turn on the other server: ${sum((r) => r.firstElsewhere)}, refund answered by the other server: ${sum((r) => r.retriedElsewhere)}, ` +
        `error answers: ${sum((r) => r.errorAnswers)}, recoveries fenced off: ${lanes.reduce((n, lane) => n + lane.fenced, 0)}, ` +
        `failed: ${failed.length}; ${seconds} s`,
    );
    expect(failed.slice(0, 5).map((r) => `${r.name}: ${r.problems.join('; ')}`)).toEqual([]);
    expect(lanes.flatMap((lane) => lane.recoveryErrors)).toEqual([]);
    expect(sum((r) => r.doubled)).toBe(0);
    expect(sum((r) => r.lost)).toBe(0);
    expect(sum((r) => r.replays)).toBe(all.length);
    expect(sum((r) => r.killed > 0)).toBeGreaterThanOrEqual(100);
  }, 600_000);

  it('lagent serve stopped while it recovers a call at start-up finishes that call before it closes its store', async () => {
    const lane = new Lane('sqlite', 9, 'refunds-shutdown');
    const session = 'shutdown';
    const trial: Trial = {
      session,
      key: `${session}/key`,
      input: `refund order ${session} for 500 cents`,
      cents: 500,
      mode: 'header',
      kills: [],
      elsewhere: false,
    };
    try {
      // The first server dies once the model's answer (a Refund) is journaled, before the tool starts.
      lane.arm(session, { point: 'journal:model:after', n: 1 });
      const first = await lane.serve();
      expect(await send(lane, first, trial, undefined)).toHaveProperty('cut');
      expect(await lane.died()).toBe('SIGKILL');
      // The next one recovers the call at start-up; its Refund waits until told to go on, and meanwhile the
      // server is told to stop.
      lane.arm(session, { point: 'tool:before', n: 1, hold: true });
      const second = await lane.serve();
      await until(() => readFileSync(lane.events, 'utf8').includes(`${session} tool:before HANGING`));
      second.child.kill('SIGTERM');
      await until(() => second.output().includes('SIGTERM, shutting down'));
      writeFileSync(`${lane.killFile}.release`, '');
      expect(await second.exited).toBe(0);
      expect(second.output()).not.toMatch(/recovering .* failed/);
      lane.server = undefined;
      // It finished the call first: refunded once, and the same request gets the reply from the journal.
      expect(refundsOf(session)).toBe(1);
      lane.arm(session, undefined);
      const third = await lane.serve();
      expect(await send(lane, third, trial, undefined)).toEqual({
        reply: {
          content: `Refund of order ${session}: refunded 500 cents`,
          extraInfo: { callId: trial.key, idempotentReplay: true },
        },
      });
    } finally {
      await lane.stop();
    }
  }, 60_000);
});
