import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ConfigurationError, LLMRequestError, SyncBridge, SyncBridgeError, TimeoutError } from 'lagent-ts';
import { describe, expect, it, vi } from 'vitest';
import { serializeError } from '#src/bridge/protocol';

const counterModule = fileURLToPath(new URL('./fixtures/async-counter.ts', import.meta.url));
const counter = (start = 0) =>
  new SyncBridge({ module: counterModule, exportName: 'AsyncCounter', args: [{ start }] });

describe('SyncBridge', () => {
  it('calls async methods synchronously and keeps the object state', () => {
    const bridge = counter(5);
    expect(bridge.call('add', [2])).toBe(7);
    expect(bridge.call('add', [3])).toBe(10);
    expect(counter(0).call('add', [1])).toBe(1); // a second object is independent
  });

  it('accepts a file URL for the module', () => {
    const bridge = new SyncBridge({
      module: new URL('./fixtures/async-counter.ts', import.meta.url),
      exportName: 'AsyncCounter',
    });
    expect(bridge.call('add', [4])).toBe(4);
  });

  it('iterates async generators one blocking step at a time', () => {
    expect([...counter().iterate('count_up', [4])]).toEqual([1, 2, 3, 4]);
  });

  it('leaving a loop early returns the remote iterator', () => {
    const bridge = counter();
    for (const value of bridge.iterate<number>('count_up', [100])) if (value === 2) break;
    // `return` is fire-and-forget; the worker handles messages in order, so a later call sees its effect.
    bridge.call('add', [0]);
    expect(bridge.call('getReturned')).toBe(1);
  });

  it('rebuilds lagent-ts errors with their class and fields', () => {
    const error = catchError(() => counter().call('fail', ['llm']));
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error).toMatchObject({ message: 'server said no', status: 503, retryable: true, attempts: 3 });
    expect((error as Error).stack).toContain('sync bridge worker');
  });

  it('rebuilds standard errors, and keeps the name and fields of other classes', () => {
    expect(catchError(() => counter().call('fail', ['type']))).toBeInstanceOf(TypeError);
    const custom = catchError(() => counter().call('fail', ['custom']));
    expect(custom).toMatchObject({ name: 'CustomError', message: 'custom failure', code: 'E_CUSTOM' });
  });

  it('errors thrown while iterating reach the loop', () => {
    const seen: number[] = [];
    const error = catchError(() => {
      for (const value of counter().iterate<number>('explode')) seen.push(value);
    });
    expect(seen).toEqual([1]);
    expect(error).toBeInstanceOf(RangeError);
  });

  it('explains unknown exports, missing methods and uncloneable values', () => {
    expect(() => new SyncBridge({ module: counterModule, exportName: 'Nope' })).toThrow(
      /does not export a class Nope/,
    );
    expect(() => counter().call('missing')).toThrow(/missing is not a method/);
    expect(() => counter().call('add', [() => 1])).toThrow(ConfigurationError);
    expect(() => counter().call('makeFunction')).toThrow(/could not be cloned/);
    expect(() => new SyncBridge({ exportName: '' })).toThrow(ConfigurationError);
  });

  it('a closed bridge refuses calls', () => {
    const bridge = counter();
    bridge.close();
    expect(() => bridge.call('add', [1])).toThrow(/closed/);
  });

  it('hosts lagent-ts classes by default', () => {
    const bridge = new SyncBridge({ exportName: 'UsageTracker' });
    bridge.call('record', [{ promptTokens: 1, completionTokens: 2, totalTokens: 3 }, 'a']);
    expect(bridge.call('get', ['a'])).toEqual({ promptTokens: 1, completionTokens: 2, totalTokens: 3 });
  });

  it('works from a worker thread too (blocking is allowed there)', async () => {
    const code = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.tsx).then(({ register }) => { register(); return import(workerData.bridge); }).then(({ SyncBridge }) => {
        const bridge = new SyncBridge({ module: workerData.counter, exportName: 'AsyncCounter', args: [{ start: 40 }] });
        parentPort.postMessage(bridge.call('add', [2]));
      }).catch((error) => parentPort.postMessage(String(error)));`;
    const tsx = new URL('../../node_modules/tsx/dist/esm/api/index.mjs', import.meta.url).href;
    const bridge = new URL('../../src/bridge/sync-bridge.ts', import.meta.url).href;
    const worker = new Worker(code, { eval: true, workerData: { tsx, bridge, counter: counterModule } });
    const answer = await new Promise((resolve) => worker.once('message', resolve));
    await worker.terminate();
    expect(answer).toBe(42);
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

describe('SyncBridge where blocking is impossible', () => {
  it('throws a ConfigurationError that points to the async variant', () => {
    const spy = vi.spyOn(Atomics, 'wait').mockImplementation(() => {
      throw new TypeError('Atomics.wait cannot be called in this context');
    });
    try {
      expect(() => counter()).toThrow(ConfigurationError);
      expect(() => counter()).toThrow(/may not block.*Async\* variant/);
    } finally {
      spy.mockRestore();
    }
  });
});

/**
 * Runs `work` (a call that blocks this thread in `Atomics.wait`) and records what each of its waits returned:
 * `'ok'` or `'not-equal'` when something woke it (a reply, the monitor saying the worker exited), `'timed-out'`
 * when its time ran out. A death noticed only when a wait's time runs out would show as a last wait timed out.
 */
function waitsOf(work: () => unknown): { error: unknown; waits: string[] } {
  const wait = Atomics.wait;
  const waits: string[] = [];
  const spy = vi.spyOn(Atomics, 'wait').mockImplementation((...args: Parameters<typeof Atomics.wait>) => {
    const result = wait(...args);
    if (args[3] !== 0) waits.push(result);
    return result;
  });
  try {
    return { error: catchError(work), waits };
  } finally {
    spy.mockRestore();
  }
}

/** A death woke the waiting call: its last wait did not run out of time. */
const wokenByTheDeath = (waits: string[]) => expect(waits.at(-1)).not.toBe('timed-out');

describe('SyncBridge when the worker dies', () => {
  it('throws a SyncBridgeError as soon as it dies, and existing bridges carry on in a new worker', () => {
    const doomed = counter();
    const bystander = counter(10);
    expect(bystander.call('add', [1])).toBe(11);
    const { error, waits } = waitsOf(() => doomed.call('crash'));
    expect(error).toBeInstanceOf(SyncBridgeError);
    expect((error as Error).message).toMatch(/exited.*exit code 3/);
    wokenByTheDeath(waits);
    // Both objects are rebuilt from their constructor arguments on a fresh worker.
    expect(doomed.call('add', [1])).toBe(1);
    expect(bystander.call('add', [1])).toBe(11);
    expect(counter(1).call('add', [1])).toBe(2);
  });

  it('an uncaught exception in the worker fails the waiting call, and the next call recovers', () => {
    const bridge = counter(5);
    const { error, waits } = waitsOf(() => bridge.call('throwUncaught'));
    wokenByTheDeath(waits);
    expect(error).toBeInstanceOf(SyncBridgeError);
    expect((error as Error).message).toMatch(/uncaught in the worker/);
    expect(bridge.call('add', [1])).toBe(6);
  });

  it('a worker that runs out of memory fails the waiting call instead of hanging', () => {
    const bridge = new SyncBridge(
      { module: counterModule, exportName: 'AsyncCounter', args: [{ start: 7 }] },
      { resourceLimits: { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 4 } },
    );
    const { error, waits } = waitsOf(() => bridge.call('exhaustMemory'));
    expect(error).toBeInstanceOf(SyncBridgeError);
    expect((error as Error).message).toMatch(/ERR_WORKER_OUT_OF_MEMORY/);
    wokenByTheDeath(waits);
    expect(bridge.call('add', [1])).toBe(8);
    bridge.close();
  });

  it('odd rejection values come back as errors and leave the worker alive', () => {
    const bridge = counter(1);
    for (const kind of ['null-prototype', 'proxy', 'revoked-proxy', 'throwing-getters', 'cycle', 'bigint']) {
      const error = catchError(() => bridge.call('rejectWith', [kind]));
      expect(error, kind).toBeInstanceOf(Error);
      expect(error, kind).not.toBeInstanceOf(SyncBridgeError);
    }
    expect((catchError(() => bridge.call('rejectWith', ['bigint'])) as Error).message).toBe(
      '12345678901234567890n',
    );
    expect(catchError(() => bridge.call('rejectWith', ['bigint-field']))).toMatchObject({ amount: 10n });
    expect((catchError(() => bridge.call('rejectWith', ['cycle'])) as Error).message).toBe('cyclic');
    // The same worker, with the object's state intact.
    expect(bridge.call('add', [1])).toBe(2);
  });
});

describe('SyncBridge timeouts', () => {
  it('a call that never settles throws a TimeoutError after the timeout, and the bridge keeps working', () => {
    const bridge = new SyncBridge(
      { module: counterModule, exportName: 'AsyncCounter', args: [{ start: 3 }] },
      { timeout: 200 },
    );
    const { error, waits } = waitsOf(() => bridge.call('hang'));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ timeoutMs: 200 });
    expect((error as Error).message).toMatch(/AsyncCounter\.hang did not answer within 200 ms/);
    // It waited its time out (then the worker answered a ping: it is alive, and kept).
    expect(waits).toContain('timed-out');
    expect(bridge.call('add', [1])).toBe(4); // the same worker and object
  });

  it('a per-call timeout overrides the bridge timeout', () => {
    const bridge = counter();
    expect(catchError(() => bridge.call('hang', [], { timeout: 100 }))).toMatchObject({ timeoutMs: 100 });
  });

  it('a stalled iteration step times out, and the bridge keeps working', () => {
    const bridge = counter();
    const seen: number[] = [];
    const error = catchError(() => {
      for (const value of bridge.iterate<number>('stall', [], { timeout: 150 })) seen.push(value);
    });
    expect(seen).toEqual([1]);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(bridge.call('add', [2])).toBe(2);
  });

  it('a worker whose event loop is blocked is stopped, and the next call gets a new one', () => {
    const bridge = counter(2);
    // The worker is kept busy for a minute: the call ends by its timeout and the unanswered ping.
    const error = catchError(() => bridge.call('busy', [60_000], { timeout: 200 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as Error).message).toMatch(/event loop is blocked/);
    expect(bridge.call('add', [1])).toBe(3);
  });

  it('Infinity means no timeout; values Node cannot time, or not positive, are refused', () => {
    const bridge = new SyncBridge(
      { module: counterModule, exportName: 'AsyncCounter' },
      { timeout: Number.POSITIVE_INFINITY },
    );
    expect(bridge.timeout).toBe(Number.POSITIVE_INFINITY);
    expect(bridge.call('add', [1])).toBe(1);
    for (const timeout of [2 ** 31, Number.MAX_SAFE_INTEGER, 0, -1, Number.NaN]) {
      expect(
        () => new SyncBridge({ module: counterModule, exportName: 'AsyncCounter' }, { timeout }),
      ).toThrow(ConfigurationError);
    }
    expect(() => bridge.call('add', [1], { timeout: 2 ** 31 })).toThrow(/Infinity for no timeout/);
  });
});

describe('serializeError', () => {
  const throwing = () => {
    throw new Error('trap');
  };
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const revocable = Proxy.revocable({}, {});
  revocable.revoke();
  const hostileError = new Error('hostile');
  for (const key of ['name', 'message', 'cause']) {
    Object.defineProperty(hostileError, key, { get: throwing, enumerable: true });
  }
  Object.defineProperty(hostileError, 'field', { get: throwing, enumerable: true });
  const values: [string, unknown][] = [
    ['null-prototype object', Object.create(null)],
    [
      'proxy with throwing traps',
      new Proxy({}, { get: throwing, getPrototypeOf: throwing, ownKeys: throwing }),
    ],
    ['revoked proxy', revocable.proxy],
    ['error with throwing getters', hostileError],
    ['cyclic object', cyclic],
    ['error caused by itself', Object.assign(new Error('loop'), { cause: undefined as unknown })],
    ['bigint', 10n],
    ['symbol', Symbol('odd')],
    ['undefined', undefined],
    ['function', () => 1],
  ];
  (values[5]![1] as Error).cause = values[5]![1];

  it.each(values.map(([label]) => label))('never throws, and gives cloneable data, for a %s', (label) => {
    const serialized = serializeError(values.find(([name]) => name === label)?.[1]);
    expect(typeof serialized.name).toBe('string');
    expect(typeof serialized.message).toBe('string');
    expect(() => structuredClone(serialized)).not.toThrow();
  });
});
