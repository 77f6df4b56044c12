import { existsSync } from 'node:fs';
import type { AsyncIPythonInteractive } from 'lagent-ts/tools';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach, eventually, testOptions } from './helpers';

const { shell } = cleanupAfterEach({ sandbox: 'none' });

const DEPTH = 2300;

/** Code that nests DEPTH directories (paths far past PATH_MAX) in its directory and prints that directory. */
const DEEP_TREE = [
  'import os',
  'top = os.getcwd()',
  `for _ in range(${DEPTH}):`,
  '    os.mkdir("d"); os.chdir("d")',
  'open("leaf", "w").close()',
  'os.chdir(top)',
  'print(top)',
].join('\n');

async function deepTree(python: AsyncIPythonInteractive, sessionId: string): Promise<string> {
  const result = await python.call({ command: DEEP_TREE }, 'run', { sessionId });
  const dir = result.toText().trim();
  expect(dir).toMatch(/lagent-python-/);
  expect(existsSync(`${dir}/d/d/d`)).toBe(true);
  return dir;
}

/** Uncaught errors seen while a test runs (an overflowing remover in a timer would land here). */
function watchUncaught(): { errors: unknown[]; stop(): void } {
  const errors: unknown[] = [];
  const onError = (error: unknown) => errors.push(error);
  process.on('uncaughtException', onError);
  return { errors, stop: () => process.off('uncaughtException', onError) };
}

describe(`a session directory ${DEPTH} levels deep`, { timeout: 45_000 }, () => {
  it('is removed on idle expiry without crashing the host', async () => {
    const watch = watchUncaught();
    try {
      const python = shell({ idleTimeout: 300 });
      const dir = await deepTree(python, 'idle');
      expect(await eventually(() => !existsSync(dir), 20_000)).toBe(true);
      expect(python.pids()).toEqual([]);
      expect(watch.errors).toEqual([]);
    } finally {
      watch.stop();
    }
  });

  it('is removed by close() and reset(), which do not throw and end every session', async () => {
    const python = shell();
    const first = await deepTree(python, 'a');
    const second = await deepTree(python, 'b');
    const third = await deepTree(python, 'c');
    expect(() => python.reset('a')).not.toThrow();
    expect(python.pids()).toHaveLength(2);
    expect(() => python.close()).not.toThrow();
    expect(python.pids()).toEqual([]);
    for (const dir of [first, second, third]) {
      expect(await eventually(() => !existsSync(dir), 20_000)).toBe(true);
    }
  });

  it('is removed when its session is evicted as least recently used', async () => {
    const python = shell({ maxSessions: 1 });
    const evicted = await deepTree(python, 'old');
    expect((await python.call({ command: 'print(1)' }, 'run', { sessionId: 'new' })).toText()).toBe('1\n');
    expect(python.pids()).toHaveLength(1);
    expect(await eventually(() => !existsSync(evicted), 20_000)).toBe(true);
  });

  it('is removed by the exit hook of a process that ends without close()', async () => {
    const { execFileSync } = await import('node:child_process');
    const { join } = await import('node:path');
    const script = [
      "import { AsyncIPythonInteractive } from './src/tools/index.ts';",
      `const python = new AsyncIPythonInteractive({ python: ${JSON.stringify(testOptions().python)}, ipython: false, sandbox: 'none', env: { LAGENT_TEST_RUN: process.env.LAGENT_TEST_RUN ?? '' } });`,
      `const result = await python.call({ command: ${JSON.stringify(DEEP_TREE)} }, 'run', { sessionId: 1 });`,
      'console.log(result.toText().trim());',
      'process.exit(0);',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..', '..'),
      encoding: 'utf8',
      timeout: 40_000,
    });
    const dir = out.trim().split('\n').pop()!;
    expect(dir).toMatch(/lagent-python-/);
    expect(existsSync(dir)).toBe(false);
  }, 45_000);
});

describe('removing a session directory', () => {
  it('does not block the event loop, however many files the code left', async () => {
    const python = shell({ timeout: 20_000 });
    const made = await python.call(
      {
        command: 'import os\nfor i in range(20000):\n    open("f%d" % i, "w").close()\nprint(os.getcwd())',
      },
      'run',
      { sessionId: 'many' },
    );
    const dir = made.toText().trim();
    python.close();
    // close() returned before the 20,000 files are gone: they are removed off this thread, afterwards.
    expect(existsSync(dir)).toBe(true);
    await expect.poll(() => existsSync(dir)).toBe(false);
  }, 30_000);

  it('removes directories the code made unwritable', async () => {
    const python = shell();
    const made = await python.call(
      {
        command:
          'import os\nos.makedirs("locked/inner")\nopen("locked/inner/file", "w").close()\nos.chmod("locked/inner", 0o500)\nos.chmod("locked", 0o500)\nprint(os.getcwd())',
      },
      'run',
      { sessionId: 'locked' },
    );
    const dir = made.toText().trim();
    python.close();
    expect(await eventually(() => !existsSync(dir), 20_000)).toBe(true);
  });
});
