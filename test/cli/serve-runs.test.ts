import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type GatedModel, startGatedModel } from '../helpers/gated-model';
import { openSSE, type SSEEvent } from '../helpers/sse';
import { FIXTURES, type RunningCli, startCli } from './helpers';

/**
 * Runs served by `lagent serve --store sqlite:...`, in real processes: clients that leave and rejoin, and a
 * server SIGKILLed in the middle of a durable run with a tool, started again: the run finishes in the same log
 * without running the tool again, and a client that rejoins sees it end.
 */

const AGENT = `${FIXTURES}runs-agent.ts`;
const dir = mkdtempSync(join(tmpdir(), 'lagent-serve-runs-'));
const running: RunningCli[] = [];
const models: GatedModel[] = [];

afterAll(async () => {
  for (const cli of running) await cli.stop('SIGKILL');
  for (const model of models) await model.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The model: a Send tool call for the first request of a session's call, then the text, gated. */
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

async function serve(db: string, env: Record<string, string>): Promise<{ cli: RunningCli; url: string }> {
  const cli = await startCli(
    ['serve', '--agent', AGENT, '--port', '0', '--store', `sqlite:${db}`, '--lease-ms', '300'],
    /listening on http:/,
    { env: { ...env, DURABLE_STORE: db } },
  );
  running.push(cli);
  return { cli, url: /(http:\/\/\S+)/.exec(cli.line)![1]! };
}

async function startRun(url: string, sessionId: string): Promise<string> {
  const response = await fetch(`${url}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: ['mail bob'], session_id: sessionId }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { runId: string }).runId;
}

async function readUntil(stream: { next(): Promise<SSEEvent | undefined> }, match: (e: SSEEvent) => boolean) {
  const seen: SSEEvent[] = [];
  for (let event = await stream.next(); event !== undefined; event = await stream.next()) {
    seen.push(event);
    if (match(event)) return seen;
  }
  return seen;
}

const isText = (event: SSEEvent) =>
  (event.event === 'chunk' || event.event === 'delta') &&
  typeof JSON.parse(event.data).content === 'string' &&
  JSON.parse(event.data).content !== '';

const ids = (events: SSEEvent[]) => events.map((event) => Number(event.id));

describe('lagent serve: runs', () => {
  it('two clients watch a run; one leaves and rejoins from its last event: the same sequence, nothing lost or repeated', async () => {
    const gated = await model();
    const env = { MODEL_URL: gated.baseURL, SIDE_EFFECTS: join(dir, 'watch-effects.txt') };
    const { url } = await serve(join(dir, 'watch.db'), env);
    const runId = await startRun(url, 'watchers');
    const first = await openSSE(`${url}/runs/${runId}/stream`);
    const second = await openSSE(`${url}/runs/${runId}/stream`);
    const text = await gated.request(1);
    const before = await readUntil(second, isText);
    second.close();
    text.release(3);
    const rejoined = await openSSE(`${url}/runs/${runId}/stream?after=${before.at(-1)!.id}`);
    const after = await rejoined.rest();
    const all = await first.rest();
    expect([...before, ...after]).toEqual(all);
    expect(ids(all)).toEqual(all.map((_, i) => i + 1));
    expect(JSON.parse(all.at(-1)!.data)).toMatchObject({ content: 'Sent it to bob.' });
  });

  it('SIGKILLed mid-run and started again: the run finishes in its log without running the tool again; a client that rejoins sees the end', async () => {
    const gated = await model();
    const db = join(dir, 'killed.db');
    const effects = join(dir, 'killed-effects.txt');
    const env = { MODEL_URL: gated.baseURL, SIDE_EFFECTS: effects };
    const first = await serve(db, env);
    const runId = await startRun(first.url, 'kill');
    const client = await openSSE(`${first.url}/runs/${runId}/stream`);
    // The tool ran, and the model is answering: the client saw its first words.
    const text = await gated.request(1);
    const seen = await readUntil(client, isText);
    expect(seen.some((e) => e.event === 'agent' && JSON.parse(e.data).kind === 'toolEnd')).toBe(true);
    expect(await first.cli.stop('SIGKILL')).not.toBe(0);
    await text.closed;
    expect(text.aborted).toBe(true);
    // The client's stream is cut with the server.
    expect(await client.rest()).toEqual([]);

    const second = await serve(db, env);
    // Recovery replays the call (the tool and the first model answer from the journal) and asks the model again.
    const again = await gated.request(2);
    again.release(4);
    const rejoined = await openSSE(`${second.url}/runs/${runId}/stream?after=${seen.at(-1)!.id}`);
    expect(rejoined.status).toBe(200);
    const rest = await rejoined.rest();
    expect(ids(rest)).toEqual(rest.map((_, i) => Number(seen.at(-1)!.id) + i + 1));
    expect(rest.find((e) => e.event === 'status')).toBeDefined();
    expect(JSON.parse(rest.find((e) => e.event === 'status')!.data)).toMatchObject({ recovered: true });
    expect(rest.at(-1)!.event).toBe('message');
    expect(JSON.parse(rest.at(-1)!.data).content).toBe('Sent it to bob.');
    expect(readFileSync(effects, 'utf8')).toBe('send:bob\n');
    expect(gated.requests).toHaveLength(3);
    const status = (await (await fetch(`${second.url}/runs/${runId}`)).json()) as { status: string };
    expect(status.status).toBe('done');
    await expect
      .poll(() => second.cli.output().stdout, { timeout: 10_000 })
      .toMatch(/recovered 1 unfinished call of 1 session/);
    expect(await second.cli.stop('SIGTERM')).toBe(0);
  });
});
