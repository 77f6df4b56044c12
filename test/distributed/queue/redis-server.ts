import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisStoreKeys } from '#src/stores/redis-keys';
import { acceptsConnections, freePort, stopChild } from '../../helpers/processes';

/** A `redis-server` this process started on a free port; `stop()` ends it, `restart()` stops and starts it. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Stops the server (SIGTERM: with `persist`, it writes its data first) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port (and, with `persist`, the same data). */
  start(): Promise<void>;
  /** Stops it for good and removes its data directory. */
  close(): Promise<void>;
}

/** Whether `redis-server` can be run here. */
export function hasRedisServer(): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('redis-server', ['--version'], { stdio: 'ignore' });
    child.on('error', () => resolve(false));
    child.on('exit', (code) => resolve(code === 0));
  });
}

/**
 * Starts `redis-server` on a free port of 127.0.0.1, without persistence unless `persist` (then an
 * append-only file in a temporary directory, fsynced on every write, so a restart keeps everything).
 * The process inherits this environment (and so the test run's `LAGENT_TEST_RUN` marker).
 */
export async function startRedis(options: { persist?: boolean } = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'lagent-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''];
  args.push(
    ...(options.persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
  );
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn('redis-server', args, { stdio: 'ignore', env: process.env });
    child = started;
    const exited = new Promise<never>((_, reject) => {
      started.once('error', reject);
      started.once('exit', (code) =>
        reject(new Error(`redis-server exited (${code}) before accepting connections`)),
      );
    });
    exited.catch(() => {});
    for (let waited = 0; ; waited += 20) {
      if (await Promise.race([acceptsConnections(port), exited])) return;
      if (waited > 10_000) throw new Error('redis-server did not start within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    await stopChild(running, 'SIGTERM', 5_000);
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The RedisStore keys of a queue's session (the default store prefix, the queue's name as namespace). */
export function sessionKeys(
  queue: string,
  sessionId: string,
): { session: string; turns: string; lease: string } {
  const keys = new RedisStoreKeys('lagent');
  return {
    session: keys.session(queue, sessionId),
    turns: keys.turns(queue, sessionId),
    lease: keys.lease(queue, sessionId),
  };
}
