import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ActionStatusCode } from 'lagent-ts';
import { AsyncIPythonInteractive } from 'lagent-ts/tools';
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanupAfterEach, eventually, processesMentioning, testOptions } from './helpers';

const { shell, closing } = cleanupAfterEach();

async function run(tool: AsyncIPythonInteractive, command: string, sessionId = 0) {
  return tool.call({ command }, 'run', { sessionId });
}

function bwrapWorks(): boolean {
  try {
    execFileSync('bwrap', ['--unshare-net', '--die-with-parent', '--ro-bind', '/', '/', 'true'], {
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
}

const asRoot = process.getuid?.() === 0;
let sandboxes: ('bwrap' | 'none')[] = ['none'];
beforeAll(() => {
  sandboxes = bwrapWorks() ? ['none', 'bwrap'] : ['none'];
});

describe.each(['none', 'bwrap'] as const)('containment (sandbox: %s)', (sandbox) => {
  const skip = () => !sandboxes.includes(sandbox);

  it('kills a run past its timeout with its whole process group, says so, and starts the next call fresh', async ({
    skip: skipTest,
  }) => {
    if (skip()) skipTest();
    const python = shell({ sandbox, timeout: 800 });
    await run(python, 'kept = 1');
    const slow = await run(
      python,
      // An odd duration marks this run's child: the check below must not see another program's `sleep 30`.
      'import subprocess, time\nsubprocess.Popen(["sleep", "29.71"])\ntime.sleep(30)',
    );
    expect(slow.state).toBe(ActionStatusCode.API_ERROR);
    expect(slow.errmsg).toContain('timed out after 800 ms; the session was restarted and its state lost');
    expect(await eventually(() => processesMentioning('sleep\u000029.71').length === 0)).toBe(true);
    const next = await run(python, 'kept');
    expect(next.errmsg).toContain('NameError');
    expect((await run(python, 'print("alive")')).toText()).toBe('alive\n');
  });

  it('contains a fork bomb: the call times out, nothing it started survives, the session restarts', async ({
    skip: skipTest,
  }) => {
    if (skip()) skipTest();
    const python = shell({ sandbox, timeout: 1500, maxProcesses: 32 });
    const dir = (await run(python, 'import os; print(os.getcwd())')).toText().trim();
    const bomb = await run(
      python,
      'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass',
    );
    expect(bomb.state).toBe(ActionStatusCode.API_ERROR);
    expect(bomb.errmsg).toMatch(/timed out|stopped/);
    expect(await eventually(() => processesMentioning(dir).length === 0, 5000)).toBe(true);
    expect((await run(python, 'print("back")')).toText()).toBe('back\n');
  });

  it('survives os._exit, an outside SIGKILL, reading stdin, closing stdout and sys.exit', async ({
    skip: skipTest,
  }) => {
    if (skip()) skipTest();
    const python = shell({ sandbox });
    const exited = await run(python, 'import os; os._exit(3)');
    expect(exited.errmsg).toBe(
      'The Python process stopped: it ended (exit code 3); the session was restarted and its state lost.',
    );
    await run(python, 'value = 7');
    const [pid] = python.pids();
    const killed = run(python, 'import time; time.sleep(30)');
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(pid!, 'SIGKILL');
    expect((await killed).errmsg).toContain('it was killed (SIGKILL');
    const stdin = await run(python, 'input("name? ")');
    expect(stdin.errmsg).toContain('EOFError');
    const closed = await run(python, 'import os, sys\nsys.stdout.close()\nos.close(1)\nos.close(2)');
    expect(closed.state).toBe(ActionStatusCode.SUCCESS);
    expect((await run(python, 'print("still here")')).toText()).toBe('still here\n');
    const exit = await run(python, 'import sys; sys.exit(2)');
    expect(exit.errmsg).toContain('SystemExit: 2');
    expect((await run(python, 'print("and here")')).toText()).toBe('and here\n');
  });

  it('limits memory, CPU time, file size and processes before user code runs', async ({ skip: skipTest }) => {
    if (skip()) skipTest();
    const python = shell({
      sandbox,
      memoryLimitMB: 512,
      fileSizeLimitMB: 1,
      maxProcesses: 8,
      cpuTimeLimit: 1000,
      timeout: 8000,
    });
    const big = await run(python, 'block = bytearray(2 * 1024 ** 3)');
    expect(big.errmsg).toContain('MemoryError');
    expect((await run(python, 'print("ok")')).toText()).toBe('ok\n');
    const file = await run(python, 'open("big.bin", "wb").write(b"x" * (2 * 1024 * 1024))');
    expect(file.errmsg).toMatch(/File too large|Errno 27/);
    const forks = await run(
      python,
      'import os, time\nn = 0\ntry:\n    for _ in range(100):\n        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n        n += 1\nexcept OSError as e:\n    print("fork refused after", n, e.errno)',
    );
    expect(forks.toText()).toMatch(/fork refused after \d+ 11/);
    const spin = await run(python, 'while True:\n    pass');
    expect(spin.errmsg).toContain('CPU time limit (1 s)');
  });

  it('gets an allowlisted environment (no parent secrets), HOME in its own directory', async ({
    skip: skipTest,
  }) => {
    if (skip()) skipTest();
    process.env.LAGENT_TEST_SECRET = 'hunter2';
    try {
      const python = shell({ sandbox, env: { EXTRA: 'given' } });
      const seen = (await run(python, 'import os, json; print(json.dumps(dict(os.environ)))')).toText();
      const env = JSON.parse(seen) as Record<string, string>;
      expect(seen).not.toContain('hunter2');
      expect(Object.keys(env).sort()).toEqual(expect.arrayContaining(['HOME', 'PATH', 'EXTRA']));
      expect(env.EXTRA).toBe('given');
      for (const name of ['OPENAI_API_KEY', 'LAGENT_TEST_SECRET']) expect(env[name]).toBeUndefined();
      const cwd = (await run(python, 'import os; print(os.getcwd())')).toText().trim();
      expect(env.HOME).toBe(cwd);
      expect(cwd).toMatch(/lagent-python-/);
      if (asRoot) expect((await run(python, 'import os; print(os.getuid())')).toText().trim()).toBe('65534');
    } finally {
      delete process.env.LAGENT_TEST_SECRET;
    }
  });
});

describe('the bubblewrap sandbox', () => {
  it('has no network, a read-only system, a private /tmp, and only the session directory writable', async ({
    skip,
  }) => {
    if (!sandboxes.includes('bwrap')) skip();
    const python = shell({ sandbox: 'bwrap' });
    const net = await run(
      python,
      'import socket\ntry:\n    socket.create_connection(("1.1.1.1", 53), timeout=2)\n    print("connected")\nexcept OSError as e:\n    print("no network:", e.errno)',
    );
    expect(net.toText()).toMatch(/^no network/);
    const probe = `/tmp/lagent-sandbox-probe-${process.pid}`;
    const writes = await run(
      python,
      [
        'import os',
        'for path in ["/usr/lagent-x", "/etc/lagent-x"]:',
        '    try:',
        '        open(path, "w").close(); print("wrote", path)',
        '    except OSError as e:',
        '        print("refused", e.errno)',
        `open("${probe}", "w").write("private")`,
        'open("mine.txt", "w").write("ok"); print(sorted(os.listdir("/tmp")))',
      ].join('\n'),
    );
    expect(writes.toText()).not.toContain('wrote');
    expect(existsSync(probe)).toBe(false); // its /tmp is its own
    const dir = (await run(python, 'import os; print(os.getcwd())')).toText().trim();
    // The host's /tmp is not there: only the mount point of the session directory, when it lies in /tmp.
    const own = probe.split('/')[2];
    const tmpEntries = dir.startsWith('/tmp/') ? `['${dir.split('/')[2]}', '${own}']` : `['${own}']`;
    expect(writes.toText()).toContain(`\n${tmpEntries}\n`);
    expect(readFileSync(join(dir, 'mine.txt'), 'utf8')).toBe('ok');
  });

  it("'auto' uses it where it works", async ({ skip }) => {
    if (!sandboxes.includes('bwrap')) skip();
    const python = shell({ sandbox: 'auto' });
    const pid = (await run(python, 'import os; print(os.getpid())')).toText().trim();
    expect(pid).toBe('2'); // the second process of a fresh PID namespace, after bubblewrap's own init
  });
});

describe('finding Python', () => {
  it('by default runs the first Python that works (as the unprivileged user, under root)', async () => {
    const marker = process.env.LAGENT_TEST_RUN;
    const python = new AsyncIPythonInteractive({
      ipython: false,
      env: marker ? { LAGENT_TEST_RUN: marker } : {},
    });
    closing(python);
    const result = await run(python, 'import sys; print(sys.version_info[0])');
    expect(result.toText()).toBe('3\n');
  });

  it('a missing one is a clear API_ERROR that says how to install it, with no stack trace', async () => {
    const python = shell({ python: '/nonexistent/python3' });
    const result = await run(python, 'print(1)');
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toContain('/nonexistent/python3 could not be run (not found)');
    expect(result.errmsg).toContain('install it');
    expect(result.errmsg).not.toMatch(/\n\s+at /);
  });
});

describe('where bubblewrap does not run', () => {
  it("'auto' warns once, saying how to enable it, and runs unsandboxed; 'bwrap' is a clear error", () => {
    const python = JSON.stringify(testOptions().python);
    const script = [
      "import { AsyncIPythonInteractive } from './src/tools/index.ts';",
      "process.on('warning', (warning) => console.log('warning ' + warning.code + ': ' + warning.message));",
      "const env = { LAGENT_TEST_RUN: process.env.LAGENT_TEST_RUN ?? '' };",
      `const auto = new AsyncIPythonInteractive({ python: ${python}, ipython: false, env });`,
      "for (const id of [1, 2]) console.log('auto:', (await auto.call({ command: 'print(\\'ran\\')' }, 'run', { sessionId: id })).toText().trim());",
      `const strict = new AsyncIPythonInteractive({ python: ${python}, ipython: false, sandbox: 'bwrap', env });`,
      "console.log('bwrap:', (await strict.call({ command: 'print(1)' }, 'run')).errmsg);",
      'auto.close(); strict.close();',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..', '..'),
      env: { ...process.env, PATH: '/nonexistent' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(out).toContain('auto: ran\nauto: ran');
    expect(out.match(/warning LAGENT_NO_SANDBOX/g)).toHaveLength(1);
    expect(out).toContain('Install bubblewrap (apt-get install bubblewrap) to enable it');
    expect(out).toContain("bwrap: sandbox: 'bwrap' was asked for, but bubblewrap does not run here");
  });
});

describe('process ends', () => {
  it('no driver (nor its temporary directory) outlives the Node process that started it, even without close()', () => {
    const script = [
      "import { AsyncIPythonInteractive } from './src/tools/index.ts';",
      `const python = new AsyncIPythonInteractive({ python: ${JSON.stringify(testOptions().python)}, ipython: false, sandbox: 'none', env: { LAGENT_TEST_RUN: process.env.LAGENT_TEST_RUN ?? '' } });`,
      "const result = await python.call({ command: 'import os; print(os.getcwd())' }, 'run', { sessionId: 1 });",
      'console.log(result.toText().trim());',
      'process.exit(0);',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..', '..'),
      encoding: 'utf8',
      timeout: 20_000,
    });
    const dir = out.trim().split('\n').pop()!;
    expect(dir).toMatch(/lagent-python-/);
    expect(processesMentioning(dir)).toEqual([]);
    expect(existsSync(dir)).toBe(false); // the exit hook closed the tool: its temporary directory is gone too
  });
});
