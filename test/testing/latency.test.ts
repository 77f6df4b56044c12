import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { Latency } from '../../src/testing/latency';

const timers = () => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Latency (the mock model's simulated latency)", () => {
  it('resolves every wait no earlier than ms after it began, in order, on one timer', async () => {
    const latency = new Latency(30);
    const before = timers();
    const settled: number[] = [];
    const waits: Promise<void>[] = [];
    const started: number[] = [];
    for (let batch = 0; batch < 3; batch++) {
      for (let i = 0; i < 500; i++) {
        const index = started.length;
        started.push(performance.now());
        waits.push(
          latency.wait(index).then((value) => {
            expect(value).toBe(index);
            expect(performance.now() - started[index]!).toBeGreaterThanOrEqual(29.5);
            settled.push(index);
          }),
        );
      }
      // 1,500 waits pending at once hold one timer between them, not one each. (At most one: the unit tests
      // share their process, so another file's timer may end meanwhile.)
      expect(timers() - before).toBeLessThanOrEqual(1);
      await sleep(8);
    }
    await Promise.all(waits);
    expect(settled).toEqual(started.map((_, i) => i));
    // Nothing is left behind once every wait has settled.
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it('an abort rejects its own wait at once and leaves the others alone', async () => {
    const latency = new Latency(40);
    const controller = new AbortController();
    const kept = latency.wait('kept');
    const aborted = latency.wait('aborted', controller.signal);
    const finished = new AbortController();
    const unaffected = latency.wait('late abort', finished.signal);
    const started = performance.now();
    controller.abort(new Error('stop'));
    await expect(aborted).rejects.toThrow('stop');
    expect(performance.now() - started).toBeLessThan(30);
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
    const before = timers();
    const started = performance.now();
    const replies = Array.from({ length: 2_000 }, () => llm.chat([{ role: 'user', content: 'hi' }]));
    expect(timers() - before).toBeLessThanOrEqual(1);
    const texts = await Promise.all(replies);
    expect(performance.now() - started).toBeGreaterThanOrEqual(24.5);
    expect(texts).toEqual(texts.map((_, i) => `reply ${i}`));
    expect(timers()).toBeLessThanOrEqual(before);
  });
});
