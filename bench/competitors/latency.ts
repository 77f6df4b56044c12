import { Latency } from '../../src/testing/latency';

const latencies = new Map<number, Latency>();

/**
 * The model delay every scripted model in the side-by-side benchmarks uses: lagent-ts's `AsyncMockLLM`
 * latency (one timer shared by the waits pending at once, honouring an `AbortSignal`), so no framework
 * gets a cheaper wait than another.
 */
export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  let latency = latencies.get(ms);
  if (latency === undefined) {
    latency = new Latency(ms);
    latencies.set(ms, latency);
  }
  return latency.wait(undefined, signal);
}
