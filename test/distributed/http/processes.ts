import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type ReadyProcess, runProcess, startProcess } from '../../helpers/processes';

/** Helpers of the HTTP tests that start servers in other processes (every one is stopped by `stop`). */

export const HERE = fileURLToPath(new URL('.', import.meta.url));
export const LAGENT_SCRIPT = `${HERE}lagent_http.py`;
export const SERVE_FIXTURE = `${HERE}fixtures/serve-agent.ts`;

/** The Python that has Debian's requests, FastAPI and uvicorn: /usr/bin/python3 when it exists. */
export const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

/** Whether that Python can import what the interop scripts need. */
export function pythonHasLagentDeps(): boolean {
  const probe = spawnSync(PYTHON, ['-c', 'import requests, fastapi, uvicorn, pydantic; print(1)'], {
    encoding: 'utf8',
  });
  return probe.stdout?.trim() === '1';
}

/** A child process that printed a line when ready; `stop()` sends SIGTERM, SIGKILL after 3 s. */
export type Child = ReadyProcess;

/** Starts a process (environment inherited, so the test-run marker passes on) and waits for a line matching `ready`. */
export function startChild(
  command: string,
  args: string[],
  ready: RegExp,
  timeoutMs = 20_000,
): Promise<Child> {
  return startProcess(command, args, ready, { stdin: 'pipe', timeoutMs, graceMs: 3_000 });
}

/** Serves the mock agent of fixtures/serve-agent.ts with HTTPAgentServer in a child process; resolves to it and its URL. */
export async function serveInChild(args: string[] = []): Promise<Child & { url: string }> {
  const child = await startChild(process.execPath, ['--import', 'tsx', SERVE_FIXTURE, ...args], /^\{"url"/);
  return Object.assign(child, { url: (JSON.parse(child.line) as { url: string }).url });
}

/** Runs Lagent's HTTPAgentClient (reproduced in lagent_http.py) against `url`; resolves to what it printed. */
export async function runLagentClient(url: string, scenario: string): Promise<Record<string, unknown>> {
  const { code, stdout, stderr } = await runProcess(PYTHON, [LAGENT_SCRIPT, 'client', url, scenario]);
  if (code !== 0) throw new Error(`lagent_http.py client exited ${code}: ${stderr}`);
  return JSON.parse(stdout) as Record<string, unknown>;
}
