import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AsyncIPythonInteractive } from 'lagent-ts/tools';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach, type TestToolOptions } from './helpers';

const { shell, removing } = cleanupAfterEach();

async function run(tool: AsyncIPythonInteractive, command: string): Promise<string> {
  const result = await tool.call({ command }, 'run', { sessionId: 'probe' });
  return result.errmsg ?? result.toText();
}

/** Why bubblewrap cannot be tested here, or undefined when it can. */
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

/**
 * A module that, whenever it is imported, appends who imported it (uids and effective capabilities) to
 * `planted.log` next to it, then behaves like nothing happened.
 */
function plantedModule(name: string): string {
  return [
    `_ = open(${JSON.stringify(`${name}.py`)}, "w").write('''`,
    'import os as _os',
    '_caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]',
    '_path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "planted.log")',
    `open(_path, "a").write("${name} %d %d %s\\\\n" % (_os.getuid(), _os.geteuid(), _caps))`,
    "''')",
  ].join('\n');
}

const variants: [string, TestToolOptions, string | undefined][] = [
  ['sandbox: none', { sandbox: 'none' }, undefined],
  ['sandbox: bwrap', { sandbox: 'bwrap' }, noBwrap],
  [
    'sandbox: bwrap, a session directory the unprivileged user cannot reach (bubblewrap runs as root)',
    { sandbox: 'bwrap' },
    noBwrap ?? (asRoot ? undefined : 'only root runs bubblewrap without a user namespace'),
  ],
];

describe.each(variants)('privileges (%s)', (label, options, skipReason) => {
  const unreachable = label.includes('cannot reach');
  function make(): AsyncIPythonInteractive {
    if (!unreachable) return shell(options);
    const parent = mkdtempSync(join(tmpdir(), 'lagent-private-'));
    chmodSync(parent, 0o700);
    removing(parent);
    return shell({ ...options, workDir: parent });
  }

  it('never imports a module the code planted in its directory as a privileged user, across restarts', async ({
    skip,
  }) => {
    if (skipReason) skip(skipReason);
    const python = make();
    const dir = (await run(python, 'import os; print(os.getcwd())')).trim();
    for (const name of ['json', 'struct', 'sitecustomize', 'codecs', 'fcntl', 'resource', 'signal']) {
      expect(await run(python, plantedModule(name))).toBe('');
    }
    expect(await run(python, 'import os; os._exit(1)')).toContain('exit code 1');
    // The restarted driver starts in the same directory, with the planted modules in it.
    expect((await run(python, 'import json, os; print(os.getuid() != 0)')).trim()).toBe('True');
    expect(await run(python, 'import os; os._exit(1)')).toContain('exit code 1');
    expect((await run(python, 'print("alive")')).trim()).toBe('alive');
    const log = join(dir, 'planted.log');
    const lines = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
    for (const line of lines) {
      const [, uid, euid, caps] = line.split(' ');
      expect(uid).not.toBe('0');
      expect(euid).not.toBe('0');
      expect(caps).toBe('0000000000000000');
    }
    // The driver imports its own modules before the session directory goes on sys.path: none of them ran.
    expect(lines).toEqual([]);
    // ...but the code can import its own modules from its directory, as in a notebook.
    await run(python, '_ = open("mine.py", "w").write("VALUE = 42")');
    expect((await run(python, 'import mine; print(mine.VALUE)')).trim()).toBe('42');
  });

  it('runs with no capabilities, as the unprivileged user under root, with only its protocol fds open', async ({
    skip,
  }) => {
    if (skipReason) skip(skipReason);
    const python = make();
    const status = await run(python, 'print(open("/proc/self/status").read())');
    expect(status).toMatch(/CapEff:\s+0000000000000000/);
    expect(status).toMatch(/CapPrm:\s+0000000000000000/);
    if (asRoot) expect(status).toMatch(/Uid:\s+65534\s+65534\s+65534\s+65534/);
    const fds = await run(python, 'import os; print(sorted(int(fd) for fd in os.listdir("/proc/self/fd")))');
    const open = JSON.parse(fds) as number[];
    expect(open.filter((fd) => fd >= 3 && fd < 200)).toHaveLength(1); // the listing's own
  });
});

describe.each(variants.slice(1))(
  'the bubblewrap sandbox refuses escapes (%s)',
  (label, options, skipReason) => {
    const unreachable = label.includes('cannot reach');
    function make(): AsyncIPythonInteractive {
      if (!unreachable) return shell(options);
      const parent = mkdtempSync(join(tmpdir(), 'lagent-private-'));
      chmodSync(parent, 0o700);
      removing(parent);
      return shell({ ...options, workDir: parent });
    }

    it('cannot make a user namespace, open files by handle, or mount', async ({ skip }) => {
      if (skipReason) skip(skipReason);
      const python = make();
      const unshare = await run(
        python,
        [
          'import subprocess',
          'done = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)',
          'print("unshare exit", done.returncode)',
          'import ctypes, os',
          'libc = ctypes.CDLL(None, use_errno=True)',
          'print("unshare(2)", libc.unshare(0x10000000))',
        ].join('\n'),
      );
      expect(unshare).toMatch(/unshare exit [1-9]/);
      expect(unshare).toContain('unshare(2) -1');
      const handles = await run(
        python,
        [
          'import ctypes, os',
          'libc = ctypes.CDLL(None, use_errno=True)',
          'class Handle(ctypes.Structure):',
          '    _fields_ = [("size", ctypes.c_uint), ("kind", ctypes.c_int), ("bytes", ctypes.c_ubyte * 128)]',
          'handle = Handle(); handle.size = 128; mount_id = ctypes.c_int()',
          'named = libc.name_to_handle_at(-100, b"/etc", ctypes.byref(handle), ctypes.byref(mount_id), 0)',
          'root = os.open("/", os.O_RDONLY)',
          'opened = libc.open_by_handle_at(root, ctypes.byref(handle), os.O_RDONLY | os.O_DIRECTORY)',
          'print("opened", opened, ctypes.get_errno())',
          'print("mount", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))',
        ].join('\n'),
      );
      expect(handles).toMatch(/opened -1 1\n/); // EPERM
      expect(handles).toContain('mount -1');
      if (process.arch === 'x64') {
        const status = await run(python, 'print(open("/proc/self/status").read())');
        expect(status).toMatch(/Seccomp:\s+2/);
        expect(status).toMatch(/NoNewPrivs:\s+1/);
      }
    });

    it('still runs threads, subprocesses and forks under the seccomp filter', async ({ skip }) => {
      if (skipReason) skip(skipReason);
      const python = make();
      const out = await run(
        python,
        [
          'import os, subprocess, threading',
          'seen = []',
          't = threading.Thread(target=lambda: seen.append("thread")); t.start(); t.join()',
          'seen.append(subprocess.run(["echo", "child"], capture_output=True, text=True).stdout.strip())',
          'pid = os.fork()',
          'if pid == 0:',
          '    os._exit(7)',
          'seen.append(os.waitpid(pid, 0)[1] >> 8)',
          'print(seen)',
        ].join('\n'),
      );
      expect(out.trim()).toBe("['thread', 'child', 7]");
    });
  },
);
