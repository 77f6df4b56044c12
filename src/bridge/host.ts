import { pathToFileURL } from 'node:url';
import {
  MessageChannel,
  type MessagePort,
  type ResourceLimits,
  receiveMessageOnPort,
  Worker,
} from 'node:worker_threads';
import { ConfigurationError, SyncBridgeError, TimeoutError } from '../schema/errors';
import { deserializeError } from './errors';
import { locateBridge } from './location';
import {
  type BridgeReply,
  type BridgeRequest,
  REPLY_COUNTER,
  WORKER_EXITED,
  type WorkerExitReport,
} from './protocol';

/** How long a fresh worker may take to load its modules before the first call gives up. */
const STARTUP_TIMEOUT_MS = 60_000;

/** After a call timed out: how long the worker gets to answer a ping before it is taken for hung and stopped. */
const PING_TIMEOUT_MS = 1_000;

/** The longest timer Node supports; longer ones fire after 1 ms. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * Loads the TypeScript worker entry from sources: registers tsx in the worker (it is not inherited from the
 * parent thread), then imports the entry. A failure is reported to the blocked thread before the worker dies.
 */
const TYPESCRIPT_BOOTSTRAP = `
const { workerData } = require('node:worker_threads');
const { port, state } = workerData.lagentSyncBridge;
const { tsxApi, entry } = workerData.lagentBootstrap;
import(tsxApi)
  .then(({ register }) => { register(); return import(entry); })
  .catch((error) => {
    port.postMessage({ fatal: String(error && error.stack || error) });
    Atomics.store(state, ${WORKER_EXITED}, 1);
    Atomics.add(state, ${REPLY_COUNTER}, 1);
    Atomics.notify(state, ${REPLY_COUNTER});
  });
`;

/**
 * The monitor thread: it starts the bridge worker and does nothing else, so its event loop is always free to see
 * the worker's 'exit' event, whatever the cause (process.exit, an uncaught exception, running out of memory,
 * termination). The blocked thread cannot see that event itself (its loop is stopped in Atomics.wait), and a
 * worker that runs out of memory dies without running any more JavaScript, so it cannot say so either. The
 * monitor posts the cause, then raises the exit flag and wakes the blocked thread.
 */
const MONITOR = `
const { Worker, workerData } = require('node:worker_threads');
const { entry, isEval, options, report, state } = workerData.lagentSyncBridgeMonitor;
const describe = (error) => ({ name: String(error && error.name), message: String(error && error.message), code: error && typeof error.code === 'string' ? error.code : undefined });
const exited = (exitCode, error) => {
  report.postMessage({ exitCode, error });
  Atomics.store(state, ${WORKER_EXITED}, 1);
  Atomics.add(state, ${REPLY_COUNTER}, 1);
  Atomics.notify(state, ${REPLY_COUNTER});
};
let worker;
try {
  worker = new Worker(entry, { ...options, eval: isEval });
} catch (error) {
  exited(1, describe(error));
}
if (worker) {
  let failure;
  worker.on('error', (error) => { failure = describe(error); });
  worker.on('exit', (exitCode) => exited(exitCode, failure));
}
`;

const BLOCKING_ADVICE =
  'sync lagent-ts components (GPTAPI, ...) block the calling thread until their worker answers, and this thread may not block';

let probe: Int32Array | undefined;

/** Throws a ConfigurationError where the thread may not block (no SharedArrayBuffer, or Atomics.wait refused). */
export function assertCanBlock(): void {
  if (typeof SharedArrayBuffer !== 'function' || typeof Atomics?.wait !== 'function') {
    throw new ConfigurationError({
      message: `${BLOCKING_ADVICE} (no SharedArrayBuffer / Atomics.wait); use the Async* variant here`,
    });
  }
  probe ??= new Int32Array(new SharedArrayBuffer(4));
  try {
    // Returns 'not-equal' at once where blocking is allowed; throws where it is not (e.g. a browser main thread).
    Atomics.wait(probe, 0, 1, 0);
  } catch (error) {
    throw new ConfigurationError({
      message: `${BLOCKING_ADVICE} (Atomics.wait is not allowed here); use the Async* variant here`,
      cause: error,
    });
  }
}

/** Options of one bridge worker. */
export interface BridgeHostOptions {
  /** V8 heap limits of the worker. */
  resourceLimits?: ResourceLimits | undefined;
}

/** Describes a monitor report for an error message. */
function describeExit(report: WorkerExitReport | undefined): string {
  if (report === undefined) return 'it is gone';
  const { error, exitCode } = report;
  if (error?.code === 'ERR_WORKER_OUT_OF_MEMORY')
    return `it ran out of memory (${error.code}: ${error.message})`;
  if (error !== undefined) {
    return `${error.name}${error.code ? ` [${error.code}]` : ''}: ${error.message}; exit code ${exitCode}`;
  }
  return `exit code ${exitCode}`;
}

/**
 * One worker thread hosting bridged objects, watched by a monitor thread, with a blocking request/reply
 * channel. Once dead (the worker exited, or stopped answering), it stays dead: callers start a new host.
 */
export class BridgeHost {
  readonly #monitor: Worker;
  readonly #port: MessagePort;
  readonly #reports: MessagePort;
  readonly #state: Int32Array;
  readonly dedicated: boolean;
  #nextId = 1;
  #started = false;
  #dead: SyncBridgeError | undefined;

  constructor(options: BridgeHostOptions = {}, dedicated = false) {
    const location = locateBridge();
    const requests = new MessageChannel();
    const reports = new MessageChannel();
    this.#state = new Int32Array(new SharedArrayBuffer(8));
    const lagentSyncBridge = { port: requests.port2, state: this.#state };
    const workerOptions = {
      workerData: location.typescript
        ? {
            lagentSyncBridge,
            lagentBootstrap: { tsxApi: location.tsxApi, entry: pathToFileURL(location.worker).href },
          }
        : { lagentSyncBridge },
      transferList: [requests.port2],
      ...(options.resourceLimits ? { resourceLimits: options.resourceLimits } : {}),
    };
    this.#monitor = new Worker(MONITOR, {
      eval: true,
      workerData: {
        lagentSyncBridgeMonitor: {
          entry: location.typescript ? TYPESCRIPT_BOOTSTRAP : location.worker,
          isEval: location.typescript,
          options: workerOptions,
          report: reports.port2,
          state: this.#state,
        },
      },
      transferList: [requests.port2, reports.port2],
    });
    // Never keep the process alive for the bridge: a script that used GPTAPI exits when it is done.
    this.#monitor.unref();
    this.#monitor.on('error', (error) => {
      this.#dead ??= new SyncBridgeError({
        message: `sync bridge monitor failed: ${error.message}`,
        cause: error,
      });
    });
    this.#monitor.on('exit', () => {
      this.#dead ??= new SyncBridgeError({ message: `sync bridge worker exited (${this.#exitReason()})` });
    });
    this.#port = requests.port1;
    this.#port.unref();
    this.#reports = reports.port1;
    this.#reports.unref();
    this.dedicated = dedicated;
  }

  get isAlive(): boolean {
    return this.#dead === undefined && Atomics.load(this.#state, WORKER_EXITED) === 0;
  }

  nextId(): number {
    return this.#nextId++;
  }

  /**
   * Sends a request and blocks this thread until its reply arrives, the worker dies (a `SyncBridgeError`), or
   * `timeoutMs` pass (a `TimeoutError`; `label` names the call). A fresh worker gets extra time to start.
   */
  request(
    request: BridgeRequest & { id: number },
    timeoutMs: number,
    label: string,
  ): { value: unknown; done: boolean } {
    if (this.#dead) throw this.#dead;
    try {
      this.#port.postMessage(request);
    } catch (error) {
      throw new ConfigurationError({
        message: `arguments for the sync bridge must be structured-cloneable (no functions or class instances): ${(error as Error).message}`,
        cause: error,
      });
    }
    // Loading modules (the worker's own, or the hosted class's) is not the call's time.
    const allowance =
      request.op === 'create' || !this.#started ? Math.max(timeoutMs, STARTUP_TIMEOUT_MS) : timeoutMs;
    let reply = this.#await((id) => id === request.id, performance.now() + allowance);
    reply ??= this.#timedOut(request, allowance, label);
    if (reply.ok) return { value: reply.value, done: reply.done === true };
    throw deserializeError(reply.error);
  }

  /** Sends a request that has no reply (release, return). */
  post(request: BridgeRequest): void {
    if (this.isAlive) this.#port.postMessage(request);
  }

  /** Stops the worker; calls waiting on it fail, later ones need a new host. */
  stop(reason: string): void {
    this.#dead ??= new SyncBridgeError({ message: reason });
    void this.#monitor.terminate();
  }

  /** Waits for the first reply `accept` takes (dropping stale ones), or until `deadline`: then undefined. */
  #await(accept: (id: number) => boolean, deadline: number): BridgeReply | undefined {
    for (;;) {
      const seen = Atomics.load(this.#state, REPLY_COUNTER);
      let received = receiveMessageOnPort(this.#port);
      // A reply is posted before the exit flag is raised: read once more before giving up on the worker.
      if (received === undefined && Atomics.load(this.#state, WORKER_EXITED) !== 0) {
        received = receiveMessageOnPort(this.#port);
        if (received === undefined) {
          this.#fail(`sync bridge worker exited while a call was waiting for it (${this.#exitReason()})`);
        }
      }
      if (received !== undefined) {
        const reply = received.message as BridgeReply | { fatal: string };
        if ('fatal' in reply) this.#fail(`sync bridge worker could not start:\n${reply.fatal}`);
        if (!accept(reply.id)) continue; // a stale reply to an abandoned request
        this.#started = true;
        return reply;
      }
      const remaining = deadline - performance.now();
      if (remaining <= 0) return undefined;
      Atomics.wait(this.#state, REPLY_COUNTER, seen, Math.min(remaining, 1000));
    }
  }

  /**
   * A call ran out of time. A worker that still answers a ping keeps serving (the late reply will be dropped,
   * a stream is returned); one that does not is hung (its event loop is blocked) and is stopped, so the next
   * call starts afresh. Returns the call's own reply if it arrives meanwhile.
   */
  #timedOut(request: BridgeRequest & { id: number }, allowance: number, label: string): BridgeReply {
    if (!this.#started) {
      this.#fail(`sync bridge worker did not answer within ${allowance} ms of starting`);
    }
    const pingId = this.nextId();
    this.#port.postMessage({ op: 'ping', id: pingId } satisfies BridgeRequest);
    const reply = this.#await(
      (id) => id === pingId || id === request.id,
      performance.now() + PING_TIMEOUT_MS,
    );
    if (reply !== undefined && reply.id === request.id) return reply;
    const base = `${label} did not answer within ${allowance} ms (the sync bridge timeout)`;
    if (reply === undefined) {
      this.stop(`sync bridge worker stopped responding (${label} timed out)`);
      throw new TimeoutError({
        message: `${base}, and its worker did not answer a ping within ${PING_TIMEOUT_MS} ms either (its event loop is blocked): the worker was stopped, and the next call starts a new one`,
        timeoutMs: allowance,
      });
    }
    if (request.op === 'next') this.post({ op: 'return', iteratorId: request.iteratorId });
    throw new TimeoutError({
      message: `${base}. If it waits for something this thread should do (a server started on this thread, say), that can never happen while this thread is blocked`,
      timeoutMs: allowance,
    });
  }

  #exitReason(): string {
    let report: WorkerExitReport | undefined;
    for (
      let message = receiveMessageOnPort(this.#reports);
      message;
      message = receiveMessageOnPort(this.#reports)
    ) {
      report = message.message as WorkerExitReport;
    }
    if (report !== undefined) this.#lastReport = report;
    return describeExit(this.#lastReport);
  }

  #lastReport: WorkerExitReport | undefined;

  #fail(message: string): never {
    this.stop(message);
    throw this.#dead as SyncBridgeError;
  }
}

let shared: BridgeHost | undefined;

/** The worker every bridged object of this thread shares (a new one when the last one died). */
export function sharedHost(): BridgeHost {
  if (shared === undefined || !shared.isAlive) shared = new BridgeHost();
  return shared;
}
