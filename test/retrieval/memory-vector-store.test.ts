import { MemoryVectorStore } from 'lagent-ts/retrieval';
import { describe, expect, it } from 'vitest';
import { cosine, describeVectorStoreContract, seededVector } from './vector-store-contract';

describeVectorStoreContract('MemoryVectorStore', {
  open: async (options) => new MemoryVectorStore(options),
});

describe('MemoryVectorStore', () => {
  it('finds the exact nearest among thousands of vectors, with dimensions not a multiple of four', async () => {
    const dimensions = 37;
    const store = new MemoryVectorStore({ dimensions });
    const vectors = Array.from({ length: 3000 }, (_, index) => seededVector(index, dimensions));
    // Several batches, so the memory grows while rows are kept.
    for (let start = 0; start < vectors.length; start += 700) {
      await store.upsert(
        vectors.slice(start, start + 700).map((vector, offset) => ({ id: String(start + offset), vector })),
      );
    }
    for (const seed of [11, 22, 33]) {
      const query = seededVector(10_000 + seed, dimensions);
      const expected = vectors
        .map((vector, index) => ({ id: String(index), score: cosine(query, vector) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 10)
        .map((match) => match.id);
      expect((await store.query(query, { topK: 10 })).map((match) => match.id)).toEqual(expected);
    }
  });

  it('gives back copies of the metadata', async () => {
    const store = new MemoryVectorStore({ dimensions: 2 });
    const metadata = { tags: ['a'] };
    await store.upsert([{ id: 'a', vector: [1, 0], metadata }]);
    metadata.tags.push('changed');
    const [match] = await store.query([1, 0], { topK: 1 });
    (match!.metadata.tags as string[]).push('again');
    expect((await store.query([1, 0], { topK: 1 }))[0]!.metadata).toEqual({ tags: ['a'] });
  });
});
