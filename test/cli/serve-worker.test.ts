import { AsyncQueueAgent } from 'lagent-ts/distributed/queue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasRedisServer, type RedisServer, startRedis } from '../distributed/queue/redis-server';
import { FIXTURES, type RunningCli, runCli, startCli } from './helpers';

/** `lagent serve` and `lagent worker` as child processes: called once, then SIGTERM ends them with exit code 0. */

const AGENT = `${FIXTURES}echo-agent.ts`;

describe('lagent serve', () => {
  let cli: RunningCli | undefined;

  afterAll(async () => {
    await cli?.stop('SIGKILL');
  });

  it('serves the agent over HTTP (token required), and exits 0 on SIGTERM', async () => {
    cli = await startCli(['serve', '--agent', AGENT, '--port', '0'], /listening on http:/, {
      env: { LAGENT_TOKEN: 'secret-token' },
    });
    expect(cli.line).toContain('echo listening on http://127.0.0.1:');
    expect(cli.line).toContain('(token required)');
    const url = /(http:\/\/\S+)/.exec(cli.line)![1]!;

    const health = await fetch(`${url}/health_check`);
    expect(health.status).toBe(200);
    const body = JSON.stringify({ message: ['hello'], session_id: 7 });
    const refused = await fetch(`${url}/chat_completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(refused.status).toBe(401);
    const response = await fetch(`${url}/chat_completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer secret-token' },
      body,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ content: 'echo:hello#1', sender: 'echo' });

    expect(await cli.stop('SIGTERM')).toBe(0);
    expect(cli.output().stderr).toContain('SIGTERM, shutting down');
    await expect(fetch(`${url}/health_check`)).rejects.toThrow();
  });

  it('says clearly when the port is taken', async () => {
    const first = await startCli(['serve', '--agent', AGENT, '--port', '0'], /listening on http:/);
    try {
      const port = /:(\d+)\s/.exec(`${first.line} `)![1]!;
      const second = await runCli(['serve', '--agent', AGENT, '--port', port]);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(/^lagent: cannot listen on 127\.0\.0\.1:\d+: .*EADDRINUSE/);
      expect(second.stderr).not.toMatch(/\n\s+at /);
    } finally {
      expect(await first.stop('SIGINT')).toBe(0);
    }
  });
});

describe('lagent worker', async () => {
  const available = await hasRedisServer();
  let redis: RedisServer | undefined;
  let cli: RunningCli | undefined;

  beforeAll(async () => {
    if (available) redis = await startRedis();
  });

  afterAll(async () => {
    await cli?.stop('SIGKILL');
    await redis?.stop();
  });

  it.skipIf(!available)('hosts the agent on a queue, and exits 0 on SIGTERM', async () => {
    cli = await startCli(
      ['worker', '--agent', AGENT, '--queue', 'cli-test', '--concurrency', '2'],
      /serving queue/,
      { env: { REDIS_URL: redis!.url } },
    );
    expect(cli.line).toContain('"cli-test"');
    expect(cli.line).toContain('concurrency 2');
    const remote = new AsyncQueueAgent({ queue: 'cli-test', connection: redis!.url, timeout: 15_000 });
    try {
      expect((await remote.call('first', { sessionId: 3 })).content).toBe('echo:first#1');
      // The session's memory lives in Redis: the second call sees the first turn.
      expect((await remote.call('second', { sessionId: 3 })).content).toBe('echo:second#3');
    } finally {
      await remote.close();
    }
    expect(await cli.stop('SIGTERM')).toBe(0);
    expect(cli.output().stderr).toContain('SIGTERM');
  });
});
