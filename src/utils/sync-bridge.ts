import { pathToFileURL } from 'node:url';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { ConfigurationError, SyncBridgeError } from '../schema/errors';
import { deserializeError } from './sync-bridge-errors';
import { locateBridge } from './sync-bridge-location';
import { type BridgeReply, type BridgeRequest, REPLY_COUNTER, WORKER_EXITED } from './sync-bridge-protocol';

/** Which async object a {@link SyncBridge} hosts: a class exported by a module, and its constructor arguments. */
export interface SyncBridgeTarget {
  /** Name of the exported class, e.g. `'AsyncGPTAPI'`. */
  exportName: string;
  /** Constructor arguments; they are structured-cloned, so no functions or class instances. @default [] */
  args?: readonly unknown[];
  /**
   * Absolute path or `file:` URL of the module exporting the class.
   * @default lagent-ts's own entry (the build's `index.js` / `index.cjs`, or `src/index.ts` from sources)
   */
  module?: string | URL;
}

/** How long a fresh worker may take to load its modules before the first call gives up. */
const STARTUP_TIMEOUT_MS = 60_000;

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
    Atomics.notify(state, ${REPLY_COUNTER});
  });
`;

const BLOCKING_ADVICE =
  'sync lagent-ts components (GPTAPI, ...) block the calling thread until their worker answers, and this thread may not block';

let probe: Int32Array | undefined;

/** Throws a ConfigurationError where the thread may not block (no SharedArrayBuffer, or Atomics.wait refused). */
function assertCanBlock(): void {
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

/** One worker per calling thread, shared by every bridged object of that thread. */
class BridgeHost {
  readonly #worker: Worker;
  readonly #port: MessagePort;
  readonly #state: Int32Array;
  #nextId = 1;
  #started = false;
  #dead: Error | undefined;

  constructor() {
    const location = locateBridge();
    const { port1, port2 } = new MessageChannel();
    this.#state = new Int32Array(new SharedArrayBuffer(8));
    const lagentSyncBridge = { port: port2, state: this.#state };
    this.#worker = location.typescript
      ? new Worker(TYPESCRIPT_BOOTSTRAP, {
          eval: true,
          workerData: {
            lagentSyncBridge,
            lagentBootstrap: { tsxApi: location.tsxApi, entry: pathToFileURL(location.worker).href },
          },
          transferList: [port2],
        })
      : new Worker(location.worker, { workerData: { lagentSyncBridge }, transferList: [port2] });
    // Never keep the process alive for the bridge: a script that used GPTAPI exits when it is done.
    this.#worker.unref();
    this.#worker.on('error', (error) => {
      this.#dead ??= new SyncBridgeError({
        message: `sync bridge worker failed: ${error.message}`,
        cause: error,
      });
    });
    this.#worker.on('exit', (code) => {
      this.#dead ??= new SyncBridgeError({ message: `sync bridge worker exited with code ${code}` });
      if (host === this) host = undefined;
    });
    this.#port = port1;
    this.#port.unref();
    this.library = location.library;
  }

  readonly library: string;

  get isAlive(): boolean {
    return this.#dead === undefined && Atomics.load(this.#state, WORKER_EXITED) === 0;
  }

  /** Sends a request and blocks this thread until its reply arrives. */
  request(request: BridgeRequest & { id: number }): { value: unknown; done: boolean } {
    if (this.#dead) throw this.#dead;
    try {
      this.#port.postMessage(request);
    } catch (error) {
      throw new ConfigurationError({
        message: `arguments for the sync bridge must be structured-cloneable (no functions or class instances): ${(error as Error).message}`,
        cause: error,
      });
    }
    const deadline = this.#started ? Number.POSITIVE_INFINITY : Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      const seen = Atomics.load(this.#state, REPLY_COUNTER);
      let received = receiveMessageOnPort(this.#port);
      // The worker posts before it sets the exit flag: read once more before giving up on it.
      if (received === undefined && Atomics.load(this.#state, WORKER_EXITED) !== 0) {
        received = receiveMessageOnPort(this.#port);
        if (received === undefined) this.#fail('sync bridge worker exited while a call was waiting for it');
      }
      if (received !== undefined) {
        const reply = received.message as BridgeReply | { fatal: string };
        if ('fatal' in reply) this.#fail(`sync bridge worker could not start:\n${reply.fatal}`);
        if (reply.id !== request.id) continue; // a stale reply to an abandoned request
        this.#started = true;
        if (reply.ok) return { value: reply.value, done: reply.done === true };
        throw deserializeError(reply.error);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        this.#fail(`sync bridge worker did not answer within ${STARTUP_TIMEOUT_MS} ms of starting`);
      }
      Atomics.wait(this.#state, REPLY_COUNTER, seen, Math.min(remaining, 1000));
    }
  }

  /** Sends a request that has no reply (release, return). */
  post(request: BridgeRequest): void {
    if (this.isAlive) this.#port.postMessage(request);
  }

  nextId(): number {
    return this.#nextId++;
  }

  #fail(message: string): never {
    this.#dead ??= new SyncBridgeError({ message });
    if (host === this) host = undefined;
    void this.#worker.terminate();
    throw this.#dead;
  }
}

let host: BridgeHost | undefined;

function currentHost(): BridgeHost {
  assertCanBlock();
  if (host === undefined || !host.isAlive) host = new BridgeHost();
  return host;
}

const released = new FinalizationRegistry<{ host: BridgeHost; objectId: number }>(({ host, objectId }) => {
  host.post({ op: 'release', objectId });
});

/**
 * Runs an async object in a worker thread and calls it synchronously: the calling thread blocks on
 * `Atomics.wait` until the worker answers (read with `receiveMessageOnPort`). This is how `GPTAPI` and other
 * sync components reuse their async implementation. One worker per thread hosts every bridged object; it
 * is unref'd, so it never keeps a script alive.
 *
 * Blocking is the point: use it in scripts, tests and sync pipelines, never inside a server's event loop
 * (use the async object directly there). Arguments and results are structured-cloned; errors come back
 * with their class (for lagent-ts and standard errors), message and data fields such as `status`.
 *
 * @example
 * const bridge = new SyncBridge({ exportName: 'AsyncGPTAPI', args: [{ model: 'gpt-4o-mini' }] });
 * const text = bridge.call<string>('chat', [[{ role: 'user', content: 'hi' }]]);
 * for (const chunk of bridge.iterate('streamChat', [[{ role: 'user', content: 'hi' }]])) console.log(chunk);
 * bridge.close();
 */
export class SyncBridge {
  readonly #host: BridgeHost;
  readonly #objectId: number;
  #closed = false;

  constructor(target: SyncBridgeTarget) {
    if (typeof target?.exportName !== 'string' || target.exportName.length === 0) {
      throw new ConfigurationError({ message: 'SyncBridge needs the exportName of the class to host' });
    }
    const hostForThread = currentHost();
    const module =
      target.module === undefined
        ? hostForThread.library
        : target.module instanceof URL
          ? target.module.href
          : target.module;
    const id = hostForThread.nextId();
    const { value } = hostForThread.request({
      op: 'create',
      id,
      module,
      exportName: target.exportName,
      args: target.args ?? [],
    });
    this.#host = hostForThread;
    this.#objectId = value as number;
    released.register(this, { host: hostForThread, objectId: this.#objectId }, this);
  }

  /** Calls `method(...args)` on the hosted object and returns its (awaited) result, blocking meanwhile. */
  call<T = unknown>(method: string, args: readonly unknown[] = []): T {
    this.#assertOpen();
    const id = this.#host.nextId();
    return this.#host.request({ op: 'call', id, objectId: this.#objectId, method, args }).value as T;
  }

  /**
   * Iterates the (async) iterable that `method(...args)` returns, one blocking step per item. Leaving the
   * loop early calls the remote iterator's `return()`, which e.g. aborts a streaming HTTP request.
   */
  *iterate<T = unknown>(method: string, args: readonly unknown[] = []): Generator<T, void, undefined> {
    this.#assertOpen();
    const host = this.#host;
    const { value } = host.request({
      op: 'iterate',
      id: host.nextId(),
      objectId: this.#objectId,
      method,
      args,
    });
    const iteratorId = value as number;
    let finished = false;
    try {
      for (;;) {
        const step = host.request({ op: 'next', id: host.nextId(), iteratorId });
        if (step.done) {
          finished = true;
          return;
        }
        yield step.value as T;
      }
    } catch (error) {
      finished = true; // the worker drops an iterator that threw
      throw error;
    } finally {
      if (!finished) host.post({ op: 'return', iteratorId });
    }
  }

  /** Releases the hosted object; later calls throw. The worker itself stays for other objects. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    released.unregister(this);
    this.#host.post({ op: 'release', objectId: this.#objectId });
  }

  #assertOpen(): void {
    if (this.#closed) throw new ConfigurationError({ message: 'this SyncBridge was closed' });
  }
}
