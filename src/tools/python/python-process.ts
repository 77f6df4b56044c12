import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { driverSource } from './driver-source';
import { SETPRIV } from './python-host';
import { killTagged, killTaggedSync, TAG_VARIABLE } from './stray-processes';

/** How a session's driver is started: see `PythonSessions` for where each field comes from. */
export interface DriverSpawn {
  /** The command and its arguments that run the driver (Python directly, or bubblewrap then Python). */
  command: string;
  args: string[];
  /** The whole environment of the process (an allowlist, never the parent's). */
  env: Record<string, string>;
  cwd: string;
  /** Whether `command` is bubblewrap, whose init reports a signal N that ended the driver as exit code 128 + N. */
  sandboxed: boolean;
  /** The user `command` is started as (when this process is root): no process of the session is ever root. */
  user?: { uid: number; gid: number } | undefined;
  /** The user the driver switches to as its first act (root's bubblewrap without a user namespace only). */
  switchTo?: { uid: number; gid: number } | undefined;
  /** A seccomp filter bubblewrap reads from fd 5 (`--seccomp 5`). */
  seccomp?: Buffer | undefined;
  /**
   * Tag the driver's environment (see `stray-processes.ts`) so that what it starts in sessions of their own
   * is killed with it: for drivers without a sandbox, whose PID namespace would otherwise do it.
   */
  tagged?: boolean | undefined;
  /** What the driver reads from its command line. */
  config: DriverConfig;
}

/** The driver's start-up configuration (JSON on its command line). */
export interface DriverConfig {
  mode: 'interactive' | 'script';
  ipython: boolean;
  workDir: string;
  parentPid?: number | undefined;
  memoryBytes?: number | undefined;
  fileSizeBytes?: number | undefined;
  maxProcesses?: number | undefined;
  /** Without a sandbox: enter a user namespace of its own (see the driver), where the process count is per session. */
  ownUserNamespace?: boolean | undefined;
  /** RLIMIT_NPROC in that namespace, where it counts this session's processes only. */
  sessionMaxProcesses?: number | undefined;
}

/** One request to the driver. */
export interface RunRequest {
  code: string;
  /** Python-level output beyond this many bytes is counted, not written. */
  maxBytes: number;
  figures?: boolean | undefined;
  cpuSeconds?: number | undefined;
  answerExpr?: string | undefined;
  answerSymbol?: string | undefined;
  answerFromStdout?: boolean | undefined;
}

/** What a run gave: its output (stdout and stderr in order), and the driver's answer. */
export interface RunOutcome {
  kind: 'done';
  output: string;
  /** Bytes of output not kept (past the cap). */
  dropped: number;
  value: string | null;
  error: string | null;
  images: string[];
}

/** Why a run has no outcome: the process ended (or was ended), or the run timed out and the process was killed. */
export interface RunFailure {
  kind: 'timeout' | 'exit';
  output: string;
  dropped: number;
  /** Exit code or signal name of the process, when it ended by itself or from outside. */
  exit?: string | undefined;
}

interface Pending {
  id: number;
  /** The reply must carry it: a frame without it is not the driver's answer. */
  nonce: string;
  /** The largest reply frame accepted for this run. */
  replyCap: number;
  marker: Buffer;
  resolve(result: RunOutcome | RunFailure): void;
  reply?: { value: string | null; error: string | null; images: string[]; dropped: number } | undefined;
  markerSeen: boolean;
  timer?: NodeJS.Timeout | undefined;
  graceTimer?: NodeJS.Timeout | undefined;
}

/** The largest frame accepted while no run is pending (the ready message). */
const IDLE_FRAME_CAP = 64 * 1024;

/**
 * The largest reply frame a run may send: its value and error are cut at `maxBytes` characters by the driver,
 * so a frame past this is not the driver's. Such a frame ends the process before any of it is buffered.
 */
export function replyCap(maxBytes: number): number {
  return Math.max(1024 * 1024, maxBytes * 8 + 64 * 1024);
}

const live = new Set<PythonProcess>();
let exitHookInstalled = false;

/** Kills every live driver when this process (or worker thread) exits: no interpreter outlives its parent. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) child.kill(true);
  });
}

/** How a driver ended: `exit code N`, or the signal's name when bubblewrap reported one as 128 + N. */
function exitName(code: number | null, sandboxed: boolean): string {
  if (sandboxed && code !== null && code > 128) {
    const signal = Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0];
    if (signal) return signal;
  }
  return `exit code ${code}`;
}

/** Collects a run's share of fd 1: bytes up to a cap, the rest counted, until the run's end marker. */
class OutputCollector {
  readonly #cap: number;
  readonly #kept: Buffer[] = [];
  #keptBytes = 0;
  dropped = 0;

  constructor(cap: number) {
    this.#cap = cap;
  }

  add(chunk: Buffer): void {
    const room = this.#cap - this.#keptBytes;
    if (chunk.length <= room) {
      this.#kept.push(chunk);
      this.#keptBytes += chunk.length;
    } else {
      if (room > 0) this.#kept.push(chunk.subarray(0, room));
      this.#keptBytes = Math.max(this.#keptBytes, this.#cap);
      this.dropped += chunk.length - Math.max(room, 0);
    }
  }

  text(): string {
    return Buffer.concat(this.#kept).toString('utf8');
  }
}

/**
 * One live driver process and its pipes: fd 3 carries requests, fd 4 replies (length-prefixed JSON), fd 1 the
 * user's output, which the driver ends with each request's random marker. One request at a time (the caller,
 * `PythonSessions`, queues them). A run past its timeout kills the whole process group; so does `kill()`.
 * An idle process is unref'd: it never keeps Node running.
 */
export class PythonProcess {
  readonly pid: number;
  /** Whether the driver runs IPython's shell (else the plain runner), as it reported when ready. */
  ipython = false;
  #child: ChildProcess;
  #requests: Writable;
  readonly #frameChunks: Buffer[] = [];
  #frameBytes = 0;
  /** The size of the frame being read, once its header is in; -1 before. */
  #frameSize = -1;
  #held: Buffer = Buffer.alloc(0);
  #collector: OutputCollector | undefined;
  #pending: Pending | undefined;
  #ready: { resolve(): void; reject(error: Error): void } | undefined;
  #nextId = 0;
  #exit: string | undefined;
  #stderr = '';
  #alive = true;
  readonly #tag: string | undefined;

  private constructor(child: ChildProcess, sandboxed: boolean, tag: string | undefined) {
    this.#child = child;
    this.#tag = tag;
    this.pid = child.pid!;
    this.#requests = child.stdio[3] as Writable;
    live.add(this);
    installExitHook();
    (child.stdio[4] as Readable).on('data', (chunk: Buffer) => this.#onFrames(chunk));
    child.stdout!.on('data', (chunk: Buffer) => this.#onOutput(chunk));
    child.stderr!.on('data', (chunk: Buffer) => {
      if (this.#stderr.length < 4096) this.#stderr += chunk.toString('utf8');
    });
    for (const stream of [child.stdin, child.stdout, child.stderr, child.stdio[3], child.stdio[4]]) {
      (stream as Writable | Readable | null)?.on('error', () => {});
    }
    child.on('exit', (code, signal) => this.#onExit(signal ?? exitName(code, sandboxed)));
    child.on('error', (error) => this.#onExit(error.message));
  }

  /**
   * Starts a driver and waits until it is ready. Rejects with the driver's own words when it cannot start
   * (e.g. the Python installation is unreadable for the unprivileged uid).
   */
  static start(spec: DriverSpawn, startTimeout: number): Promise<PythonProcess> {
    const args = [...spec.args, '-I', '-u', '-c', driverSource(), JSON.stringify(spec.config)];
    if (spec.switchTo) {
      const { uid, gid } = spec.switchTo;
      // setpriv switches before Python starts; without it the driver switches as its first statement.
      if (SETPRIV && spec.sandboxed)
        args.splice(
          spec.args.length - 1,
          0,
          SETPRIV,
          `--reuid=${uid}`,
          `--regid=${gid}`,
          '--clear-groups',
          '--',
        );
      else args.push(`${uid}:${gid}`);
    }
    const tag = spec.tagged ? randomBytes(16).toString('hex') : undefined;
    const child = spawn(spec.command, args, {
      cwd: spec.cwd,
      env: tag ? { ...spec.env, [TAG_VARIABLE]: tag } : spec.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', ...(spec.seccomp ? ['pipe' as const] : [])],
      detached: true,
      ...(spec.user ? { uid: spec.user.uid, gid: spec.user.gid } : {}),
    });
    if (spec.seccomp && child.pid !== undefined) {
      const filter = (child.stdio as unknown as Writable[])[5]!;
      filter.on('error', () => {});
      filter.end(spec.seccomp);
    }
    if (child.pid === undefined) {
      return new Promise((_, reject) => {
        child.once('error', (error) => reject(error));
      });
    }
    const process_ = new PythonProcess(child, spec.sandboxed, tag);
    return new Promise<PythonProcess>((resolve, reject) => {
      const timer = setTimeout(() => {
        process_.kill();
        reject(new Error(`the Python process did not start within ${startTimeout} ms`));
      }, startTimeout);
      process_.#ready = {
        resolve: () => {
          clearTimeout(timer);
          process_.#idle();
          resolve(process_);
        },
        reject: (error) => {
          clearTimeout(timer);
          process_.kill();
          reject(error);
        },
      };
    });
  }

  /** Whether the process still runs and can take a request. */
  get alive(): boolean {
    return this.#alive;
  }

  /**
   * Runs one request. Resolves with the outcome, or a failure when the timeout passes (the process group is
   * then killed) or the process ends meanwhile. Never rejects.
   */
  run(request: RunRequest, timeout: number): Promise<RunOutcome | RunFailure> {
    if (!this.#alive || this.#pending) {
      return Promise.resolve({ kind: 'exit', output: '', dropped: 0, exit: this.#exit ?? 'busy' });
    }
    const id = ++this.#nextId;
    const marker = `\0LAGENT-END-${randomBytes(12).toString('hex')}\0`;
    const outputCap = request.maxBytes + 4096;
    this.#collector = new OutputCollector(outputCap);
    this.#ref();
    const nonce = randomBytes(16).toString('hex');
    return new Promise((resolve) => {
      const pending: Pending = {
        id,
        nonce,
        replyCap: replyCap(request.maxBytes),
        marker: Buffer.from(marker, 'latin1'),
        resolve,
        markerSeen: false,
      };
      this.#pending = pending;
      if (Number.isFinite(timeout)) {
        pending.timer = setTimeout(() => {
          if (this.#pending !== pending) return;
          this.kill();
          this.#finish({ kind: 'timeout', ...this.#takeOutput() });
        }, timeout);
      }
      const body = Buffer.from(JSON.stringify({ ...request, id, marker, nonce }), 'utf8');
      const header = Buffer.allocUnsafe(4);
      header.writeUInt32BE(body.length, 0);
      this.#requests.write(Buffer.concat([header, body]));
    });
  }

  /**
   * Kills the process group (the driver and everything it started), and what it started in sessions of their
   * own when it is tagged (at once when `exiting`, else in the background); idempotent.
   */
  kill(exiting = false): void {
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      try {
        process.kill(-this.pid, 'SIGKILL');
      } catch {
        this.#child.kill('SIGKILL');
      }
    }
    this.#alive = false;
    live.delete(this);
    this.#killStrays(exiting);
  }

  #strayKillStarted = false;

  #killStrays(exiting: boolean): void {
    if (!this.#tag || (this.#strayKillStarted && !exiting)) return;
    this.#strayKillStarted = true;
    if (exiting) killTaggedSync([this.#tag]);
    else void killTagged([this.#tag]);
  }

  /**
   * Reads reply frames. Chunks are kept as they come and joined once per frame (never per chunk), and a header
   * announcing more than the run's reply cap ends the process at once: nothing the code inside can write to
   * the reply pipe makes this side buffer or copy more than that.
   */
  #onFrames(chunk: Buffer): void {
    if (!this.#alive) return;
    this.#frameChunks.push(chunk);
    this.#frameBytes += chunk.length;
    for (;;) {
      if (this.#frameSize < 0) {
        if (this.#frameBytes < 4) return;
        const size = this.#takeFrameBytes(4).readUInt32BE(0);
        const cap = this.#pending?.replyCap ?? IDLE_FRAME_CAP;
        if (size > cap) {
          this.#exit ??= `a reply frame of ${size} bytes, over the ${cap}-byte limit`;
          this.kill();
          this.#frameChunks.length = 0;
          this.#frameBytes = 0;
          return;
        }
        this.#frameSize = size;
      }
      if (this.#frameBytes < this.#frameSize) return;
      const body = this.#takeFrameBytes(this.#frameSize).toString('utf8');
      this.#frameSize = -1;
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(body) as Record<string, unknown>;
      } catch {
        this.#exit ??= 'a reply that is not JSON';
        this.kill();
        return;
      }
      this.#onMessage(message);
    }
  }

  /** Removes the first `count` buffered reply bytes and returns them (one copy at most). */
  #takeFrameBytes(count: number): Buffer {
    this.#frameBytes -= count;
    const first = this.#frameChunks[0]!;
    if (first.length >= count) {
      if (first.length === count) this.#frameChunks.shift();
      else this.#frameChunks[0] = first.subarray(count);
      return first.subarray(0, count);
    }
    const out = Buffer.allocUnsafe(count);
    let filled = 0;
    while (filled < count) {
      const chunk = this.#frameChunks[0]!;
      const part = Math.min(chunk.length, count - filled);
      chunk.copy(out, filled, 0, part);
      filled += part;
      if (part === chunk.length) this.#frameChunks.shift();
      else this.#frameChunks[0] = chunk.subarray(part);
    }
    return out;
  }

  #onMessage(message: Record<string, unknown>): void {
    if (this.#ready) {
      const ready = this.#ready;
      this.#ready = undefined;
      if (message.ready === true) {
        this.ipython = message.ipython === true;
        ready.resolve();
      } else ready.reject(new Error(String(message.error ?? 'the Python driver could not start')));
      return;
    }
    const pending = this.#pending;
    if (!pending || message.id !== pending.id || message.nonce !== pending.nonce) return;
    pending.reply = {
      value: typeof message.value === 'string' ? message.value : null,
      error: typeof message.error === 'string' ? message.error : null,
      images: Array.isArray(message.images) ? message.images.map(String) : [],
      dropped: typeof message.dropped === 'number' ? message.dropped : 0,
    };
    if (pending.markerSeen) this.#complete(pending);
    else {
      // The marker was written to fd 1 before the reply, but the pipes are read independently: give it a moment.
      pending.graceTimer = setTimeout(() => this.#complete(pending), 1000);
    }
  }

  #onOutput(chunk: Buffer): void {
    const pending = this.#pending;
    const collector = this.#collector;
    if (!pending || !collector || pending.markerSeen) {
      return; // output between runs (a background subprocess): not part of any run
    }
    const buffer = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk]);
    const at = buffer.indexOf(pending.marker);
    if (at >= 0) {
      collector.add(buffer.subarray(0, at));
      this.#held = Buffer.alloc(0);
      pending.markerSeen = true;
      if (pending.reply) this.#complete(pending);
      return;
    }
    const keep = Math.min(buffer.length, pending.marker.length - 1);
    collector.add(buffer.subarray(0, buffer.length - keep));
    this.#held = Buffer.from(buffer.subarray(buffer.length - keep));
  }

  #complete(pending: Pending): void {
    if (this.#pending !== pending || !pending.reply) return;
    const { value, error, images, dropped } = pending.reply;
    const output = this.#takeOutput();
    this.#finish({
      kind: 'done',
      output: output.output,
      dropped: output.dropped + dropped,
      value,
      error,
      images,
    });
  }

  #takeOutput(): { output: string; dropped: number } {
    const collector = this.#collector;
    if (this.#held.length > 0) collector?.add(this.#held);
    this.#held = Buffer.alloc(0);
    this.#collector = undefined;
    return { output: collector?.text() ?? '', dropped: collector?.dropped ?? 0 };
  }

  #finish(result: RunOutcome | RunFailure): void {
    const pending = this.#pending;
    if (!pending) return;
    clearTimeout(pending.timer);
    clearTimeout(pending.graceTimer);
    this.#pending = undefined;
    if (this.#alive) this.#idle();
    pending.resolve(result);
  }

  #onExit(how: string): void {
    this.#exit ??= how;
    this.#alive = false;
    live.delete(this);
    // Whatever the driver started is ended with it.
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
    this.#killStrays(false);
    if (this.#ready) {
      const ready = this.#ready;
      this.#ready = undefined;
      const said = this.#stderr.trim().split('\n').slice(-3).join('\n');
      ready.reject(
        new Error(`the Python process ended as it started (${this.#exit})${said ? `: ${said}` : ''}`),
      );
    }
    if (this.#pending) this.#finish({ kind: 'exit', exit: this.#exit, ...this.#takeOutput() });
  }

  #ref(): void {
    this.#child.ref();
    for (const stream of [this.#child.stdout, this.#child.stdio[4]]) (stream as { ref?(): void })?.ref?.();
  }

  #idle(): void {
    this.#child.unref();
    for (const stream of [
      this.#child.stdout,
      this.#child.stderr,
      this.#child.stdio[3],
      this.#child.stdio[4],
    ]) {
      (stream as { unref?(): void })?.unref?.();
    }
  }
}
