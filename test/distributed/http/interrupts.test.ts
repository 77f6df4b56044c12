import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type AgentMessage, AsyncAgent, interruptsOf, resumeWith } from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentClient } from 'lagent-ts/distributed/http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, NODE_ARGS, ROOT } from '../../cli/helpers';
import { startProcess } from '../../helpers/processes';
import { type Child, HERE, startChild } from './processes';

/*
 * Interrupts over HTTP, with the served agent in its own process (fixtures/approval-agent.ts): the interrupt
 * reply is the response body, the resume message an ordinary POST; a client inside a local agent re-roots the
 * remote's interrupts in the local tree and resumes the remote with its own ids.
 */

const FIXTURE = `${HERE}fixtures/approval-agent.ts`;
let dir: string;
const children: Child[] = [];
const clients: { close(): void }[] = [];

async function serve(args: string[]): Promise<Child & { url: string }> {
  const child = await startChild(process.execPath, ['--import', 'tsx', FIXTURE, ...args], /^\{"url"/);
  children.push(child);
  return Object.assign(child, { url: (JSON.parse(child.line) as { url: string }).url });
}

function client<T extends { close(): void }>(made: T): T {
  clients.push(made);
  return made;
}

/** `lagent serve` of approval-module.ts with its sessions in `store`. */
async function serveCli(store: string, runs: string): Promise<Child & { url: string }> {
  const cli = await startProcess(
    process.execPath,
    [...NODE_ARGS, 'serve', '--agent', `${HERE}fixtures/approval-module.ts`, '--port', '0', '--store', store],
    /listening on http:/,
    { env: childEnv({ RUNS: runs }), cwd: ROOT, timeoutMs: 30_000, graceMs: 5_000 },
  );
  children.push(cli);
  return Object.assign(cli, { url: /(http:\/\/\S+)/.exec(cli.line)![1]! });
}

const runsOf = (file: string) => readFileSync(file, 'utf8').split('\n').filter(Boolean);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-http-interrupts-'));
});
afterEach(async () => {
  for (const made of clients.splice(0)) made.close();
  await Promise.all(children.splice(0).map((child) => child.stop()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('HTTPAgentServer: interrupts and resume', () => {
  it('lagent serve --store: the interrupt reply is the body; after a SIGKILL and a restart, the resume finishes the call', async () => {
    const store = `sqlite:${join(dir, 'sessions.db')}`;
    const runs = join(dir, 'runs-1');
    const first = await serveCli(store, runs);
    const remote = client(new AsyncHTTPAgentClient({ url: first.url }));
    const reply = await remote.call('/tmp/a', { sessionId: 'paused' });
    expect(reply.type).toBe('interrupt');
    expect(interruptsOf(reply)).toEqual([
      {
        id: 'del_1',
        kind: 'approval',
        path: '',
        toolCall: { id: 'del_1', name: 'Delete', arguments: { path: '/tmp/a' } },
      },
    ]);
    expect(await first.stop('SIGKILL')).not.toBe(0);
    const second = await serveCli(store, runs);
    const again = client(new AsyncHTTPAgentClient({ url: second.url }));
    const done = await again.call(resumeWith([{ id: 'del_1', approve: true }]), { sessionId: 'paused' });
    expect(done.content).toBe('done: deleted /tmp/a');
    expect(runsOf(runs)).toEqual(['/tmp/a']);
    // The session holds the whole turn: the user's message and the final answer (the resume is not a message).
    const memory = (await again.stateDict('paused')).memory as { content: unknown }[];
    expect(memory.map((m) => m.content)).toEqual(['/tmp/a', 'done: deleted /tmp/a']);
  }, 60_000);

  it('streaming: the interrupt is the final event; a declined resume streams the rest', async () => {
    const runs = join(dir, 'runs-2');
    const server = await serve(['--kind', 'stream', '--runs', runs]);
    const remote = client(new AsyncHTTPAgentClient({ url: server.url }));
    let last: AgentMessage | undefined;
    for await (const chunk of remote.stream('/tmp/b', { sessionId: 's' })) last = chunk;
    const [ask] = interruptsOf(last);
    expect(ask).toMatchObject({ id: 'del_1', path: '', toolCall: { name: 'Delete' } });
    const chunks: AgentMessage[] = [];
    const decline = resumeWith([{ id: ask!.id, approve: false, reason: 'keep it' }]);
    for await (const chunk of remote.stream(decline, { sessionId: 's' })) chunks.push(chunk);
    expect(String(chunks.at(-1)!.content)).toMatch(/^done: .*declined.*keep it/);
    expect(existsSync(runs)).toBe(false);
  });
});

describe("HTTPAgentServer: resumes it cannot take are the caller's mistake (400) and change nothing", () => {
  it('a malformed resume, two decisions for one id, and a decision for an id nothing waits for: 400', async () => {
    const runs = join(dir, 'runs-400');
    const server = await serve(['--kind', 'async', '--runs', runs]);
    const remote = client(new AsyncHTTPAgentClient({ url: server.url }));
    const [ask] = interruptsOf(await remote.call('/tmp/c', { sessionId: 'bad' }));
    const post = async (message: unknown) => {
      const response = await fetch(`${server.url}/chat_completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message, session_id: 'bad' }),
      });
      return { status: response.status, body: (await response.json()) as { detail: string; error: string } };
    };
    const resume = (decisions: unknown) => ({
      role: 'user',
      type: 'resume',
      content: '',
      formatted: { decisions },
    });
    const malformed = await post(resume([{ id: 42, approve: 'yes' }]));
    expect(malformed).toMatchObject({ status: 400, body: { error: 'ValidationError' } });
    const twice = await post(
      resume([
        { id: ask!.id, approve: false },
        { id: ask!.id, approve: true },
      ]),
    );
    expect(twice).toMatchObject({ status: 400, body: { error: 'ValidationError' } });
    const unknown = await post(resume([{ id: 'del_9', approve: true }]));
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toContain(ask!.id);
    expect(existsSync(runs)).toBe(false);
    // The call still waits for its own decision.
    const done = await remote.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 'bad' });
    expect(String(done.content)).toMatch(/^done/);
    expect(runsOf(runs)).toEqual(['/tmp/c']);
  });
});

describe('a client inside a local agent: remote interrupts in the local tree', () => {
  it('async client: path is the local path joined with the remote one, and resuming the local root resumes the remote', async () => {
    const runs = join(dir, 'runs-3');
    const server = await serve(['--kind', 'nested', '--runs', runs]);
    const sent: unknown[] = [];
    class Team extends AsyncAgent {
      remote = client(new AsyncHTTPAgentClient({ url: server.url }));
      override async forward(messages: AgentMessage[]) {
        sent.push(messages.map((m) => m.content));
        const reply = await this.remote.call(messages, { sessionId: 'team' });
        return `team: ${String(reply.content)}`;
      }
    }
    class Root extends AsyncAgent {
      team = new Team({ name: 'team' });
      override async forward(messages: AgentMessage[]) {
        const reply = await this.team.call(messages);
        return `root: ${String(reply.content)}`;
      }
    }
    const root = new Root({ name: 'root' });
    const reply = await root.call('/tmp/c');
    expect(reply.type).toBe('interrupt');
    expect(interruptsOf(reply)).toEqual([
      {
        id: 'team.remote.worker:del_1',
        kind: 'approval',
        path: 'team.remote.worker',
        toolCall: { id: 'del_1', name: 'Delete', arguments: { path: '/tmp/c' } },
      },
    ]);
    expect(existsSync(runs)).toBe(false);
    const done = await root.call(resumeWith([{ id: 'team.remote.worker:del_1', approve: true }]));
    expect(done.content).toBe('root: team: composite: done: deleted /tmp/c');
    expect(runsOf(runs)).toEqual(['/tmp/c']);
  });

  it('sync client in a sync agent: a declined resume reaches the remote with its own id', async () => {
    const server = await serve(['--runs', join(dir, 'runs-4')]);
    class Desk extends Agent {
      backend = client(new HTTPAgentClient({ url: server.url, timeout: 10_000 }));
      override forward(messages: AgentMessage[]) {
        return `desk: ${String(this.backend.call(messages, { sessionId: 'desk' }).content)}`;
      }
    }
    const desk = new Desk({ name: 'desk' });
    const [ask] = interruptsOf(desk.call('/tmp/d'));
    expect(ask).toMatchObject({ id: 'backend:del_1', path: 'backend' });
    const done = desk.call(resumeWith([{ id: ask!.id, approve: false, reason: 'no' }]));
    expect(String(done.content)).toMatch(/^desk: done: .*declined.*no/);
  });

  it('stream(): a streamed remote interrupt stops the local call the same way; the resume streams on', async () => {
    const runs = join(dir, 'runs-5');
    const server = await serve(['--kind', 'stream', '--runs', runs]);
    class Reader extends AsyncAgent {
      remote = client(new AsyncHTTPAgentClient({ url: server.url }));
      override async forward(messages: AgentMessage[]) {
        let last: AgentMessage | undefined;
        for await (const chunk of this.remote.stream(messages, { sessionId: 'r' })) last = chunk;
        return `reader: ${String(last?.content)}`;
      }
    }
    const reader = new Reader({ name: 'reader' });
    const [ask] = interruptsOf(await reader.call('/tmp/f'));
    expect(ask).toMatchObject({ id: 'remote:del_1', path: 'remote' });
    expect(existsSync(runs)).toBe(false);
    const done = await reader.call(resumeWith([{ id: 'remote:del_1', approve: true }]));
    expect(done.content).toBe('reader: done: deleted /tmp/f');
    expect(runsOf(runs)).toEqual(['/tmp/f']);
  });

  it('called outside any agent, the client returns the remote interrupt reply as it is', async () => {
    const server = await serve([]);
    const remote = client(new AsyncHTTPAgentClient({ url: server.url }));
    const reply = await remote.call('/tmp/e', { sessionId: 'x' });
    expect(interruptsOf(reply).map((i) => i.id)).toEqual(['del_1']);
  });
});
