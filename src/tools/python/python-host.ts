import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigurationError } from '../../schema/errors';
import { sandboxFilter } from './seccomp';

/** What a probe of a Python command found. */
export interface PythonInfo {
  /** The real executable (a pyenv shim or a symlink resolved by Python itself). */
  executable: string;
  /** `sys.base_prefix` and `sys.prefix`: what a sandbox must make readable. */
  prefixes: string[];
  version: string;
  /** Whether the uid the interpreter runs as (when this process is root) can run this Python, if asked. */
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
      {
        timeout: 10_000,
        cwd: '/',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
        ...options,
      },
      (error, stdout, stderr) => done({ stdout, stderr, error }),
    );
  });
}

/**
 * Finds out which Python `python` runs, once per command and process: its real executable (so a sandbox can
 * start it without a shell shim) and its prefixes. Rejects with a {@link ConfigurationError} that says how
 * to install Python when the command does not run.
 */
export function probePython(
  python: string,
  runAs: { uid: number; gid: number } | undefined,
): Promise<PythonInfo> {
  const key = `${python}\0${runAs ? `${runAs.uid}:${runAs.gid}` : ''}`;
  let probe = probes.get(key);
  if (!probe) {
    probe = (async () => {
      const { stdout, error, stderr } = await run(python, ['-I', '-c', PROBE]);
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
      if (runAs) {
        const check = await run(info.executable, ['-I', '-c', 'import encodings, json'], runAs);
        info.readableByUnprivileged = check.error === null;
      }
      return info;
    })();
    probes.set(key, probe);
    probe.catch(() => probes.delete(key));
  }
  return probe;
}

/** What bubblewrap can do here, found once per process and user (see {@link sandboxSupport}). */
export interface SandboxSupport {
  /**
   * Whether bubblewrap runs in a user namespace of its own, started as the uid the code runs as (the normal
   * case). Otherwise (only for root, where unprivileged user namespaces are disabled) it runs as root without
   * one, keeps only CAP_SETUID and CAP_SETGID, and the driver drops to that uid as its first act.
   */
  userNamespace: boolean;
  /** Whether `--disable-userns` is understood (bubblewrap 0.8): no user namespace can be made inside. */
  disableUserns: boolean;
  /** Whether `--size` is understood, so the private `/tmp` can be bounded. */
  tmpfsSize: boolean;
  /** The seccomp filter to load, when `--seccomp` is understood and this architecture has one. */
  seccomp: Buffer | undefined;
}

/** The fd bubblewrap reads the seccomp filter from (the spawn's sixth stdio entry). */
export const SECCOMP_FD = 5;

function features(help: string): { disableUserns: boolean; tmpfsSize: boolean; seccomp: boolean } {
  return {
    disableUserns: help.includes('--disable-userns'),
    tmpfsSize: help.includes('--size'),
    seccomp: help.includes('--seccomp'),
  };
}

/**
 * The namespace and capability arguments: a user namespace that may not make another (where bubblewrap can say
 * so) and no capabilities; without a user namespace, every other namespace and only the capabilities the
 * driver needs to switch to the unprivileged uid, which it loses by switching.
 */
function isolationArgs(support: SandboxSupport, switchesUser: boolean): string[] {
  if (support.userNamespace) {
    return [
      '--unshare-user',
      '--unshare-all',
      ...(support.disableUserns ? ['--disable-userns'] : []),
      '--cap-drop',
      'ALL',
    ];
  }
  return [
    '--unshare-ipc',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--cap-drop',
    'ALL',
    ...(switchesUser ? ['--cap-add', 'CAP_SETUID', '--cap-add', 'CAP_SETGID'] : []),
  ];
}

/** Options of {@link sandboxArgs}. */
export interface SandboxLayout {
  /** Bytes the private `/tmp` may hold (where bubblewrap can bound it). */
  tmpBytes: number;
  /** Whether the driver switches uid itself (root without a user namespace). */
  switchesUser: boolean;
}

/**
 * bubblewrap's arguments for one session: every namespace unshared (no network), no capabilities, the seccomp
 * filter, the system directories and Python's installation read-only, a private bounded `/tmp`, `/proc` and
 * `/dev`, only the session directory writable, and death with the parent.
 */
export function sandboxArgs(
  python: PythonInfo,
  sessionDir: string,
  support: SandboxSupport,
  layout: SandboxLayout,
): string[] {
  const args = [...isolationArgs(support, layout.switchesUser), '--die-with-parent'];
  if (support.seccomp) args.push('--seccomp', String(SECCOMP_FD));
  args.push('--ro-bind', '/usr', '/usr');
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc']) {
    const stat = lstatSync(top, { throwIfNoEntry: false });
    if (stat?.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else if (stat?.isDirectory()) args.push('--ro-bind', top, top);
  }
  for (const prefix of python.prefixes) {
    if (!prefix.startsWith('/usr/') && prefix !== '/usr') args.push('--ro-bind-try', prefix, prefix);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777');
  if (support.tmpfsSize) args.push('--size', String(Math.max(1, Math.floor(layout.tmpBytes))));
  args.push('--tmpfs', '/tmp');
  // The session directory's ancestors are made traversable (bubblewrap would copy the host's modes, and a
  // 0700 parent would shut the unprivileged uid out of the absolute paths it is given).
  const ancestors: string[] = [];
  for (let dir = dirname(sessionDir); dir !== '/' && dir !== '/tmp'; dir = dirname(dir))
    ancestors.unshift(dir);
  for (const dir of ancestors) args.push('--perms', '0755', '--dir', dir);
  args.push('--bind', sessionDir, sessionDir, '--chdir', sessionDir, '--setenv', 'TMPDIR', '/tmp');
  return args;
}

const supports = new Map<string, Promise<SandboxSupport | undefined>>();

/** The probe's arguments: the isolation a session gets, around `true`. */
function probeArgs(support: SandboxSupport, switchesUser: boolean): string[] {
  return [
    ...isolationArgs(support, switchesUser),
    '--die-with-parent',
    '--ro-bind',
    '/',
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    'true',
  ];
}

/**
 * Whether and how bubblewrap runs here for code running as `runAs` (when this process is root and drops to
 * it) or as this process's own user; `undefined` when it does not run. Tries a user namespace of bubblewrap's
 * own first, started as `runAs`, so no process of the session is ever root; then, for root only, bubblewrap
 * as root without a user namespace (also what `userNamespace: false` asks for: a session directory `runAs`
 * cannot reach, which only root's bubblewrap can mount). Checked once per process, user and kind.
 */
export function sandboxSupport(
  runAs: { uid: number; gid: number } | undefined,
  userNamespace = true,
): Promise<SandboxSupport | undefined> {
  const key = `${runAs ? `${runAs.uid}:${runAs.gid}` : 'self'}:${userNamespace}`;
  let support = supports.get(key);
  if (!support) {
    support = (async () => {
      const help = await run('bwrap', ['--help']);
      if (help.error && help.stdout === '') return undefined;
      const found = features(help.stdout + help.stderr);
      const filter = found.seccomp ? sandboxFilter() : undefined;
      const withUserNamespace: SandboxSupport = { userNamespace: true, ...found, seccomp: filter };
      if (
        userNamespace &&
        (await run('bwrap', probeArgs(withUserNamespace, false), runAs ?? {})).error === null
      ) {
        return withUserNamespace;
      }
      if (process.getuid?.() !== 0) return undefined;
      const asRoot: SandboxSupport = { ...withUserNamespace, userNamespace: false };
      return (await run('bwrap', probeArgs(asRoot, runAs !== undefined))).error === null ? asRoot : undefined;
    })();
    supports.set(key, support);
  }
  return support;
}

/** Whether `user` can reach `dir` by its absolute path: every ancestor searchable by it (mode bits only). */
export function reachableBy(dir: string, user: { uid: number; gid: number }): boolean {
  for (let at = dirname(dir); ; at = dirname(at)) {
    const stat = statSync(at, { throwIfNoEntry: false });
    if (!stat) return false;
    const bit = stat.uid === user.uid ? 0o100 : stat.gid === user.gid ? 0o010 : 0o001;
    if ((stat.mode & bit) === 0) return false;
    if (at === '/') return true;
  }
}

/** `setpriv` (util-linux), which switches uid before Python starts where bubblewrap runs as root, if present. */
export const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

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
