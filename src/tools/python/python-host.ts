import { execFile } from 'node:child_process';
import { lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigurationError } from '../../schema/errors';

/** What a probe of a Python command found. */
export interface PythonInfo {
  /** The real executable (a pyenv shim or a symlink resolved by Python itself). */
  executable: string;
  /** `sys.base_prefix` and `sys.prefix`: what a sandbox must make readable. */
  prefixes: string[];
  version: string;
  /** Whether the uid the interpreter drops to (when running as root) can run this Python, if asked. */
  readableByUnprivileged?: boolean | undefined;
}

/** The uid/gid an interpreter started by root switches to: `nobody` on Debian and most distributions. */
export const UNPRIVILEGED = Object.freeze({ uid: 65534, gid: 65534 });

const PROBE =
  'import json, sys; print(json.dumps([sys.executable, sys.base_prefix, sys.prefix, sys.version.split()[0]]))';

const probes = new Map<string, Promise<PythonInfo>>();

/** The error of a Python command that cannot be run, in words a user can act on (no spawn stack trace). */
export function pythonMissing(python: string, detail: string): ConfigurationError {
  return new ConfigurationError({
    message:
      `${python} could not be run (${detail}). The Python interpreter tools need Python 3: install it ` +
      '(e.g. apt-get install python3, brew install python, or python.org), or pass the python option ' +
      '(or set LAGENT_PYTHON) to point at one.',
  });
}

function run(
  file: string,
  args: string[],
  options: { uid?: number; gid?: number } = {},
): Promise<{ stdout: string; error: (Error & { code?: unknown }) | null; stderr: string }> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      { timeout: 10_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' }, ...options },
      (error, stdout, stderr) => done({ stdout, stderr, error }),
    );
  });
}

/**
 * Finds out which Python `python` runs, once per command and process: its real executable (so a sandbox can
 * start it without a shell shim) and its prefixes. Rejects with a {@link ConfigurationError} that says how
 * to install Python when the command does not run.
 */
export function probePython(python: string, checkUnprivileged: boolean): Promise<PythonInfo> {
  const key = `${python}\0${checkUnprivileged}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = (async () => {
      const { stdout, error, stderr } = await run(python, ['-E', '-c', PROBE]);
      if (error) {
        const detail =
          error.code === 'ENOENT'
            ? 'not found'
            : (stderr.trim().split('\n').pop() ?? error.message) || error.message;
        throw pythonMissing(python, detail);
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(stdout.trim().split('\n').pop() ?? '');
      } catch {
        throw pythonMissing(python, 'it did not answer like Python 3');
      }
      const [executable, base, prefix, version] = parsed as string[];
      const info: PythonInfo = {
        executable: resolve(executable!),
        prefixes: [...new Set([base!, prefix!, dirname(dirname(resolve(executable!)))])],
        version: version!,
      };
      if (checkUnprivileged) {
        const check = await run(info.executable, ['-E', '-c', 'import encodings, json'], UNPRIVILEGED);
        info.readableByUnprivileged = check.error === null;
      }
      return info;
    })();
    probes.set(key, probe);
    probe.catch(() => probes.delete(key));
  }
  return probe;
}

/** The namespaces bubblewrap unshares: all of them, or all but the user namespace for root (see sandboxArgs). */
function unshareFlags(asRoot: boolean): string[] {
  return asRoot
    ? ['--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try']
    : ['--unshare-all'];
}

/**
 * bubblewrap's arguments for one session: every namespace unshared (no network), the system directories and
 * Python's installation read-only, a private `/tmp`, `/proc` and `/dev`, only the session directory writable,
 * and death with the parent. For root the user namespace is left out: inside one, root stays root on the host
 * (so process limits would not apply) and could not switch to the unprivileged uid the driver drops to.
 */
export function sandboxArgs(python: PythonInfo, sessionDir: string, asRoot: boolean): string[] {
  const args = [...unshareFlags(asRoot), '--die-with-parent', '--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc']) {
    const stat = lstatSync(top, { throwIfNoEntry: false });
    if (stat?.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else if (stat?.isDirectory()) args.push('--ro-bind', top, top);
  }
  for (const prefix of python.prefixes) {
    if (!prefix.startsWith('/usr/') && prefix !== '/usr') args.push('--ro-bind-try', prefix, prefix);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp');
  // The session directory's ancestors are made traversable (bubblewrap would copy the host's modes, and a
  // 0700 parent would shut the unprivileged uid out of the absolute paths it is given).
  const ancestors: string[] = [];
  for (let dir = dirname(sessionDir); dir !== '/' && dir !== '/tmp'; dir = dirname(dir))
    ancestors.unshift(dir);
  for (const dir of ancestors) args.push('--perms', '0755', '--dir', dir);
  args.push('--bind', sessionDir, sessionDir, '--chdir', sessionDir, '--setenv', 'TMPDIR', '/tmp');
  return args;
}

let bwrapWorks: Promise<boolean> | undefined;

/** Whether bubblewrap runs here with the flags a session uses (checked once per process). */
export function sandboxAvailable(): Promise<boolean> {
  bwrapWorks ??= run('bwrap', [
    ...unshareFlags(process.getuid?.() === 0),
    '--die-with-parent',
    '--ro-bind',
    '/',
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    'true',
  ]).then(({ error }) => error === null);
  return bwrapWorks;
}

/**
 * How many processes `uid` runs now (for RLIMIT_NPROC, which counts every process of the user, so a limit of
 * "N more" must start from the current count). Reads `/proc`; 0 where it cannot.
 */
export function processesOf(uid: number): number {
  let count = 0;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    try {
      if (statSync(join('/proc', entry)).uid === uid) count++;
    } catch {
      // ended meanwhile
    }
  }
  return count;
}
