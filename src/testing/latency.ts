import { keepShape } from '../utils/keep-shape';

/**
 * A model's simulated latency: every wait resolves `ms` after it began (never earlier, and within a
 * millisecond or so of it), and the waits pending at once share one timer. Their deadlines come in the
 * order they began, so the timer is set for the oldest one only; 10,000 concurrent calls to a mock
 * model keep 10,000 entries of a few bytes instead of 10,000 Node timers.
 */
export class Latency {
  readonly ms: number;
  /** Pending waits, oldest first, from `#head` on: deadline, how to settle, and the value. */
  readonly #deadlines: number[] = [];
  readonly #settles: (((value: unknown) => void) | undefined)[] = [];
  readonly #values: unknown[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;

  /**
   * The timer's callback, shared by every instance and given the instance as an argument: a callback bound to
   * one instance would let V8 build that instance into the optimised code, which then dies with it.
   */
  static #fire(latency: Latency): void {
    latency.#settleDue();
  }

  constructor(ms: number) {
    this.ms = ms;
  }

  /** Resolves to `value` after `ms`; rejects with the signal's reason when it aborts first. */
  wait<T>(value: T, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      if (signal === undefined) {
        this.#push(resolve as (value: unknown) => void, value);
        return;
      }
      let aborted = false;
      const onAbort = () => {
        aborted = true;
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#push((result) => {
        if (aborted) return;
        signal.removeEventListener('abort', onAbort);
        resolve(result as T);
      }, value);
    });
  }

  #push(settle: (value: unknown) => void, value: unknown): void {
    this.#deadlines.push(performance.now() + this.ms);
    this.#settles.push(settle);
    this.#values.push(value);
    if (this.#timer === undefined) this.#timer = setTimeout(Latency.#fire, this.ms, this);
  }

  /** Settles every wait whose deadline passed, then sets the timer for the next one. */
  #settleDue(): void {
    this.#timer = undefined;
    const deadlines = this.#deadlines;
    const settles = this.#settles;
    const values = this.#values;
    const now = performance.now();
    let head = this.#head;
    while (head < deadlines.length && deadlines[head]! <= now) {
      const settle = settles[head]!;
      const value = values[head];
      settles[head] = undefined;
      values[head] = undefined;
      head++;
      settle(value);
    }
    if (head === deadlines.length) {
      deadlines.length = 0;
      settles.length = 0;
      values.length = 0;
      head = 0;
    } else if (head > 1024 && head * 2 > deadlines.length) {
      deadlines.splice(0, head);
      settles.splice(0, head);
      values.splice(0, head);
      head = 0;
    }
    this.#head = head;
    // Whole milliseconds: Node keeps one timer list per distinct duration.
    if (head < deadlines.length)
      this.#timer = setTimeout(Latency.#fire, Math.ceil(deadlines[head]! - now), this);
  }
}

// One per mock model, all dropped with them: see keepShape.
keepShape(new Latency(1));
