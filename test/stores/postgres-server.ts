import { type ChildProcess, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { acceptsConnections, freePort, runProcess, stopChild } from '../helpers/processes';

/**
 * A PostgreSQL server of the tests' own: a fresh cluster in a temporary directory (initdb), run as the
 * `postgres` user on a free port of 127.0.0.1 with trust authentication and no fsync. Needs root (to run as
 * `postgres`) and the server binaries (`/usr/lib/postgresql/<version>/bin`, the Debian layout).
 */
export interface PostgresServer {
  readonly port: number;
  readonly dir: string;
  /** Every server process's command line mentions it (the cluster name: the data directory's name). */
  readonly name: string;
  readonly connectionString: string;
  /** Stops the server (a fast shutdown: sessions are ended) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same data and port. */
  start(): Promise<void>;
  /** Stops it for good and removes its data. */
  close(): Promise<void>;
}

/** The PostgreSQL server binaries' directory, or why these tests cannot run here. */
export function postgresBinaries(): { bin: string } | { missing: string } {
  if (process.getuid?.() !== 0) return { missing: 'not root (the server runs as the postgres user)' };
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) return { missing: `no PostgreSQL server in ${root}/*/bin` };
  return { bin: join(root, versions[0]!, 'bin') };
}

/** Creates a cluster and starts a server on it. */
export async function startPostgres(bin: string): Promise<PostgresServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'lagent-postgres-'));
  const postgresUid = Number((await runProcess('id', ['-u', 'postgres'])).stdout.trim());
  const postgresGid = Number((await runProcess('id', ['-g', 'postgres'])).stdout.trim());
  chownSync(dir, postgresUid, postgresGid);
  const init = await runProcess(
    'runuser',
    [
      '-u',
      'postgres',
      '--',
      join(bin, 'initdb'),
      '-D',
      dir,
      '--auth=trust',
      '-U',
      'postgres',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ],
    { env: { ...process.env, LC_ALL: 'C' }, timeoutMs: 60_000 },
  );
  if (init.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.code}): ${init.stderr}`);
  }
  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    // Started as the postgres user directly (not through runuser), so signals reach the server itself.
    const started = spawn(
      join(bin, 'postgres'),
      [
        '-D',
        dir,
        '-p',
        String(port),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        '-c',
        // In every server process's title, so a test can tell none is left.
        `cluster_name=${basename(dir)}`,
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: process.env, uid: postgresUid, gid: postgresGid, cwd: dir },
    );
    child = started;
    started.stderr!.setEncoding('utf8').on('data', (text: string) => {
      log = (log + text).slice(-4000);
    });
    const exited = new Promise<never>((_, reject) => {
      started.once('error', reject);
      started.once('exit', (code) =>
        reject(new Error(`postgres exited (${code}) before accepting connections: ${log}`)),
      );
    });
    exited.catch(() => {});
    for (let waited = 0; ; waited += 50) {
      // Accepting TCP is not yet accepting sessions (it may still be starting up): ask pg_isready.
      if (await Promise.race([acceptsConnections(port), exited])) {
        const ready = await runProcess(join(bin, 'pg_isready'), [
          '-h',
          '127.0.0.1',
          '-p',
          String(port),
          '-U',
          'postgres',
        ]);
        if (ready.code === 0) return;
      }
      if (waited > 20_000) throw new Error(`postgres did not start within 20 s: ${log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    // SIGINT is PostgreSQL's fast shutdown: sessions are ended, the data is written.
    await stopChild(running, 'SIGINT', 10_000);
  };
  try {
    await start();
  } catch (error) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    dir,
    name: basename(dir),
    connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
