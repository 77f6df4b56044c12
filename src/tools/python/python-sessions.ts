import { chownSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigurationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { type DirUsage, measureDir } from './dir-usage';
import {
  type PythonInfo,
  probePython,
  processesOf,
  pythonMissing,
  reachableBy,
  type SandboxSupport,
  sandboxArgs,
  sandboxSupport,
  UNPRIVILEGED,
} from './python-host';
import {
  type DriverSpawn,
  PythonProcess,
  type RunFailure,
  type RunOutcome,
  type RunRequest,
} from './python-process';
import { removeTree, removeTreeSync } from './remove-tree';
import { confineImages, sessionDirName } from './session-paths';

/** Where the interpreter's code runs: under bubblewrap, directly, or bubblewrap where it works. */
export type SandboxMode = 'auto' | 'bwrap' | 'none';

/** Options every Python interpreter tool shares (all times in ms). */
export interface PythonToolOptions {
  /** The tool's name. */
  name?: string | undefined;
  /** The tool's description for the model. @default a sentence per tool */
  description?: string | undefined;
  /** Milliseconds one run may take; past it the session's processes are killed and it starts afresh. @default 30000 */
  timeout?: number | undefined;
  /** Output (stdout and stderr, in order) kept per run, in characters; the rest is cut with a note. @default 8192 */
  maxOutputChars?: number | undefined;
  /** Live sessions (one Python process each); past it the least recently used idle one is ended. @default 32 */
  maxSessions?: number | undefined;
  /** Milliseconds a session may stay unused before its process ends (its state is lost). @default 600000 */
  idleTimeout?: number | undefined;
  /** `'bwrap'`: run under bubblewrap (no network, read-only system); `'auto'`: where it works. @default 'auto' */
  sandbox?: SandboxMode | undefined;
  /** Address-space limit of each process, in MiB. @default 2048 */
  memoryLimitMB?: number | undefined;
  /** CPU time one run may use, in ms (a guard besides the wall-clock `timeout`). @default the timeout */
  cpuTimeLimit?: number | undefined;
  /** Largest file a session may write, in MiB. @default 256 */
  fileSizeLimitMB?: number | undefined;
  /**
   * What the sandbox's private `/tmp` (memory, outside `memoryLimitMB`) may hold, in MiB; bigger files belong
   * in the session directory. @default 64
   */
  tmpLimitMB?: number | undefined;
  /** Processes a session may start (besides those its user already runs). @default 64 */
  maxProcesses?: number | undefined;
  /**
   * What a session directory may hold, in MiB and in entries. It is counted after runs (in a child process,
   * at most once a second per session); a session found over either limit is reset before its next run (its
   * process ended, its temporary directory removed) and that run answers why. @default 1024 MiB, 100000 entries
   */
  dirLimitMB?: number | undefined;
  dirLimitFiles?: number | undefined;
  /**
   * Python to run. @default process.env.LAGENT_PYTHON, else the first of `python3` (from PATH),
   * `/usr/bin/python3` and `/usr/local/bin/python3` that runs (as the unprivileged user, when running as root)
   */
  python?: string | undefined;
  /**
   * The directory under which each session gets its own working directory. When given, session directories
   * (and the figures in them) are kept after `close()`; by default they are temporary and removed.
   */
  workDir?: string | undefined;
  /**
   * Extra environment variables for the interpreter. It gets none of this process's environment besides an
   * allowlist (`PATH`, `LANG`, `LC_ALL`, `TZ`), plus `HOME` set to the session directory.
   */
  env?: Record<string, string> | undefined;
  /**
   * When this process runs as root, the interpreter switches to this unprivileged user before running any
   * code (`false` keeps root). @default { uid: 65534, gid: 65534 } (nobody)
   */
  runAs?: { uid: number; gid: number } | false | undefined;
}

/** The options after defaults. */
export interface ResolvedPythonOptions {
  timeout: number;
  maxOutputChars: number;
  maxSessions: number;
  idleTimeout: number;
  sandbox: SandboxMode;
  memoryLimitMB: number;
  cpuTimeLimit: number;
  fileSizeLimitMB: number;
  tmpLimitMB: number;
  dirLimitMB: number;
  dirLimitFiles: number;
  maxProcesses: number;
  /** The Python asked for; undefined: the first of `python3`, `/usr/bin/python3`, `/usr/local/bin/python3` that works. */
  python: string | undefined;
  workDir: string | undefined;
  env: Record<string, string>;
  runAs: { uid: number; gid: number } | false;
}

function positive(name: string, value: unknown, fallback: number, allowInfinity = false): number {
  if (value === undefined) return fallback;
  if (
    typeof value !== 'number' ||
    Number.isNaN(value) ||
    value <= 0 ||
    (!allowInfinity && !Number.isFinite(value))
  ) {
    throw new ConfigurationError({ message: `${name} must be a positive number, got ${String(value)}` });
  }
  return value;
}

/** Checks and completes the options shared by the interpreter tools. */
export function resolvePythonOptions(options: PythonToolOptions): ResolvedPythonOptions {
  const sandbox = options.sandbox ?? 'auto';
  if (sandbox !== 'auto' && sandbox !== 'bwrap' && sandbox !== 'none') {
    throw new ConfigurationError({
      message: `sandbox must be 'auto', 'bwrap' or 'none', got ${JSON.stringify(sandbox)}`,
    });
  }
  const timeout = positive('timeout', options.timeout, 30_000, true);
  return {
    timeout,
    maxOutputChars: Math.floor(positive('maxOutputChars', options.maxOutputChars, 8192)),
    maxSessions: Math.floor(positive('maxSessions', options.maxSessions, 32)),
    idleTimeout: positive('idleTimeout', options.idleTimeout, 600_000, true),
    sandbox,
    memoryLimitMB: positive('memoryLimitMB', options.memoryLimitMB, 2048),
    cpuTimeLimit: positive(
      'cpuTimeLimit',
      options.cpuTimeLimit,
      Number.isFinite(timeout) ? timeout : 3_600_000,
    ),
    fileSizeLimitMB: positive('fileSizeLimitMB', options.fileSizeLimitMB, 256),
    tmpLimitMB: positive('tmpLimitMB', options.tmpLimitMB, 64),
    dirLimitMB: positive('dirLimitMB', options.dirLimitMB, 1024),
    dirLimitFiles: Math.floor(positive('dirLimitFiles', options.dirLimitFiles, 100_000)),
    maxProcesses: Math.floor(positive('maxProcesses', options.maxProcesses, 64)),
    python: options.python ?? process.env.LAGENT_PYTHON,
    workDir: options.workDir,
    env: { ...(options.env ?? {}) },
    runAs: options.runAs === false ? false : (options.runAs ?? UNPRIVILEGED),
  };
}

/** The Pythons tried, in order, when no `python` option or `LAGENT_PYTHON` names one. */
export const DEFAULT_PYTHONS = ['python3', '/usr/bin/python3', '/usr/local/bin/python3'];

/**
 * The Python to run: the one asked for, or the first default that runs (and, when the interpreter will drop
 * root, that the unprivileged uid can run: a Python installed under root's home cannot be). Rejects with a
 * `ConfigurationError` that says what to do.
 */
async function findPython(
  asked: string | undefined,
  runAs: { uid: number; gid: number } | undefined,
): Promise<PythonInfo> {
  const candidates = asked === undefined ? DEFAULT_PYTHONS : [asked];
  let first: unknown;
  for (const candidate of candidates) {
    try {
      const info = await probePython(candidate, runAs);
      if (!runAs || info.readableByUnprivileged !== false) return info;
      first ??= new ConfigurationError({
        message:
          `${candidate} (${info.executable}) cannot be run by uid ${runAs.uid}, the unprivileged user the ` +
          'interpreter switches to when lagent-ts runs as root. Use a Python installed system-wide (e.g. ' +
          'apt-get install python3, then python: "/usr/bin/python3"), or pass runAs: false to keep root.',
      });
    } catch (error) {
      first ??= error;
    }
  }
  throw first;
}

const ALLOWED_ENV = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ'];

let warnedNoSandbox = false;

/** Open session pools: closed at process exit, so their processes end and temporary directories go. */
const openPools = new Set<PythonSessions>();
let exitHookInstalled = false;

/** One session: its directory, its live process (if any), and the queue its calls wait in. */
interface Session {
  key: string;
  dir: string;
  process: PythonProcess | undefined;
  starting: Promise<PythonProcess> | undefined;
  queue: Promise<unknown>;
  busy: number;
  idleTimer: NodeJS.Timeout | undefined;
  /** The latest count of the session directory, pending or done. */
  usage: Promise<DirUsage> | undefined;
  /** When that count started (ms since the epoch). */
  countedAt: number;
}

/** How often a session directory is counted at most. */
const COUNT_INTERVAL_MS = 1000;

/** What one run of a session gave, or why it gave nothing. */
export type SessionRun =
  | (RunOutcome & { ipython: boolean })
  | (RunFailure & { restarted: boolean })
  | { kind: 'error'; message: string };

/**
 * The processes of one interpreter tool: one per session, started lazily, at most `maxSessions` (least
 * recently used idle sessions are ended first), each ended after `idleTimeout` unused. Calls on one session
 * run one at a time, in call order; different sessions run in parallel. `close()` ends every process and
 * removes the temporary session directories.
 */
export class PythonSessions {
  readonly options: ResolvedPythonOptions;
  readonly #mode: 'interactive' | 'script';
  readonly #ipython: boolean;
  readonly #label: string;
  readonly #sessions = new Map<string, Session>();
  #closed = false;

  constructor(
    label: string,
    options: ResolvedPythonOptions,
    mode: 'interactive' | 'script',
    ipython: boolean,
  ) {
    this.#label = label;
    this.options = options;
    this.#mode = mode;
    this.#ipython = ipython;
    openPools.add(this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('exit', () => {
        for (const pool of openPools) pool.#shutDown(true);
      });
    }
  }

  /** Number of live sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** The keys of the live sessions. */
  keys(): string[] {
    return [...this.#sessions.keys()];
  }

  /** The pids of the live session processes (for tests and monitoring). */
  pids(): number[] {
    const pids: number[] = [];
    for (const session of this.#sessions.values()) if (session.process?.alive) pids.push(session.process.pid);
    return pids;
  }

  /** Runs `request` in the session's process (started if needed), after the session's earlier calls. */
  run(sessionId: SessionId, request: RunRequest, signal?: AbortSignal): Promise<SessionRun> {
    if (this.#closed) return Promise.resolve({ kind: 'error', message: `${this.#label} was closed` });
    const session = this.#session(String(sessionId));
    session.busy++;
    clearTimeout(session.idleTimer);
    const result = session.queue.then(() => this.#runNow(session, request, signal));
    session.queue = result.catch(() => {});
    return result.finally(() => {
      session.busy--;
      if (session.busy === 0 && this.#sessions.get(session.key) === session) this.#armIdle(session);
    });
  }

  /** Ends one session: its process and (when temporary) its directory. */
  end(sessionId: SessionId): void {
    const session = this.#sessions.get(String(sessionId));
    if (session) this.#end(session);
  }

  /**
   * Ends every session; later calls say the tool was closed. Processes are killed at once; temporary
   * directories are removed in the background (a child process), so a huge tree never blocks this thread.
   */
  close(): void {
    this.#shutDown(false);
  }

  #shutDown(exiting: boolean): void {
    this.#closed = true;
    openPools.delete(this);
    for (const session of [...this.#sessions.values()]) this.#end(session, exiting);
  }

  #session(key: string): Session {
    let session = this.#sessions.get(key);
    if (session) {
      this.#sessions.delete(key); // most recently used last
      this.#sessions.set(key, session);
      return session;
    }
    session = {
      key,
      dir: '',
      process: undefined,
      starting: undefined,
      queue: Promise.resolve(),
      busy: 0,
      idleTimer: undefined,
      usage: undefined,
      countedAt: 0,
    };
    this.#sessions.set(key, session);
    if (this.#sessions.size > this.options.maxSessions) {
      for (const other of this.#sessions.values()) {
        if (other !== session && other.busy === 0) {
          this.#end(other);
          break;
        }
      }
    }
    return session;
  }

  async #runNow(session: Session, request: RunRequest, signal: AbortSignal | undefined): Promise<SessionRun> {
    signal?.throwIfAborted();
    const refused = await this.#overLimits(session);
    if (refused !== undefined) return refused;
    let child: PythonProcess;
    try {
      child = await this.#processOf(session);
    } catch (error) {
      return { kind: 'error', message: error instanceof Error ? error.message : String(error) };
    }
    signal?.throwIfAborted();
    const onAbort = () => child.kill();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const outcome = await child.run(request, this.options.timeout);
      this.#count(session);
      if (outcome.kind === 'done') {
        return { ...outcome, images: confineImages(session.dir, outcome.images), ipython: child.ipython };
      }
      session.process = undefined;
      signal?.throwIfAborted();
      return { ...outcome, restarted: true };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Counts the session directory in the background, at most once per {@link COUNT_INTERVAL_MS}. */
  #count(session: Session): void {
    const now = Date.now();
    if (!session.dir || now - session.countedAt < COUNT_INTERVAL_MS) return;
    session.countedAt = now;
    session.usage = measureDir(session.dir, {
      files: this.options.dirLimitFiles,
      bytes: this.options.dirLimitMB * 1024 * 1024,
    });
  }

  /**
   * A session whose directory was found over its limits is reset (its process ended, a temporary directory
   * removed): the answer says why. Undefined when the session may run.
   */
  async #overLimits(session: Session): Promise<SessionRun | undefined> {
    if (session.usage === undefined) return undefined;
    const usage = await session.usage;
    if (!usage.over) return undefined;
    session.usage = undefined;
    const kept = this.options.workDir !== undefined;
    const dir = session.dir;
    // Reset in place (the session stays in the pool, with its queue): the next run starts a new process, in a
    // new temporary directory.
    session.process?.kill(false);
    session.process = undefined;
    if (!kept) {
      void removeTree(dir);
      session.dir = '';
    }
    return {
      kind: 'error',
      message:
        `The session's directory held more than ${this.options.dirLimitFiles} files or ${this.options.dirLimitMB} MiB ` +
        `(found ${usage.files}${usage.files > this.options.dirLimitFiles ? '+' : ''} files, ${Math.round(usage.bytes / 2 ** 20)}+ MiB), ` +
        `so the session was reset: its variables ${kept ? `are gone; remove files from ${dir} to go on` : 'and files are gone'}. ` +
        'Write fewer or smaller files.',
    };
  }

  #processOf(session: Session): Promise<PythonProcess> {
    if (session.process?.alive) return Promise.resolve(session.process);
    session.process = undefined;
    session.starting ??= this.#start(session).finally(() => {
      session.starting = undefined;
    });
    return session.starting;
  }

  async #start(session: Session): Promise<PythonProcess> {
    const options = this.options;
    const asRoot = process.getuid?.() === 0;
    const runAs = asRoot && options.runAs ? options.runAs : undefined;
    const python = await findPython(options.python, runAs);
    if (!session.dir) session.dir = this.#makeDir(session.key, runAs);
    const sandbox = await this.#sandbox(runAs, !runAs || reachableBy(session.dir, runAs));
    const env = this.#environment(session.dir, sandbox !== undefined);
    // RLIMIT_NPROC counts per user namespace and uid: per session in bubblewrap's user namespace (its init
    // and the driver are there besides what the code starts), or in the driver's own without a sandbox
    // (sessionMaxProcesses). Where there is none every session of the uid shares one count, so what the uid
    // already runs comes on top (and sessions can still crowd each other out later).
    const maxProcesses = sandbox?.userNamespace
      ? options.maxProcesses + 2
      : asRoot && !runAs
        ? undefined
        : options.maxProcesses + processesOf(runAs?.uid ?? process.getuid?.() ?? -1);
    // No process of the session is ever root: the driver (or bubblewrap, in a user namespace) is started as
    // runAs. Only root's bubblewrap without a user namespace starts as root, and the driver switches first.
    const switchTo = sandbox && !sandbox.userNamespace ? runAs : undefined;
    const spec: DriverSpawn = {
      command: sandbox ? 'bwrap' : python.executable,
      args: sandbox
        ? [
            ...sandboxArgs(python, session.dir, sandbox, {
              tmpBytes: options.tmpLimitMB * 1024 * 1024,
              switchesUser: switchTo !== undefined,
            }),
            python.executable,
          ]
        : [],
      env,
      cwd: session.dir,
      sandboxed: sandbox !== undefined,
      user: switchTo ? undefined : runAs,
      switchTo,
      seccomp: sandbox?.seccomp,
      tagged: sandbox === undefined,
      config: {
        mode: this.#mode,
        ipython: this.#ipython,
        workDir: session.dir,
        parentPid: sandbox ? undefined : process.pid,
        memoryBytes: Math.floor(options.memoryLimitMB * 1024 * 1024),
        fileSizeBytes: Math.floor(options.fileSizeLimitMB * 1024 * 1024),
        maxProcesses,
        ownUserNamespace: sandbox === undefined && !(asRoot && !runAs),
        sessionMaxProcesses: options.maxProcesses + 1,
      },
    };
    if (this.#closed) throw new ConfigurationError({ message: `${this.#label} was closed` });
    const child = await PythonProcess.start(spec, 60_000).catch((error: Error) => {
      throw (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? pythonMissing(spec.command, 'not found')
        : error;
    });
    if (this.#closed || this.#sessions.get(session.key) !== session) {
      child.kill();
      throw new ConfigurationError({ message: `${this.#label} was closed` });
    }
    session.process = child;
    return child;
  }

  /** How the session runs under bubblewrap, or `undefined` when it runs without (asked, or not available). */
  async #sandbox(
    runAs: { uid: number; gid: number } | undefined,
    reachable: boolean,
  ): Promise<SandboxSupport | undefined> {
    const mode = this.options.sandbox;
    if (mode === 'none') return undefined;
    const support = await sandboxSupport(runAs, reachable);
    if (mode === 'bwrap' && !support) {
      throw new ConfigurationError({
        message:
          "sandbox: 'bwrap' was asked for, but bubblewrap does not run here. Install it (apt-get install " +
          "bubblewrap, dnf install bubblewrap) and allow user namespaces, or pass sandbox: 'none'.",
      });
    }
    if (!support && !warnedNoSandbox) {
      warnedNoSandbox = true;
      process.emitWarning(
        'bubblewrap does not run here, so Python interpreter tools run without a sandbox (network and the ' +
          "file system reachable). Install bubblewrap (apt-get install bubblewrap) to enable it, or pass sandbox: 'none' to silence this.",
        { code: 'LAGENT_NO_SANDBOX' },
      );
    }
    return support;
  }

  #makeDir(key: string, runAs: { uid: number; gid: number } | undefined): string {
    let dir: string;
    if (this.options.workDir !== undefined) {
      dir = join(this.options.workDir, sessionDirName(key));
      mkdirSync(dir, { recursive: true });
    } else {
      dir = mkdtempSync(join(tmpdir(), 'lagent-python-'));
    }
    if (runAs) chownSync(dir, runAs.uid, runAs.gid);
    return dir;
  }

  #environment(dir: string, sandboxed: boolean): Record<string, string> {
    const env: Record<string, string> = {};
    for (const name of ALLOWED_ENV) {
      const value = process.env[name];
      if (value !== undefined) env[name] = value;
    }
    env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
    env.LANG ??= 'C.UTF-8';
    env.HOME = dir;
    env.TMPDIR = sandboxed ? '/tmp' : dir;
    env.MPLBACKEND = 'Agg';
    env.MPLCONFIGDIR = join(dir, '.matplotlib');
    env.OPENBLAS_NUM_THREADS = '1';
    env.OMP_NUM_THREADS = '1';
    return Object.assign(env, this.options.env);
  }

  #armIdle(session: Session): void {
    if (!Number.isFinite(this.options.idleTimeout)) return;
    clearTimeout(session.idleTimer);
    session.idleTimer = setTimeout(() => {
      if (session.busy === 0) this.#end(session);
    }, this.options.idleTimeout);
    session.idleTimer.unref();
  }

  /** Ends a session's process and removes its temporary directory (blocking only when the process exits). */
  #end(session: Session, exiting = false): void {
    clearTimeout(session.idleTimer);
    session.process?.kill(exiting);
    session.process = undefined;
    if (this.#sessions.get(session.key) === session) this.#sessions.delete(session.key);
    if (session.dir && this.options.workDir === undefined) {
      if (exiting) removeTreeSync(session.dir);
      else void removeTree(session.dir);
    }
  }
}

export type { PythonInfo };
