/** The longest delay Node's timers support; a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Resolves after `ms` (cut to {@link MAX_TIMER_MS}); rejects with the signal's reason as soon as `signal`
 * aborts, or at once when it already has. The timer and the listener are released either way.
 *
 * @example
 * await sleep(backoff, signal); // a retry loop's wait that an abort ends
 */
export function sleep(ms: number, signal?: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, Math.min(ms, MAX_TIMER_MS)),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
