import { describe, expect, it, vi } from 'vitest';
import { parseRetryAfter, retryAfterMs } from '#src/utils/retry-after';
import { MAX_TIMER_MS, sleep } from '#src/utils/timers';

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('0.5', now)).toBe(500);
    expect(parseRetryAfter(' 2 ', now)).toBe(2000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

describe('retryAfterMs', () => {
  const headers = (values: Record<string, string>) => new Headers(values);

  it('prefers retry-after-ms, then retry-after', () => {
    expect(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(retryAfterMs(headers({ 'retry-after': '2' }))).toBe(2000);
    expect(retryAfterMs(headers({ 'retry-after-ms': 'soon', 'retry-after': '1' }))).toBe(1000);
  });

  it('is undefined without a sane header', () => {
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs(headers({}))).toBeUndefined();
    expect(retryAfterMs(headers({ 'retry-after': 'later' }))).toBeUndefined();
  });
});

describe('sleep', () => {
  it('resolves after the delay', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let done = false;
      const waiting = sleep(20).then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(19);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await waiting;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects with the reason when aborted, before or during the wait', async () => {
    const reason = new Error('stop');
    await expect(sleep(10, AbortSignal.abort(reason))).rejects.toBe(reason);
    const controller = new AbortController();
    const waiting = sleep(60_000, controller.signal);
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
  });

  it('cuts delays Node cannot time, so an abort still ends them', async () => {
    const controller = new AbortController();
    const waiting = sleep(MAX_TIMER_MS * 4, controller.signal);
    let settled = false;
    void waiting.catch(() => {
      settled = true;
    });
    // A delay past MAX_TIMER_MS would fire after 1 ms in Node; cut, it is still pending.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    controller.abort();
    await expect(waiting).rejects.toBeDefined();
  });
});
