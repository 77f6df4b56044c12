import type { EmbeddingUsage } from './types';

/**
 * Embeds `texts` in batches of at most `batchSize`, at most `parallel` batches in flight, and puts the
 * vectors back in the texts' order. The first failure aborts the batches still running (through the signal
 * each one is given) and is what the call rejects with; so does an abort of `signal`.
 */
export async function embedInBatches(
  texts: readonly string[],
  batchSize: number,
  parallel: number,
  signal: AbortSignal | undefined,
  embedBatch: (
    batch: readonly string[],
    signal: AbortSignal,
  ) => Promise<{ vectors: number[][]; usage: EmbeddingUsage }>,
  onUsage: (usage: EmbeddingUsage) => void,
): Promise<number[][]> {
  if (signal?.aborted) throw signal.reason;
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const result = new Array<number[]>(texts.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < texts.length) {
      const start = next;
      next += batchSize;
      try {
        const { vectors, usage } = await embedBatch(texts.slice(start, start + batchSize), controller.signal);
        for (let index = 0; index < vectors.length; index++) result[start + index] = vectors[index]!;
        onUsage(usage);
      } catch (error) {
        failure ??= { error };
        controller.abort(error);
      }
    }
  };
  try {
    const workers = Math.max(1, Math.min(parallel, Math.ceil(texts.length / batchSize)));
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
  if (signal?.aborted) throw signal.reason;
  if (failure !== undefined) throw failure.error;
  return result;
}
