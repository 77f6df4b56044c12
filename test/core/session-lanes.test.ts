import { describe, expect, it } from 'vitest';
import { SessionLanes } from '#src/core/session-lanes';

const settled = async (promise: Promise<unknown>) => {
  let state = 'pending';
  promise.then(
    () => {
      state = 'resolved';
    },
    () => {
      state = 'rejected';
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
};

describe('SessionLanes', () => {
  it('one call per session at a time, in call order, whichever way a session is held', async () => {
    const lanes = new SessionLanes();
    // 'a' is taken first (held without a set), 7 and 'b' next (in the set).
    expect(lanes.acquire('a')).toBeUndefined();
    expect(lanes.acquire(7)).toBeUndefined();
    expect(lanes.acquire('b')).toBeUndefined();
    const a1 = lanes.acquire('a')!;
    const a2 = lanes.acquire('a')!;
    const seven = lanes.acquire(7)!;
    expect(await settled(a1.ready)).toBe('pending');
    expect(await settled(seven.ready)).toBe('pending');
    lanes.release('a');
    expect(await settled(a1.ready)).toBe('resolved');
    expect(await settled(a2.ready)).toBe('pending');
    // 'a' is still busy (a1 holds it): a new call queues behind a2.
    const a3 = lanes.acquire('a')!;
    a2.cancel();
    lanes.release('a');
    expect(await settled(a3.ready)).toBe('resolved');
    lanes.release('a');
    lanes.release(7);
    expect(await settled(seven.ready)).toBe('resolved');
    lanes.release(7);
    lanes.release('b');
    // Everything is free again, whichever way it was held.
    for (const key of ['a', 7, 'b']) expect(lanes.acquire(key)).toBeUndefined();
    for (const key of ['a', 7, 'b']) lanes.release(key);
  });

  it('an aborted waiter leaves the queue; the next one gets the session', async () => {
    const lanes = new SessionLanes();
    expect(lanes.acquire(1)).toBeUndefined();
    expect(lanes.acquire(2)).toBeUndefined();
    const controller = new AbortController();
    const aborted = lanes.acquire(2, controller.signal)!;
    const next = lanes.acquire(2)!;
    controller.abort(new Error('gone'));
    await expect(aborted.ready).rejects.toThrow('gone');
    lanes.release(2);
    expect(await settled(next.ready)).toBe('resolved');
    lanes.release(2);
    lanes.release(1);
    expect(lanes.acquire(2)).toBeUndefined();
    expect(lanes.acquire(1)).toBeUndefined();
  });
});
