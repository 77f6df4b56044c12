import { describe, expect, it } from 'vitest';
import type { FieldTypes, VectorStore } from '../../src/retrieval/types';
import { ValidationError } from '../../src/schema/errors';

/*
 * What every vector store promises, run against each (test/retrieval/*-store.test.ts) on its real engine.
 * A store's test gives a function opening a store of the given dimensions and fields on fresh storage.
 */

export interface VectorStoreHarness {
  open(options: { dimensions: number; fields?: FieldTypes }): Promise<VectorStore>;
}

/** A deterministic vector of `dimensions` numbers, from a seed (mulberry32). */
export function seededVector(seed: number, dimensions: number): number[] {
  let state = seed >>> 0;
  const vector: number[] = [];
  for (let index = 0; index < dimensions; index++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    vector.push(((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5);
  }
  return vector;
}

/** Exact cosine similarity, for checking the stores' order. */
export function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let index = 0; index < a.length; index++) {
    dot += a[index]! * b[index]!;
    normA += a[index]! * a[index]!;
    normB += b[index]! * b[index]!;
  }
  return dot / Math.sqrt(normA * normB);
}

export function describeVectorStoreContract(name: string, harness: VectorStoreHarness): void {
  describe(`${name}: the vector store contract`, () => {
    const fields = { source: 'string', page: 'number', draft: 'boolean' } as const;

    it('returns the nearest records first, by cosine similarity, with their metadata', async () => {
      const store = await harness.open({ dimensions: 12, fields });
      try {
        const vectors = Array.from({ length: 40 }, (_, index) => seededVector(index + 1, 12));
        await store.upsert(
          vectors.map((vector, index) => ({
            id: `r${index}`,
            vector,
            metadata: { source: `s${index % 3}`, page: index, draft: index % 2 === 0, nested: { n: index } },
          })),
        );
        expect(await store.count()).toBe(40);
        const query = seededVector(999, 12);
        const expected = vectors
          .map((vector, index) => ({ id: `r${index}`, score: cosine(query, vector) }))
          .sort((a, b) => b.score - a.score)
          .slice(0, 5);
        const found = await store.query(query, { topK: 5 });
        expect(found.map((match) => match.id)).toEqual(expected.map((match) => match.id));
        for (const [index, match] of found.entries())
          expect(match.score).toBeCloseTo(expected[index]!.score, 4);
        const top = found[0]!;
        const row = Number(top.id.slice(1));
        expect(top.metadata).toEqual({
          source: `s${row % 3}`,
          page: row,
          draft: row % 2 === 0,
          nested: { n: row },
        });
        // A stored vector is its own nearest neighbour, at similarity 1.
        const self = await store.query(vectors[7]!, { topK: 1 });
        expect(self[0]!.id).toBe('r7');
        expect(self[0]!.score).toBeCloseTo(1, 4);
      } finally {
        await store.close();
      }
    });

    it('filters by equality on declared fields before taking the nearest', async () => {
      const store = await harness.open({ dimensions: 8, fields });
      try {
        await store.upsert(
          Array.from({ length: 30 }, (_, index) => ({
            id: `r${index}`,
            vector: seededVector(index + 100, 8),
            metadata: { source: index < 3 ? 'rare' : 'common', page: index % 5, draft: index % 2 === 0 },
          })),
        );
        const query = seededVector(7, 8);
        const rare = await store.query(query, { topK: 10, filter: { source: 'rare' } });
        expect(rare.map((match) => match.id).sort()).toEqual(['r0', 'r1', 'r2']);
        const both = await store.query(query, { topK: 10, filter: { page: 2, draft: true } });
        expect(both.every((match) => match.metadata.page === 2 && match.metadata.draft === true)).toBe(true);
        expect(both.map((match) => match.id).sort()).toEqual(['r12', 'r2', 'r22'].sort());
        expect(await store.count({ filter: { source: 'rare' } })).toBe(3);
        expect(await store.query(query, { topK: 3, filter: { source: 'none' } })).toEqual([]);
      } finally {
        await store.close();
      }
    });

    it('keeps namespaces apart: queries, counts and deletes see only their own', async () => {
      const store = await harness.open({ dimensions: 8, fields });
      try {
        const vector = seededVector(1, 8);
        await store.upsert([{ id: 'same', vector, metadata: { source: 'alice' } }], {
          namespace: 'user-alice',
        });
        await store.upsert([{ id: 'same', vector, metadata: { source: 'bob' } }], { namespace: 'user-bob' });
        const alice = await store.query(vector, { topK: 5, namespace: 'user-alice' });
        expect(alice).toHaveLength(1);
        expect(alice[0]!.metadata).toEqual({ source: 'alice' });
        expect(await store.count({ namespace: 'user-bob' })).toBe(1);
        expect(await store.count()).toBe(0);
        expect(await store.namespaces()).toEqual(['user-alice', 'user-bob']);
        expect(await store.delete(['same'], { namespace: 'user-alice' })).toBe(1);
        expect(await store.count({ namespace: 'user-alice' })).toBe(0);
        expect((await store.query(vector, { topK: 5, namespace: 'user-bob' }))[0]!.metadata).toEqual({
          source: 'bob',
        });
      } finally {
        await store.close();
      }
    });

    it('replaces a record upserted again, and deletes by id or by filter', async () => {
      const store = await harness.open({ dimensions: 8, fields });
      try {
        const records = Array.from({ length: 10 }, (_, index) => ({
          id: `r${index}`,
          vector: seededVector(index + 1, 8),
          metadata: { source: index < 4 ? 'session-1' : 'session-2' },
        }));
        await store.upsert(records);
        await store.upsert([{ id: 'r5', vector: seededVector(555, 8), metadata: { source: 'moved' } }]);
        expect(await store.count()).toBe(10);
        const moved = await store.query(seededVector(555, 8), { topK: 1 });
        expect(moved[0]).toMatchObject({ id: 'r5', metadata: { source: 'moved' } });
        expect(moved[0]!.score).toBeCloseTo(1, 4);
        expect(await store.delete(['r0', 'r1', 'missing'])).toBe(2);
        expect(await store.delete({ filter: { source: 'session-1' } })).toBe(2);
        expect(await store.count()).toBe(6);
        const left = await store.query(seededVector(1, 8), { topK: 10 });
        expect(left.map((match) => match.id).sort()).toEqual(['r4', 'r5', 'r6', 'r7', 'r8', 'r9']);
        // The rows that moved into deleted places keep their own vectors.
        for (const id of ['r6', 'r9']) {
          const index = Number(id.slice(1));
          const [nearest] = await store.query(seededVector(index + 1, 8), { topK: 1 });
          expect(nearest!.id).toBe(id);
        }
      } finally {
        await store.close();
      }
    });

    it('refuses bad input with a ValidationError and writes nothing of the batch', async () => {
      const store = await harness.open({ dimensions: 4, fields });
      try {
        await store.upsert([{ id: 'keep', vector: [1, 0, 0, 0], metadata: { source: 'a' } }]);
        const good = { id: 'new', vector: [0, 1, 0, 0] };
        const bad: unknown[] = [
          { id: 'x', vector: [1, 2, 3] },
          { id: 'x', vector: [1, Number.NaN, 0, 0] },
          { id: 'x', vector: [1, Number.POSITIVE_INFINITY, 0, 0] },
          { id: 'x', vector: [0, 0, 0, 0] },
          { id: '', vector: [1, 0, 0, 0] },
          { id: 'x', vector: [1, 0, 0, 0], metadata: { page: 'three' } },
          { id: 'x', vector: [1, 0, 0, 0], metadata: 'text' },
        ];
        for (const record of bad) {
          await expect(store.upsert([good, record as never])).rejects.toBeInstanceOf(ValidationError);
        }
        expect(await store.count()).toBe(1);
        await expect(store.query([1, 0, 0], { topK: 1 })).rejects.toThrow(
          /has 3 dimensions, but the store holds vectors of 4/,
        );
        await expect(store.query([1, 0, 0, Number.NaN], { topK: 1 })).rejects.toBeInstanceOf(ValidationError);
        await expect(store.query([1, 0, 0, 0], { topK: 1, filter: { author: 'x' } })).rejects.toThrow(
          /does not declare.*declared: source, page, draft/,
        );
        await expect(store.query([1, 0, 0, 0], { topK: 1, filter: { page: '2' as never } })).rejects.toThrow(
          /filter.page must be a number/,
        );
        await expect(store.query([1, 0, 0, 0], { topK: 0 })).rejects.toBeInstanceOf(ValidationError);
        await expect(store.delete({ filter: { author: 'x' } })).rejects.toBeInstanceOf(ValidationError);
        await expect(store.count({ namespace: 'bad namespace' })).rejects.toBeInstanceOf(ValidationError);
        expect(await store.count()).toBe(1);
      } finally {
        await store.close();
      }
    });

    it('fails every call after close', async () => {
      const store = await harness.open({ dimensions: 4 });
      await store.close();
      await expect(store.count()).rejects.toThrow(/closed/);
    });
  });
}
