import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LanceVectorStore } from 'lagent-ts/retrieval';
import { afterAll, describe, expect, it } from 'vitest';
import { runStoreWorker } from './fixtures/run-worker';
import { cosine, describeVectorStoreContract, seededVector } from './vector-store-contract';

const dir = mkdtempSync(join(tmpdir(), 'lagent-lance-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let directories = 0;
const freshDirectory = () => join(dir, `db-${++directories}`);

describeVectorStoreContract('LanceVectorStore', {
  open: async (options) => new LanceVectorStore({ path: freshDirectory(), ...options }),
});

describe('LanceVectorStore', () => {
  it('keeps vectors across processes: one writes and deletes, another reads the directory', async () => {
    const path = freshDirectory();
    expect(await runStoreWorker('lance', path, 'write', 'user-1')).toEqual({ count: 20 });
    const store = new LanceVectorStore({ path, dimensions: 16, fields: { session: 'string' } });
    try {
      expect(await store.count({ namespace: 'user-1' })).toBe(20);
      const [nearest] = await store.query(seededVector(5, 16), { topK: 1, namespace: 'user-1' });
      expect(nearest).toMatchObject({ id: 'm5', metadata: { session: 's1', text: 'message 5' } });
      expect(await runStoreWorker('lance', path, 'delete-session', 'user-1', 's1')).toEqual({
        deleted: 10,
        count: 10,
      });
      // This store's open table sees the other process's commit.
      expect(await store.count({ namespace: 'user-1' })).toBe(10);
      const rest = await store.query(seededVector(5, 16), { topK: 20, namespace: 'user-1' });
      expect(rest.map((match) => match.metadata.session)).toEqual(Array(10).fill('s2'));
    } finally {
      await store.close();
    }
  }, 120_000);

  it('refuses a table of another length or other fields, saying what it holds', async () => {
    const path = freshDirectory();
    const first = new LanceVectorStore({ path, dimensions: 4, fields: { lang: 'string' } });
    await first.upsert([{ id: 'a', vector: [1, 0, 0, 0], metadata: { lang: 'en' } }]);
    await first.close();
    const wrongLength = new LanceVectorStore({ path, dimensions: 8, fields: { lang: 'string' } });
    await expect(wrongLength.count()).rejects.toThrow(/holds vectors of 4 dimensions, not 8/);
    const wrongFields = new LanceVectorStore({ path, dimensions: 4, fields: { author: 'string' } });
    await expect(wrongFields.count()).rejects.toThrow(/created with the fields \[lang\], not \[author\]/);
    const again = new LanceVectorStore({ path, dimensions: 4, fields: { lang: 'string' } });
    expect(await again.count()).toBe(1);
    await again.close();
  });

  it('keeps strings with quotes apart in filters and ids', async () => {
    const store = new LanceVectorStore({ path: freshDirectory(), dimensions: 4, fields: { lang: 'string' } });
    try {
      await store.upsert([
        { id: "it's", vector: [1, 0, 0, 0], metadata: { lang: "o'k" } },
        { id: 'other', vector: [0, 1, 0, 0], metadata: { lang: "o' OR 1=1 --" } },
      ]);
      expect(
        (await store.query([1, 1, 0, 0], { topK: 5, filter: { lang: "o'k" } })).map((match) => match.id),
      ).toEqual(["it's"]);
      expect(await store.delete(["it's"])).toBe(1);
      expect(await store.count()).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('answers from an IVF-PQ index once built, and still finds rows added after it', async () => {
    const store = new LanceVectorStore({ path: freshDirectory(), dimensions: 16 });
    try {
      const vectors = Array.from({ length: 600 }, (_, index) => seededVector(index, 16));
      await store.upsert(vectors.map((vector, index) => ({ id: String(index), vector })));
      await store.createIndex({ partitions: 4, subVectors: 4 });
      await store.upsert([{ id: 'late', vector: seededVector(77_777, 16) }]);
      expect((await store.query(seededVector(77_777, 16), { topK: 1 }))[0]!.id).toBe('late');
      const query = seededVector(123_456, 16);
      const exact = vectors
        .map((vector, index) => ({ id: String(index), score: cosine(query, vector) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 10)
        .map((match) => match.id);
      const found = (await store.query(query, { topK: 10 })).map((match) => match.id);
      // Approximate: most of the exact top 10 (the index is refined with exact distances).
      expect(found.filter((id) => exact.includes(id)).length).toBeGreaterThanOrEqual(7);
    } finally {
      await store.close();
    }
  }, 120_000);
});
