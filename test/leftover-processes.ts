import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Vitest global setup: when the whole suite is done, no process that a test started may still be running.
 * Servers in tests are real processes and threads, and every test must stop what it starts. Every process
 * of this run inherits a marker in its environment; at the end, any process other than this one that still
 * carries it (an orphan has been re-parented, so ancestry cannot tell) is a leftover. Linux only (`/proc`);
 * elsewhere the check is skipped.
 */
const MARKER = 'LAGENT_TEST_RUN';

export default function setup(): () => Promise<void> {
  const run = randomUUID();
  process.env[MARKER] = run;
  return async () => {
    const entry = `${MARKER}=${run}`;
    let leftovers = markedProcesses(entry).filter((pid) => pid !== process.pid);
    // A process killed or told to stop just now (a worker's helper, a sandbox being torn down) may still be
    // exiting: give such processes a moment, and report only those that stay.
    for (let waited = 0; leftovers.length > 0 && waited < 3000; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      leftovers = markedProcesses(entry).filter((pid) => pid !== process.pid);
    }
    if (leftovers.length > 0) {
      const list = leftovers.map((pid) => `  ${pid} ${commandLine(pid)}`).join('\n');
      // Vitest reports a teardown error but would still exit 0: fail the run explicitly.
      process.exitCode = 1;
      throw new Error(`tests left ${leftovers.length} process(es) running:\n${list}`);
    }
  };
}

function markedProcesses(entry: string): number[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(entry)) found.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '(exited)';
  }
}
