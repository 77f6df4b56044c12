import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** The everything server's entry point, run with this Node (no npx: one process to watch and stop). */
export const EVERYTHING = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
);

/** Our stdio server fixture. */
export const FIXTURE = join(root, 'test/mcp/fixtures/lagent-server.ts');

/** The test run's marker, passed on explicitly: a stdio server gets only a safe set of the parent's variables. */
export function markerEnv(): Record<string, string> {
  const marker = process.env.LAGENT_TEST_RUN;
  return marker ? { LAGENT_TEST_RUN: marker } : {};
}

/** True while a process with this pid exists. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once `check` holds (polling), or rejects after `ms`. */
export async function waitFor(check: () => boolean, ms = 5000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > ms) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Pids of the processes whose command line mentions `text`. */
export function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}
