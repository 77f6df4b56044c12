import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { ConfigurationError } from 'lagent-ts';
import { PostgresVectorStore } from 'lagent-ts/retrieval';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PostgresServer, postgresBinaries, startPostgres } from '../stores/postgres-server';
import { describeVectorStoreContract, seededVector } from './vector-store-contract';

/*
 * Two servers. The PostgreSQL the stores' tests start (Debian's, without pgvector: no Debian package carries
 * it) shows the error a server without the extension gives. PGlite (PostgreSQL 17 compiled to WebAssembly,
 * with pgvector 0.8 built in) served on the PostgreSQL wire protocol runs the store's own SQL through the
 * real `pg` client for everything else.
 */

const binaries = postgresBinaries();

describe.runIf('bin' in binaries)('PostgresVectorStore on a PostgreSQL server without pgvector', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres((binaries as { bin: string }).bin);
  }, 60_000);
  afterAll(() => server?.close());

  it('fails with a ConfigurationError saying to install pgvector, and writes nothing', async () => {
    const store = new PostgresVectorStore({ connectionString: server.connectionString, dimensions: 4 });
    try {
      const failure = await store.count().catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(ConfigurationError);
      expect((failure as Error).message).toMatch(
        /^PostgresVectorStore needs the pgvector extension, which this PostgreSQL server does not have \(.*extension "vector" is not available.*\): install it on the server \(Debian and Ubuntu: apt install postgresql-<version>-pgvector/,
      );
      // The same error again (nothing was created half-way), and no table was made.
      await expect(store.upsert([{ id: 'a', vector: [1, 0, 0, 0] }])).rejects.toThrow(
        /needs the pgvector extension/,
      );
      const pg = await import('pg');
      const client = new pg.default.Client({ connectionString: server.connectionString });
      await client.connect();
      try {
        const tables = await client.query(`SELECT 1 FROM pg_tables WHERE tablename = 'lagent_vectors'`);
        expect(tables.rowCount).toBe(0);
      } finally {
        await client.end();
      }
    } finally {
      await store.close();
    }
  }, 60_000);
});

describe('PostgresVectorStore on pgvector (PGlite over the wire protocol)', () => {
  let db: PGlite;
  let server: PGLiteSocketServer;
  let connectionString = '';
  let tables = 0;
  beforeAll(async () => {
    db = await PGlite.create({ extensions: { vector } });
    server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 4 });
    await server.start();
    connectionString = `postgres://postgres@${server.getServerConn()}/postgres`;
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await db?.close();
  });

  describeVectorStoreContract('PostgresVectorStore', {
    open: async (options) =>
      new PostgresVectorStore({ connectionString, table: `contract_${++tables}`, ...options }),
  });

  it('refuses a table of vectors of another length, and adds newly declared fields from the metadata', async () => {
    const first = new PostgresVectorStore({ connectionString, table: 'evolving', dimensions: 4 });
    await first.upsert([
      { id: 'a', vector: [1, 0, 0, 0], metadata: { lang: 'en' } },
      { id: 'b', vector: [0, 1, 0, 0], metadata: { lang: 3 } },
    ]);
    await first.close();
    const wrong = new PostgresVectorStore({ connectionString, table: 'evolving', dimensions: 8 });
    await expect(wrong.count()).rejects.toThrow(/holds vectors of 4 dimensions, not 8/);
    await wrong.close();
    const second = new PostgresVectorStore({
      connectionString,
      table: 'evolving',
      dimensions: 4,
      fields: { lang: 'string' },
    });
    try {
      expect(
        (await second.query([1, 1, 0, 0], { topK: 5, filter: { lang: 'en' } })).map((match) => match.id),
      ).toEqual(['a']);
    } finally {
      await second.close();
    }
  });

  it('answers from an HNSW index once built', async () => {
    const store = new PostgresVectorStore({ connectionString, table: 'indexed', dimensions: 16 });
    try {
      await store.upsert(
        Array.from({ length: 300 }, (_, index) => ({ id: String(index), vector: seededVector(index, 16) })),
      );
      await store.createIndex();
      const [nearest] = await store.query(seededVector(42, 16), { topK: 1 });
      expect(nearest!.id).toBe('42');
      expect(nearest!.score).toBeCloseTo(1, 4);
    } finally {
      await store.close();
    }
  }, 60_000);
});
