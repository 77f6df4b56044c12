import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it, vi } from 'vitest';
import { ConfigurationError, LLMRequestError, SyncBridgeError } from '../../src/schema/errors';
import { SyncBridge } from '../../src/utils/sync-bridge';

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
    const bridge = new URL('../../src/utils/sync-bridge.ts', import.meta.url).href;
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

describe('SyncBridge when the worker dies', () => {
  it('throws a SyncBridgeError instead of hanging, and the next bridge starts a new worker', () => {
    const doomed = counter();
    const error = catchError(() => doomed.call('crash'));
    expect(error).toBeInstanceOf(SyncBridgeError);
    expect((error as Error).message).toMatch(/exited/);
    expect(() => doomed.call('add', [1])).toThrow(SyncBridgeError);
    expect(counter(1).call('add', [1])).toBe(2);
  });
});
