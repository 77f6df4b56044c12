import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Latency } from '#src/testing/latency';

// Time is the subject: the timers and the clock the latency reads are fake, and move only when told.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("Latency (the mock model's simulated latency)", () => {
  it('resolves every wait ms after it began, in order, on one timer', async () => {
    const latency = new Latency(30);
    const settled: { index: number; at: number }[] = [];
    const waits: Promise<void>[] = [];
    const started: number[] = [];
    for (let batch = 0; batch < 3; batch++) {
      for (let i = 0; i < 500; i++) {
        const index = started.length;
        started.push(performance.now());
        waits.push(
          latency.wait(index).then((value) => {
            settled.push({ index: value, at: performance.now() });
          }),
        );
      }
      // The waits pending at once hold one timer between them, not one each.
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(8);
    }
    // 24 ms in: none of them is due yet.
    expect(settled).toEqual([]);
    await vi.advanceTimersByTimeAsync(30);
    await Promise.all(waits);
    expect(settled.map(({ index }) => index)).toEqual(started.map((_, i) => i));
    for (const { index, at } of settled) expect(at - started[index]!).toBe(30);
    // Nothing is left behind once every wait has settled.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an abort rejects its own wait at once and leaves the others alone', async () => {
    const latency = new Latency(40);
    const controller = new AbortController();
    const kept = latency.wait('kept');
    const aborted = latency.wait('aborted', controller.signal);
    const finished = new AbortController();
    const unaffected = latency.wait('late abort', finished.signal);
    const before = performance.now();
    controller.abort(new Error('stop'));
    // Rejected while the clock stands still.
    await expect(aborted).rejects.toThrow('stop');
    expect(performance.now()).toBe(before);
    await vi.advanceTimersByTimeAsync(40);
    expect(await kept).toBe('kept');
    expect(await unaffected).toBe('late abort');
    finished.abort(new Error('after the fact')); // settled already: nothing happens
    const already = AbortSignal.abort(new Error('already'));
    await expect(latency.wait('x', already)).rejects.toThrow('already');
  });

  it('AsyncMockLLM: 2,000 concurrent calls each take the latency, with one timer between them', async () => {
    const llm = new AsyncMockLLM({
      responses: (_messages, _params, index) => `reply ${index}`,
      latencyMs: 25,
    });
    let answered = 0;
    const replies = Array.from({ length: 2_000 }, () =>
      llm.chat([{ role: 'user', content: 'hi' }]).then((text) => {
        answered++;
        return text;
      }),
    );
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(24);
    expect(answered).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    const texts = await Promise.all(replies);
    expect(answered).toBe(2_000);
    expect(texts).toEqual(texts.map((_, i) => `reply ${i}`));
    expect(vi.getTimerCount()).toBe(0);
  });
});
