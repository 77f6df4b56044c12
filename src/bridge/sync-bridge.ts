import type { ResourceLimits } from 'node:worker_threads';
import { ConfigurationError } from '../schema/errors';
import { assertCanBlock, BridgeHost, MAX_TIMEOUT_MS, sharedHost } from './host';
import { locateBridge } from './location';

/** Which async object a {@link SyncBridge} hosts: a class exported by a module, and its constructor arguments. */
export interface SyncBridgeTarget {
  /** Name of the exported class, e.g. `'AsyncGPTAPI'`. */
  exportName: string;
  /** Constructor arguments; they are structured-cloned, so no functions or class instances. @default [] */
  args?: readonly unknown[] | undefined;
  /**
   * Absolute path or `file:` URL of the module exporting the class.
   * @default lagent-ts's own entry (the build's `index.js` / `index.cjs`, or `src/index.ts` from sources)
   */
  module?: string | URL | undefined;
}

/** Options of a {@link SyncBridge}. */
export interface SyncBridgeOptions {
  /**
   * Milliseconds each call (and each step of an iteration) may block before it throws a `TimeoutError`.
   * `Infinity` means no deadline; finite values above 2147483647 (about 24.8 days) are a `ConfigurationError`.
   * A fresh worker gets up to 60 s more to load its modules. @default 300000 (5 minutes)
   */
  timeout?: number | undefined;
  /**
   * Host the object in a worker of its own with these V8 heap limits (see `worker_threads`' `resourceLimits`),
   * instead of the worker every bridged object of the thread shares. Running out of them fails the waiting call
   * with a `SyncBridgeError`; the next call starts a new worker.
   */
  resourceLimits?: ResourceLimits | undefined;
}

/** Per-call options of {@link SyncBridge.call} and {@link SyncBridge.iterate}. */
export interface SyncBridgeCallOptions {
  /** Overrides the bridge's `timeout` for this call. */
  timeout?: number | undefined;
}

const DEFAULT_TIMEOUT_MS = 300_000;

/** Validates a bridge timeout: positive, and either `Infinity` or a delay Node's timers can represent. */
export function bridgeTimeout(value: unknown, fallback = DEFAULT_TIMEOUT_MS): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw new ConfigurationError({
      message: `timeout must be a positive number of ms, got ${String(value)}`,
    });
  }
  if (value !== Number.POSITIVE_INFINITY && value > MAX_TIMEOUT_MS) {
    throw new ConfigurationError({
      message: `timeout must be at most ${MAX_TIMEOUT_MS} ms (about 24.8 days), or Infinity for no timeout; got ${value}`,
    });
  }
  return value;
}

const released = new FinalizationRegistry<{ host: BridgeHost; objectId: number }>(({ host, objectId }) => {
  if (host.dedicated) host.stop('its SyncBridge was garbage-collected');
  else host.post({ op: 'release', objectId });
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
 * A call never blocks forever. Past its `timeout` it throws a `TimeoutError` (and a worker that no longer
 * answers at all is stopped). If the worker dies (`process.exit`, an uncaught exception, running out of
 * memory), the waiting call throws a `SyncBridgeError` at once: a small monitor thread owns the worker and
 * wakes this thread when it exits. The next call on any bridge starts a new worker and rebuilds its object
 * from the recorded constructor arguments, so state the object held is lost.
 *
 * @example
 * const bridge = new SyncBridge({ exportName: 'AsyncGPTAPI', args: [{ model: 'gpt-4o-mini' }] });
 * const text = bridge.call<string>('chat', [[{ role: 'user', content: 'hi' }]]);
 * for (const chunk of bridge.iterate('streamChat', [[{ role: 'user', content: 'hi' }]])) console.log(chunk);
 * bridge.close();
 */
export class SyncBridge {
  /** Milliseconds each call may block (`Infinity`: no deadline). */
  readonly timeout: number;
  readonly #exportName: string;
  readonly #module: string | undefined;
  readonly #args: readonly unknown[];
  readonly #resourceLimits: ResourceLimits | undefined;
  #host: BridgeHost | undefined;
  #objectId = 0;
  #closed = false;

  constructor(target: SyncBridgeTarget, options: SyncBridgeOptions = {}) {
    if (typeof target?.exportName !== 'string' || target.exportName.length === 0) {
      throw new ConfigurationError({ message: 'SyncBridge needs the exportName of the class to host' });
    }
    this.timeout = bridgeTimeout(options.timeout);
    this.#exportName = target.exportName;
    this.#module = target.module instanceof URL ? target.module.href : target.module;
    this.#args = target.args ?? [];
    this.#resourceLimits = options.resourceLimits;
    this.#attach();
  }

  /**
   * Calls `method(...args)` on the hosted object and returns its (awaited) result, blocking meanwhile. Throws
   * what the method threw (rebuilt on this side), a `TimeoutError` past the timeout, or a `SyncBridgeError` when
   * the worker died; the next call then runs on a new worker, on an object rebuilt from the same constructor
   * arguments (its earlier state is lost).
   */
  call<T = unknown>(method: string, args: readonly unknown[] = [], options: SyncBridgeCallOptions = {}): T {
    this.#assertOpen();
    const timeout = bridgeTimeout(options.timeout, this.timeout);
    const host = this.#attach();
    return host.request(
      { op: 'call', id: host.nextId(), objectId: this.#objectId, method, args },
      timeout,
      `${this.#exportName}.${method}`,
    ).value as T;
  }

  /**
   * Iterates the (async) iterable that `method(...args)` returns, one blocking step per item, each step with
   * its own deadline. Leaving the loop early calls the remote iterator's `return()`, which e.g. aborts a
   * streaming HTTP request. A step that times out also asks for `return()`, which an async generator runs
   * once its pending step settles.
   */
  *iterate<T = unknown>(
    method: string,
    args: readonly unknown[] = [],
    options: SyncBridgeCallOptions = {},
  ): Generator<T, void, undefined> {
    this.#assertOpen();
    const timeout = bridgeTimeout(options.timeout, this.timeout);
    const host = this.#attach();
    const label = `${this.#exportName}.${method}`;
    const { value } = host.request(
      { op: 'iterate', id: host.nextId(), objectId: this.#objectId, method, args },
      timeout,
      label,
    );
    const iteratorId = value as number;
    let finished = false;
    try {
      for (;;) {
        const step = host.request({ op: 'next', id: host.nextId(), iteratorId }, timeout, label);
        if (step.done) {
          finished = true;
          return;
        }
        yield step.value as T;
      }
    } catch (error) {
      finished = true; // the worker drops an iterator that threw; a timed-out one was returned already
      throw error;
    } finally {
      if (!finished) host.post({ op: 'return', iteratorId });
    }
  }

  /** Releases the hosted object; later calls throw. A shared worker stays for other objects. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    released.unregister(this);
    if (this.#host?.dedicated) this.#host.stop('its SyncBridge was closed');
    else this.#host?.post({ op: 'release', objectId: this.#objectId });
  }

  /** The live host of the object: after the worker died, a new worker and a new object built like the first. */
  #attach(): BridgeHost {
    if (this.#host?.isAlive) return this.#host;
    assertCanBlock();
    const host =
      this.#resourceLimits === undefined
        ? sharedHost()
        : new BridgeHost({ resourceLimits: this.#resourceLimits }, true);
    let objectId: number;
    try {
      objectId = host.request(
        {
          op: 'create',
          id: host.nextId(),
          module: this.#module ?? locateBridge().library,
          exportName: this.#exportName,
          args: this.#args,
        },
        this.timeout,
        `new ${this.#exportName}()`,
      ).value as number;
    } catch (error) {
      if (host.dedicated) host.stop('its object could not be created');
      throw error;
    }
    if (this.#host !== undefined) released.unregister(this);
    this.#host = host;
    this.#objectId = objectId;
    released.register(this, { host, objectId }, this);
    return host;
  }

  #assertOpen(): void {
    if (this.#closed) throw new ConfigurationError({ message: 'this SyncBridge was closed' });
  }
}
