import { vi } from 'vitest';

/** The delays of the timers set while it records. */
export interface TimerDelays {
  /** Every delay asked of `setTimeout` so far, in ms, in order. */
  readonly delays: number[];
  /** Stops recording. */
  stop(): void;
}

/**
 * Records the delay of every timer set from now on, the timers running as usual: what a retry loop chose to
 * wait (the server's `retry-after`, or its backoff), read from what it asked for instead of timing it.
 */
export function recordTimerDelays(): TimerDelays {
  const spy = vi.spyOn(globalThis, 'setTimeout');
  let kept: number[] | undefined;
  const delays = () => spy.mock.calls.map((call) => Number(call[1] ?? 0));
  return {
    get delays() {
      return kept ?? delays();
    },
    stop() {
      kept ??= delays();
      spy.mockRestore();
    },
  };
}
