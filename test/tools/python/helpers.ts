import { existsSync } from 'node:fs';
import type { IPythonInteractiveOptions, PythonInterpreterOptions } from 'lagent-ts/tools';
import { eventually, markerEnv, processesMentioning } from '../../helpers/processes';

export { eventually, processesMentioning };

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
  return {
    python: PYTHON,
    timeout: 10_000,
    ...options,
    env: { ...markerEnv(), ...(options?.env ?? {}) },
  };
}

/** Pids of the interpreter drivers still running (their command line carries the driver's configuration). */
export function driverProcesses(): number[] {
  return processesMentioning('"mode":"');
}
