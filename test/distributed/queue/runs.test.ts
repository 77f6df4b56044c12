import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { joinRun, RunFailedError, type RunLogEvent } from 'lagent-ts';
import { HTTPAgentServer } from 'lagent-ts/distributed/http';
import { AsyncQueueAgent } from 'lagent-ts/distributed/queue';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, type RunningCli, startCli } from '../../cli/helpers';
import { type GatedModel, startGatedModel } from '../../helpers/gated-model';
import { openSSE, type SSEEvent } from '../../helpers/sse';
import { type RedisServer, startRedis } from './redis-server';

/**
 * Runs on the queue (`AsyncQueueAgent.start`), executed by `lagent worker` processes: the run's log is in the
 * queue's Redis, so a client that did not start it (another connection) follows it; a worker SIGKILLed mid-run
 * leaves it to the next, which goes on in the same log without running its tool again; cancel reaches the
 * worker running it (its model request is aborted) or removes a job no worker took.
 */

const AGENT = `${FIXTURES}runs-agent.ts`;
const dir = mkdtempSync(join(tmpdir(), 'lagent-queue-runs-'));
let redis: RedisServer;
const workers: RunningCli[] = [];
const models: GatedModel[] = [];
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop('SIGKILL');
  await Promise.all(open.splice(0).map((item) => item.close()));
  for (const model of models.splice(0)) await model.close();
});
afterAll(async () => {
  await redis?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The model: a Send tool call for the first request of a call, then the text, gated. */
async function model(): Promise<GatedModel> {
  const gated = await startGatedModel((body) => {
    const messages = body.messages as { role: string }[];
    return messages.at(-1)?.role === 'user'
      ? { toolCalls: [{ id: 'call_1', name: 'Send', arguments: { to: 'bob' } }] }
      : { content: ['Sent ', 'it ', 'to ', 'bob.'] };
  });
  models.push(gated);
  return gated;
}

/** `lagent worker` on `queue`, its durable journal in the same Redis. */
async function worker(queue: string, env: Record<string, string>): Promise<RunningCli> {
  const cli = await startCli(
    ['worker', '--agent', AGENT, '--redis', redis.url, '--queue', queue, '--lease-ms', '1000'],
    /serving queue/,
    { env: { ...env, DURABLE_STORE: redis.url } },
  );
  workers.push(cli);
  return cli;
}

function client(queue: string): AsyncQueueAgent {
  const agent = new AsyncQueueAgent({ queue, connection: redis.url });
  open.push(agent);
  return agent;
}

/** Reads events until one matches (included). */
async function readUntil(events: AsyncIterator<RunLogEvent>, match: (event: RunLogEvent) => boolean) {
  const seen: RunLogEvent[] = [];
  for (let step = await events.next(); !step.done; step = await events.next()) {
    seen.push(step.value);
    if (match(step.value)) return seen;
  }
  return seen;
}

async function all(events: AsyncIterable<RunLogEvent>): Promise<RunLogEvent[]> {
  const seen: RunLogEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

const isText = (event: RunLogEvent) =>
  event.type === 'chunk' &&
  typeof (event.data as { content?: unknown }).content === 'string' &&
  (event.data as { content: string }).content !== '';

const seqs = (events: RunLogEvent[]) => events.map((event) => event.seq);

describe('runs on the queue', () => {
  it("a queued run's log is followed by another client, from any event on: the same sequence as its starter's", async () => {
    const queue = 'runs-watch';
    const gated = await model();
    await worker(queue, { MODEL_URL: gated.baseURL, SIDE_EFFECTS: join(dir, 'watch.txt') });
    const starter = client(queue);
    const run = starter.start('mail bob', { sessionId: 'watchers' });
    await run.ready;
    // Another connection, which did not start the run, follows it from its id alone.
    const other = client(queue);
    const joined = joinRun(other.runLog(), run.id, 'watchers');
    const watching = joined.events()[Symbol.asyncIterator]();
    const text = await gated.request(1);
    const before = await readUntil(watching, isText);
    await watching.return?.(undefined);
    text.release(3);
    const reply = await run.result;
    expect(reply.content).toBe('Sent it to bob.');
    const rest = await all(joined.events(before.at(-1)!.seq));
    const whole = await all(run.events());
    expect([...before, ...rest]).toEqual(whole);
    expect(seqs(whole)).toEqual(whole.map((_, i) => i + 1));
    expect(whole.at(-1)).toMatchObject({ type: 'message', data: { content: 'Sent it to bob.' } });
    expect(whole.some((e) => e.type === 'agent' && (e.data as { kind?: string }).kind === 'toolEnd')).toBe(
      true,
    );
    expect((await joined.result).content).toBe('Sent it to bob.');
    expect((await other.runLog().store.readRun(other.runLog().namespace, run.id))?.status).toBe('done');
  });

  it('a worker SIGKILLed mid-run: the next worker finishes it in the same log without running the tool again; a client that rejoins sees it end', async () => {
    const queue = 'runs-killed';
    const gated = await model();
    const effects = join(dir, 'killed.txt');
    const env = { MODEL_URL: gated.baseURL, SIDE_EFFECTS: effects, LEASE_MS: '300' };
    const doomed = await worker(queue, env);
    const run = client(queue).start('mail bob', { sessionId: 'kill' });
    const watching = run.events()[Symbol.asyncIterator]();
    // The tool ran, and the model is answering: the client saw its first words.
    const text = await gated.request(1);
    const seen = await readUntil(watching, isText);
    await watching.return?.(undefined);
    expect(seen.some((e) => e.type === 'agent' && (e.data as { kind?: string }).kind === 'toolEnd')).toBe(
      true,
    );
    expect(await doomed.stop('SIGKILL')).not.toBe(0);
    await text.closed;

    await worker(queue, env);
    // The job is taken up again once its lock ran out: the call is replayed (the tool and the first model answer
    // from its journal), and the model is asked again.
    const again = await gated.request(2);
    again.release(4);
    // Another client rejoins from the last event it saw.
    const rest = await all(joinRun(client(queue).runLog(), run.id).events(seen.at(-1)!.seq));
    expect(seqs(rest)).toEqual(rest.map((_, i) => seen.at(-1)!.seq + i + 1));
    const status = rest.find((e) => e.type === 'status');
    expect(status?.data).toMatchObject({ recovered: true });
    expect(rest.at(-1)).toMatchObject({ type: 'message', data: { content: 'Sent it to bob.' } });
    expect((await run.result).content).toBe('Sent it to bob.');
    expect(readFileSync(effects, 'utf8')).toBe('send:bob\n');
    expect(gated.requests).toHaveLength(3);
  });

  it('a plain call (not a run) of a durable agent whose worker was SIGKILLed mid-call: the next worker replays it, its tool runs once', async () => {
    const queue = 'calls-killed';
    const gated = await model();
    const effects = join(dir, 'call-killed.txt');
    const env = { MODEL_URL: gated.baseURL, SIDE_EFFECTS: effects, LEASE_MS: '300' };
    const doomed = await worker(queue, env);
    const call = client(queue).call('mail bob', { sessionId: 'plain-kill' });
    const text = await gated.request(1);
    await text.sentAtLeast(1);
    expect(await doomed.stop('SIGKILL')).not.toBe(0);
    await worker(queue, env);
    // Whatever the model is asked from now on is answered whole.
    void (async () => {
      for (let i = 2; i < 6; i++) (await gated.request(i)).release(4);
    })();
    expect((await call).content).toBe('Sent it to bob.');
    expect(readFileSync(effects, 'utf8')).toBe('send:bob\n');
    expect(gated.requests).toHaveLength(3);
  });

  it("cancel stops the worker's model request; the run ends cancelled", async () => {
    const queue = 'runs-cancel';
    const gated = await model();
    await worker(queue, { MODEL_URL: gated.baseURL, SIDE_EFFECTS: join(dir, 'cancel.txt') });
    const run = client(queue).start('mail bob', { sessionId: 'stop' });
    const text = await gated.request(1);
    await text.sentAtLeast(1);
    await run.cancel();
    await text.closed;
    expect(text.aborted).toBe(true);
    const error = await run.result.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RunFailedError);
    expect(error).toMatchObject({ status: 'cancelled' });
    const events = await all(run.events());
    expect(events.at(-1)).toMatchObject({ type: 'error' });
    expect((await run.info())?.status).toBe('cancelled');
  });

  it('cancel of a run no worker took removes its job: it never runs', async () => {
    const queue = 'runs-cancel-queued';
    const agent = client(queue);
    const run = agent.start('mail bob', { sessionId: 'idle' });
    await run.ready;
    expect((await run.info())?.status).toBe('queued');
    expect((await run.cancel())?.status).toBe('cancelled');
    expect(await run.result.catch((caught: unknown) => caught)).toMatchObject({ status: 'cancelled' });
    const gated = await model();
    await worker(queue, { MODEL_URL: gated.baseURL, SIDE_EFFECTS: join(dir, 'idle.txt') });
    // A run queued after it is the first the worker serves: the cancelled run's job was removed.
    const next = agent.start('mail carol', { sessionId: 'after' });
    (await gated.request(1)).release(3);
    expect((await next.result).content).toBe('Sent it to bob.');
    expect(gated.requests.map((request) => JSON.stringify(request.body).includes('mail bob'))).toEqual([
      false,
      false,
    ]);
    expect((await run.info())?.status).toBe('cancelled');
  });

  it('an HTTPAgentServer serving the queue serves its runs: POST /runs, the stream from any event on, cancel', async () => {
    const queue = 'runs-http';
    const gated = await model();
    await worker(queue, { MODEL_URL: gated.baseURL, SIDE_EFFECTS: join(dir, 'http.txt') });
    const server = new HTTPAgentServer({ agent: client(queue), port: 0, onError: () => {} });
    open.push({ close: () => server.close({ timeout: 2_000 }) });
    const url = await server.listen();
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    const started = await post('/runs', { message: ['mail bob'], session_id: 'web' });
    expect(started.status).toBe(202);
    const { runId } = (await started.json()) as { runId: string };
    const first = await openSSE(`${url}/runs/${runId}/stream`);
    (await gated.request(1)).release(3);
    const events = await first.rest();
    expect(events.map((event) => Number(event.id))).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)!.event).toBe('message');
    expect(JSON.parse(events.at(-1)!.data).content).toBe('Sent it to bob.');
    const later = await openSSE(`${url}/runs/${runId}/stream`, { 'last-event-id': events.at(-3)!.id! });
    expect(await later.rest()).toEqual(events.slice(-2));
    expect(((await (await fetch(`${url}/runs/${runId}`)).json()) as { status: string }).status).toBe('done');

    // Cancelled over HTTP: the worker's model request is aborted.
    const second = await post('/runs', { message: ['mail carol'], session_id: 'web' });
    const { runId: stopped } = (await second.json()) as { runId: string };
    const text = await gated.request(3);
    await text.sentAtLeast(1);
    expect((await post(`/runs/${stopped}/cancel`, {})).ok).toBe(true);
    await text.closed;
    expect(text.aborted).toBe(true);
    const rest: SSEEvent[] = await (await openSSE(`${url}/runs/${stopped}/stream`)).rest();
    expect(rest.at(-1)!.event).toBe('error');
    expect(((await (await fetch(`${url}/runs/${stopped}`)).json()) as { status: string }).status).toBe(
      'cancelled',
    );
  });
});
