import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQLiteStore } from 'lagent-ts/stores';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURES, type RunningCli, runCli, startCli } from './helpers';

/**
 * `lagent serve --store sqlite:FILE`: a server killed with SIGKILL and started again answers every committed
 * turn, and goes on from them.
 */

const AGENT = `${FIXTURES}echo-agent.ts`;
const dir = mkdtempSync(join(tmpdir(), 'lagent-serve-store-'));
const running: RunningCli[] = [];

afterAll(async () => {
  for (const cli of running) await cli.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function serve(store: string): Promise<{ cli: RunningCli; url: string }> {
  const cli = await startCli(
    ['serve', '--agent', AGENT, '--port', '0', '--store', store],
    /listening on http:/,
  );
  running.push(cli);
  return { cli, url: /(http:\/\/\S+)/.exec(cli.line)![1]! };
}

async function chat(url: string, message: string, sessionId: number): Promise<string> {
  const response = await fetch(`${url}/chat_completion`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: [message], session_id: sessionId }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { content: string }).content;
}

describe('lagent serve --store', () => {
  it('keeps every committed turn across a SIGKILL and a restart', async () => {
    const store = `sqlite:${join(dir, 'sessions.db')}`;
    const first = await serve(store);
    expect(await chat(first.url, 'one', 7)).toBe('echo:one#1');
    expect(await chat(first.url, 'two', 7)).toBe('echo:two#3');
    expect(await chat(first.url, 'other', 8)).toBe('echo:other#1');
    expect(await first.cli.stop('SIGKILL')).not.toBe(0);

    const second = await serve(store);
    const memory = (await (await fetch(`${second.url}/memory/7`)).json()) as {
      memory: { content: string; sender: string }[];
    };
    expect(memory.memory.map((m) => m.content)).toEqual(['one', 'echo:one#1', 'two', 'echo:two#3']);
    // The restarted server goes on from the stored history: its model sees the four messages and the new one.
    expect(await chat(second.url, 'three', 7)).toBe('echo:three#5');
    expect(await chat(second.url, 'again', 8)).toBe('echo:again#3');
    expect(await second.cli.stop('SIGTERM')).toBe(0);
  });

  it('a durable agent: a call the killed server left unfinished is recovered at start, its Send not run again', async () => {
    const env = { DURABLE_DB: join(dir, 'durable.db'), SIDE_EFFECTS: join(dir, 'side-effects.txt') };
    const agent = `${FIXTURES}durable-agent.ts`;
    const first = await startCli(
      ['serve', '--agent', agent, '--port', '0', '--lease-ms', '300'],
      /listening on/,
      {
        env: { ...env, KILL_AFTER_SEND: '1' },
      },
    );
    running.push(first);
    const url = /(http:\/\/\S+)/.exec(first.line)![1]!;
    // The server dies in the middle of the call, right after its Send.
    await expect(
      fetch(`${url}/chat_completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: ['bob'], session_id: 7 }),
      }),
    ).rejects.toThrow();
    expect(await first.stop('SIGKILL')).not.toBe(0);
    // Started again, the server recovers the call (once the dead process's 300 ms lease has run out).
    const second = await startCli(
      ['serve', '--agent', agent, '--port', '0', '--lease-ms', '300'],
      /recovered 1 unfinished call of 1 session/,
      { env },
    );
    running.push(second);
    const served = /(http:\/\/\S+)/.exec(second.output().stdout)![1]!;
    const memory = (await (await fetch(`${served}/memory/7`)).json()) as {
      memory: { content: unknown; sender: string }[];
    };
    expect(memory.memory.map((m) => m.sender)).toEqual(['user', 'errands']);
    expect(readFileSync(env.SIDE_EFFECTS, 'utf8')).toBe('send:bob\n');
    expect(await second.stop('SIGTERM')).toBe(0);
  });

  it('--lease-ms is the lease of an agent whose module gives it memory: { store } without a leaseMs', async () => {
    const env = { DURABLE_DB: join(dir, 'lease.db'), SIDE_EFFECTS: join(dir, 'lease-side-effects.txt') };
    const server = await startCli(
      ['serve', '--agent', `${FIXTURES}durable-agent.ts`, '--port', '0', '--lease-ms', '300'],
      /listening on/,
      { env: { ...env, KILL_AFTER_SEND: '1' } },
    );
    running.push(server);
    const url = /(http:\/\/\S+)/.exec(server.line)![1]!;
    // The server dies holding the session's lease, mid-call.
    await expect(
      fetch(`${url}/chat_completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: ['bob'], session_id: 7 }),
      }),
    ).rejects.toThrow();
    expect(await server.stop('SIGKILL')).not.toBe(0);
    // The lease it left ends at most 300 ms after its last renewal (not the default 10 s), so the server started
    // next takes the call over that soon.
    const store = new SQLiteStore({ path: env.DURABLE_DB });
    try {
      const probe = store.acquireSession('errands', '7', { owner: 'probe', leaseMs: 1 });
      if (!probe.acquired) expect(probe.until).toBeLessThanOrEqual(Date.now() + 301);
    } finally {
      store.close();
    }
  });

  it('says what is wrong with a store URL, and refuses --store for a worker', async () => {
    const unknown = await runCli(['serve', '--agent', AGENT, '--store', 'mysql://x']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /^lagent: unknown store "mysql:\/\/x": use sqlite:FILE, redis:\/\/\.\.\., postgres:\/\/\.\.\. or memory:/,
    );
    const worker = await runCli(['worker', '--agent', AGENT, '--store', 'memory:']);
    expect(worker.code).toBe(1);
    expect(worker.stderr).toMatch(/--store is for chat, serve, batch, eval and ui/);
  });
});
