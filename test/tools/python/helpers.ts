import { existsSync, rmSync } from 'node:fs';
import {
  AsyncIPythonInteractive,
  type IPythonInteractiveOptions,
  type PythonInterpreterOptions,
} from 'lagent-ts/tools';
import { afterEach } from 'vitest';
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

/**
 * What a test file's tests start and make, ended after each test: `closing(tool)` closes the tool,
 * `removing(dir)` removes the directory, and `shell(options)` is a plain interactive tool (no IPython) with
 * the test options, closed the same way. Call once at the top of the file.
 */
export function cleanupAfterEach(defaults: TestToolOptions = {}) {
  const tools: { close(): void }[] = [];
  const dirs: string[] = [];
  afterEach(() => {
    for (const tool of tools.splice(0)) tool.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const closing = <T extends { close(): void }>(tool: T): T => {
    tools.push(tool);
    return tool;
  };
  return {
    closing,
    removing: (dir: string): string => {
      dirs.push(dir);
      return dir;
    },
    shell: (options: TestToolOptions = {}): AsyncIPythonInteractive =>
      closing(new AsyncIPythonInteractive(testOptions({ ipython: false, ...defaults, ...options }))),
  };
}
