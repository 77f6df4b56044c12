import { AsyncIPythonInteractive, IPythonInteractive } from '../src/tools/index';
import type { Suite } from './report';

/**
 * The Python interpreter tools: warm round trips, cold starts and many sessions at once, on the
 * real Python the tools find (sandboxed with bubblewrap where it works, as by default).
 */

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function warmAsync(
  sessionId: number,
  python: AsyncIPythonInteractive,
  rounds: number,
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    const result = await python.call({ command: 'print(1)' }, 'run', { sessionId });
    times.push(performance.now() - started);
    if (result.toText() !== '1\n') throw new Error(`unexpected output: ${result.toText()}`);
  }
  return median(times);
}

export const run: Suite = async (report) => {
  const sandbox = 'auto' as const;
  // Probes (which Python, whether bubblewrap works) run once per process: do them before measuring.
  const warmup = new AsyncIPythonInteractive({ ipython: false, sandbox });
  await warmup.call({ command: 'print(1)' }, 'run');
  warmup.close();

  const asyncPython = new AsyncIPythonInteractive({ sandbox });
  await asyncPython.call({ command: 'print(1)' }, 'run', { sessionId: 1 });
  report({
    name: 'warm round trip of print(1), AsyncIPythonInteractive (IPython shell)',
    value: await warmAsync(1, asyncPython, 300),
    unit: 'ms',
    target: 2,
    note: 'median of 300',
  });
  asyncPython.close();

  const syncPython = new IPythonInteractive({ sandbox });
  syncPython.call({ command: 'print(1)' }, 'run');
  const syncTimes: number[] = [];
  for (let i = 0; i < 300; i++) {
    const started = performance.now();
    syncPython.call({ command: 'print(1)' }, 'run');
    syncTimes.push(performance.now() - started);
  }
  report({
    name: 'warm round trip of print(1), IPythonInteractive (sync, through the bridge)',
    value: median(syncTimes),
    unit: 'ms',
    target: 2,
    note: 'median of 300',
  });
  syncPython.close();

  for (const ipython of [false, true]) {
    const cold: number[] = [];
    for (let i = 0; i < 7; i++) {
      const python = new AsyncIPythonInteractive({ ipython, sandbox });
      const started = performance.now();
      await python.call({ command: 'print(1)' }, 'run');
      cold.push(performance.now() - started);
      python.close();
    }
    report({
      name: `cold start of a session to its first result, ${ipython ? 'with' : 'without'} IPython`,
      value: median(cold),
      unit: 'ms',
      ...(ipython ? {} : { target: 150 }),
      note: 'median of 7',
    });
  }

  const sessions = new AsyncIPythonInteractive({ ipython: false, sandbox, maxSessions: 64 });
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, id) =>
      sessions.call({ command: 'import time\ntime.sleep(1)\nprint("done")' }, 'run', { sessionId: id }),
    ),
  );
  const wall = (performance.now() - started) / 1000;
  sessions.close();
  if (results.some((result) => result.toText() !== 'done\n')) throw new Error('a session did not finish');
  report({
    name: '50 concurrent sessions each running a 1 s program, from cold (plain runner)',
    value: wall,
    unit: 's',
    target: 2,
    note: '50 processes started, each sleeping 1 s',
  });
};
