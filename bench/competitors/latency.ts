/**
 * The model delay every scripted model in the side-by-side benchmarks uses: a `setTimeout` that honours
 * an `AbortSignal`, the same as lagent-ts's `AsyncMockLLM` with `latencyMs`, so no framework gets a
 * cheaper wait than another.
 */
export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  if (!signal) return new Promise((resolve) => setTimeout(resolve, ms));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
