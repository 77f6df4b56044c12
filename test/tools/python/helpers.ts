import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { IPythonInteractiveOptions, PythonInterpreterOptions } from 'lagent-ts/tools';

/** Options of any interpreter tool. */
export type TestToolOptions = IPythonInteractiveOptions & PythonInterpreterOptions;

/** The Python the tests run: the system one (where CI installs numpy, matplotlib and IPython) when present. */
export const PYTHON =
  process.env.LAGENT_TEST_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

/**
 * Options every test tool gets: the test Python, and the test run's marker passed on explicitly (the
 * interpreter gets none of the parent's environment otherwise), so the suite's teardown finds leftovers.
 */
export function testOptions(options?: TestToolOptions): TestToolOptions {
  const marker = process.env.LAGENT_TEST_RUN;
  return {
    python: PYTHON,
    timeout: 10_000,
    ...options,
    env: { ...(marker ? { LAGENT_TEST_RUN: marker } : {}), ...(options?.env ?? {}) },
  };
}

/** Pids of the processes whose command line mentions `text` (e.g. a session directory). */
export function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) found.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/** Pids of the interpreter drivers still running (their command line carries the driver's configuration). */
export function driverProcesses(): number[] {
  return processesMentioning('"mode":"');
}

/** Waits until `check()` holds, polling every 20 ms, for at most `ms`. */
export async function eventually(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}
