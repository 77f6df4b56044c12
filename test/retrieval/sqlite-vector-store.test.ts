import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AsyncAgent, ConfigurationError } from 'lagent-ts';
import { SQLiteVectorStore } from 'lagent-ts/retrieval';
import { SQLiteStore } from 'lagent-ts/stores';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { runStoreWorker } from './fixtures/run-worker';
import { describeVectorStoreContract, seededVector } from './vector-store-contract';

const dir = mkdtempSync(join(tmpdir(), 'lagent-sqlite-vec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(dir, `store-${++files}.db`);

describeVectorStoreContract('SQLiteVectorStore', {
  open: async (options) => new SQLiteVectorStore({ path: freshFile(), ...options }),
});

describe('SQLiteVectorStore', () => {
  it('keeps vectors across processes: one writes and deletes, another reads the file', async () => {
    const path = freshFile();
    const written = await runStoreWorker('sqlite', path, 'write', 'user-1');
    expect(written).toEqual({ count: 20 });
    const store = new SQLiteVectorStore({ path, dimensions: 16, fields: { session: 'string' } });
    try {
      expect(await store.count({ namespace: 'user-1' })).toBe(20);
      const [nearest] = await store.query(seededVector(5, 16), { topK: 1, namespace: 'user-1' });
      expect(nearest).toMatchObject({ id: 'm5', metadata: { session: 's1', text: 'message 5' } });
      // Deleting a session in another process removes its vectors here too.
      expect(await runStoreWorker('sqlite', path, 'delete-session', 'user-1', 's1')).toEqual({
        deleted: 10,
        count: 10,
      });
      expect(await store.count({ namespace: 'user-1' })).toBe(10);
      expect(await store.count({ namespace: 'user-1', filter: { session: 's1' } })).toBe(0);
      const rest = await store.query(seededVector(5, 16), { topK: 20, namespace: 'user-1' });
      expect(rest.every((match) => match.metadata.session === 's2')).toBe(true);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('refuses a file of vectors of another length, and adds newly declared fields from the metadata', async () => {
    const path = freshFile();
    const first = new SQLiteVectorStore({ path, dimensions: 4 });
    await first.upsert([
      { id: 'a', vector: [1, 0, 0, 0], metadata: { lang: 'en' } },
      { id: 'b', vector: [0, 1, 0, 0], metadata: { lang: 3 } },
    ]);
    await first.close();
    expect(() => new SQLiteVectorStore({ path, dimensions: 8 })).toThrow(ConfigurationError);
    expect(() => new SQLiteVectorStore({ path, dimensions: 8 })).toThrow(
      /holds vectors of 4 dimensions, not 8/,
    );
    const second = new SQLiteVectorStore({ path, dimensions: 4, fields: { lang: 'string' } });
    try {
      expect(
        (await second.query([1, 1, 0, 0], { topK: 5, filter: { lang: 'en' } })).map((match) => match.id),
      ).toEqual(['a']);
    } finally {
      await second.close();
    }
  });

  it('shares a file with other tables', async () => {
    const path = freshFile();
    const memory = new SQLiteVectorStore({ path, dimensions: 4, table: 'memory' });
    const documents = new SQLiteVectorStore({ path, dimensions: 8, table: 'documents' });
    await memory.upsert([{ id: 'a', vector: [1, 0, 0, 0] }]);
    expect(await documents.count()).toBe(0);
    await memory.close();
    await documents.close();
  });

  it('lives in the file of the session store, beside its sessions', async () => {
    const path = freshFile();
    const sessions = new SQLiteStore({ path });
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: ['noted'] }),
      memory: { store: sessions, namespace: 'assistant' },
    });
    await agent.call('I keep my bicycle in the garage', { sessionId: 'alice' });
    const vectors = new SQLiteVectorStore({ path, dimensions: 4, fields: { session: 'string' } });
    await vectors.upsert([{ id: 'm1', vector: [1, 0, 0, 0], metadata: { session: 'alice' } }], {
      namespace: 'alice',
    });
    expect(await vectors.count({ namespace: 'alice' })).toBe(1);
    await vectors.close();
    const reopened = new SQLiteStore({ path });
    expect(reopened.readSession('assistant', 'alice')?.version).toBe(1);
    reopened.close();
    sessions.close();
  });
});
