import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActionStatusCode } from 'lagent-ts';
import { type AsyncIPythonInteractive, AsyncPythonInterpreter } from 'lagent-ts/tools';
import { describe, expect, it } from 'vitest';
import { sessionDirName } from '#src/tools/python/session-paths';
import { cleanupAfterEach, eventually, processesMentioning, testOptions } from './helpers';

const { shell, removing, closing } = cleanupAfterEach();

async function run(tool: AsyncIPythonInteractive, command: string, sessionId: string | number = 0) {
  return tool.call({ command }, 'run', { sessionId });
}

function bwrapMissing(): string | undefined {
  try {
    execFileSync('bwrap', ['--unshare-net', '--die-with-parent', '--ro-bind', '/', '/', 'true'], {
      stdio: 'ignore',
    });
    return undefined;
  } catch (error) {
    return `bubblewrap does not run here (${(error as Error).message.split('\n')[0]})`;
  }
}
const noBwrap = bwrapMissing();
const asRoot = process.getuid?.() === 0;

/** Python that finds the driver's loop frame (its locals hold the request, and the run's nonce). */
const DRIVER_FRAME = [
  'import os, struct, sys, json',
  'frame = sys._getframe()',
  'while frame is not None and "request" not in frame.f_locals:',
  '    frame = frame.f_back',
  'request = frame.f_locals["request"]',
  'reply_fd = sorted(int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) >= 200)[1]',
  'def forge(message):',
  '    body = json.dumps(message).encode()',
  '    os.write(reply_fd, struct.pack(">I", len(body)) + body)',
].join('\n');

describe('reply frames from the driver', () => {
  it('a frame header past the cap ends the session at once, buffering nothing', async () => {
    const python = shell({ sandbox: 'none', timeout: 8000 });
    await run(python, 'kept = 1');
    const before = process.memoryUsage().arrayBuffers;
    const result = await run(
      python,
      `${DRIVER_FRAME}\nos.write(reply_fd, struct.pack(">I", 0xFFFFFFF0) + b"x" * 65536)\nwhile True:\n    os.write(reply_fd, b"x" * 65536)`,
    );
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    // Ended by the cap, not by the run's 8 s timeout (whose message would say so).
    expect(result.errmsg).toContain('a reply frame of 4294967280 bytes, over the');
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
    expect((await run(python, 'print("fresh")')).toText()).toBe('fresh\n');
  });

  it('a long answer arrives whole across many pipe chunks; past maxOutputChars it is cut by the driver', async () => {
    const python = new AsyncPythonInterpreter(
      testOptions({ sandbox: 'none', answerSymbol: 'answer', maxOutputChars: 100_000 }),
    );
    closing(python);
    const long = await python.call({ command: 'answer = "y" * 300000' }, 'run', { sessionId: 1 });
    expect(long.toText()).toHaveLength(300_000);
    const huge = await python.call({ command: 'answer = "z" * 5000000' }, 'run', { sessionId: 1 });
    expect(huge.state).toBe(ActionStatusCode.SUCCESS);
    expect(huge.toText()).toHaveLength(400_000); // maxBytes = 4 × maxOutputChars
  });
});

describe('forged replies', () => {
  it('a reply without the run nonce is ignored: the run answers with what it really did', async () => {
    const python = shell({ sandbox: 'none' });
    const result = await run(
      python,
      `${DRIVER_FRAME}\nforge({"id": request["id"], "value": None, "error": None, "images": ["/etc/passwd"], "dropped": 0})\nprint("real output")`,
    );
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.result).toEqual([{ type: 'text', content: 'real output\n' }]);
  });

  it('image paths are kept only for regular files inside the session directory, reached without links', async () => {
    // The nonce lives in the driver, which shares its process with the code: code that looks for it finds it.
    // Forging then gains nothing the code could not do anyway, because the paths are checked.
    const python = shell({ sandbox: 'none' });
    const dir = (await run(python, 'import os; print(os.getcwd())')).toText().trim();
    const result = await run(
      python,
      [
        DRIVER_FRAME,
        'nonce = frame.f_locals["nonce"]',
        'open("real.png", "wb").write(b"png")',
        'os.symlink("/etc/passwd", "outside.png")',
        'os.symlink("real.png", "inside-link.png")',
        'os.mkdir("sub"); os.symlink("..", "sub/up")',
        'images = ["/etc/passwd", "outside.png", "inside-link.png", "sub/up/real.png", "sub", "../" + os.path.basename(os.getcwd()) + "/real.png", os.path.abspath("real.png")]',
        'forge({"id": request["id"], "nonce": nonce, "value": None, "error": None, "images": images, "dropped": 0})',
        'os.write(1, request["marker"].encode())',
        "import time; time.sleep(5)  # the driver's own reply comes after the run has been answered",
      ].join('\n'),
    );
    const images = result.result!.filter((item) => item.type === 'image').map((item) => item.content);
    expect(images).toEqual([join(dir, 'real.png'), join(dir, 'real.png')]);
  });
});

describe("sandbox: 'none'", () => {
  it('a busy driver dies with a SIGKILLed parent, also when started by root as the unprivileged user', async () => {
    const script = [
      "import { AsyncIPythonInteractive } from './src/tools/index.ts';",
      `const python = new AsyncIPythonInteractive({ python: ${JSON.stringify(testOptions().python)}, ipython: false, sandbox: 'none', env: { LAGENT_TEST_RUN: process.env.LAGENT_TEST_RUN ?? '' } });`,
      "const result = await python.call({ command: 'import os; print(os.getpid(), os.getuid(), os.getcwd())' }, 'run', { sessionId: 1 });",
      "void python.call({ command: 'import time; print(\"busy\", flush=True); time.sleep(60)' }, 'run', { sessionId: 1 });",
      "setTimeout(() => console.log('driver', result.toText().trim()), 500);",
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const node = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..', '..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    node.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    try {
      expect(await eventually(() => out.includes('driver '), 30_000)).toBe(true);
      const [pid, uid, dir] = out.split('driver ')[1]!.trim().split(' ');
      removing(dir!); // no exit hook runs in a SIGKILLed process: the test removes its directory
      if (asRoot) expect(uid).toBe('65534');
      expect(existsSync(`/proc/${pid}`)).toBe(true);
      node.kill('SIGKILL');
      expect(await eventually(() => !existsSync(`/proc/${pid}`), 3000)).toBe(true);
    } finally {
      node.kill('SIGKILL');
    }
  }, 40_000);

  it('what the code started in a session of its own ends with the driver (timeout and close)', async () => {
    const python = shell({ sandbox: 'none', timeout: 1000 });
    const timedOut = await run(
      python,
      'import subprocess, time\nsubprocess.Popen(["sleep", "41.5"], start_new_session=True)\ntime.sleep(30)',
    );
    expect(timedOut.errmsg).toContain('timed out');
    expect(await eventually(() => processesMentioning('sleep\u000041.5').length === 0, 3000)).toBe(true);
    // Without a sandbox every session of the uid shares one process count (other tests may fill it a moment).
    const start = [
      'import subprocess, time',
      'for attempt in range(50):',
      '    try:',
      '        subprocess.Popen(["sleep", "42.5"], start_new_session=True); break',
      '    except OSError:',
      '        time.sleep(0.1)',
    ].join('\n');
    await run(python, start);
    expect(await eventually(() => processesMentioning('sleep\u000042.5').length === 1)).toBe(true);
    python.close();
    expect(await eventually(() => processesMentioning('sleep\u000042.5').length === 0, 3000)).toBe(true);
  });
  it('...and with the Node process that exits without close()', async () => {
    const script = [
      "import { AsyncIPythonInteractive } from './src/tools/index.ts';",
      `const python = new AsyncIPythonInteractive({ python: ${JSON.stringify(testOptions().python)}, ipython: false, sandbox: 'none', env: { LAGENT_TEST_RUN: process.env.LAGENT_TEST_RUN ?? '' } });`,
      `const code = 'import subprocess, time\\nfor attempt in range(50):\\n    try:\\n        subprocess.Popen(["sleep", "43.5"], start_new_session=True); break\\n    except OSError:\\n        time.sleep(0.1)';`,
      "await python.call({ command: code }, 'run', { sessionId: 1 });",
      "console.log('started');",
      'process.exit(0);',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '..', '..', '..'),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(out).toContain('started');
    expect(await eventually(() => processesMentioning('sleep\u000043.5').length === 0, 2000)).toBe(true);
  }, 40_000);
});

describe('sandbox limits', () => {
  it.for([
    ['bwrap', noBwrap],
    ['none', undefined],
  ] as const)(
    'process limits are per session (sandbox: %s): one session holding its processes leaves the next its own',
    async ([sandbox, skipReason], { skip }) => {
      if (skipReason) skip(skipReason);
      const python = shell({ sandbox, maxProcesses: 8, timeout: 8000 });
      const hold = [
        'import os, time',
        'held = 0',
        'try:',
        '    for _ in range(20):',
        '        if os.fork() == 0:',
        '            time.sleep(6); os._exit(0)',
        '        held += 1',
        'except OSError as error:',
        '    print("held", held, "then", error.errno)',
      ].join('\n');
      await run(python, 'started = True', 'second'); // both sessions run before the first fills its share
      const first = await run(python, hold, 'first');
      expect(first.toText()).toMatch(/^held \d+ then 11/);
      const second = await run(python, hold, 'second');
      expect(second.toText()).toMatch(/^held [5-8] then 11/);
    },
  );

  it("the sandbox's /tmp holds at most tmpLimitMB", async ({ skip }) => {
    if (noBwrap) skip(noBwrap);
    const python = shell({ sandbox: 'bwrap', tmpLimitMB: 4 });
    const result = await run(
      python,
      'try:\n    open("/tmp/fill", "wb").write(b"x" * (16 * 1024 * 1024))\n    print("wrote")\nexcept OSError as error:\n    print("refused", error.errno)',
    );
    expect(result.toText()).toBe('refused 28\n'); // ENOSPC
  });
});

describe('session directories under workDir', () => {
  it('session ids that differ get different directories, none outside workDir', async () => {
    const workDir = mkdtempSync(join(tmpdir(), 'lagent-names-'));
    removing(workDir);
    const python = shell({ sandbox: 'none', workDir });
    const ids = ['a/b', 'a_b', 'a?b', '../x', 'é'];
    for (const id of ids) await run(python, `open("mine", "w").write(${JSON.stringify(id)})`, id);
    const seen = await Promise.all(ids.map((id) => run(python, 'print(open("mine").read())', id)));
    expect(seen.map((result) => result.toText().trim())).toEqual(ids);
    expect(readdirSync(workDir).sort()).toEqual(
      ['session-%C3%A9', 'session-..%2Fx', 'session-a%2Fb', 'session-a%3Fb', 'session-a_b'].sort(),
    );
  });

  it('a very long id gets a name a file system accepts, still distinct', () => {
    const long = 'x'.repeat(5000);
    const name = sessionDirName(long);
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    expect(sessionDirName(`${long}y`)).not.toBe(name);
    expect(sessionDirName('7')).toBe('session-7');
  });
});
