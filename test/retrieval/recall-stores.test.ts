import type { SessionStore } from 'lagent-ts';
import { AsyncAgent, type ChatMessage, TokenWindowAggregator } from 'lagent-ts';
import { type Embedder, type EmbedOptions, MemoryVectorStore } from 'lagent-ts/retrieval';
import { PostgresStore, RedisStore } from 'lagent-ts/stores';
import { AsyncMockLLM, HashEmbedder } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisServer, startRedis } from '../distributed/queue/redis-server';
import { type PostgresServer, postgresBinaries, startPostgres } from '../stores/postgres-server';

/*
 * Semantic recall over the asynchronous session stores (Redis, PostgreSQL): a turn is indexed once its commit
 * landed, and an agent that starts afresh on the same stores (another process) embeds nothing it already has.
 */

const DIMS = 128;
const FACT = 'My locker code at the harbour gym is 4719.';
const QUESTION = 'What is my locker code at the harbour gym?';
const CHAT = [
  'The weather was lovely on the walk along the river today',
  'I watched a film about penguins and glaciers last night',
  'We are painting the kitchen a pale shade of green this weekend',
  'My neighbour adopted a very loud parrot called Captain',
  'The bakery on the corner started selling sourdough pretzels',
  'I have been reading a novel set in a lighthouse in Norway',
];

class LoggedEmbedder implements Embedder {
  readonly dimensions = DIMS;
  readonly inner = new HashEmbedder({ dimensions: DIMS });
  readonly texts: string[] = [];
  async embed(texts: readonly string[], options?: EmbedOptions): Promise<number[][]> {
    this.texts.push(...texts);
    return this.inner.embed(texts, options);
  }
}

function agentOn(sessions: SessionStore, vectors: MemoryVectorStore) {
  const embedder = new LoggedEmbedder();
  const prompts: ChatMessage[][] = [];
  const aggregator = new TokenWindowAggregator({
    maxTokens: 120,
    recall: { embedder, store: vectors, topK: 3 },
  });
  const agent = new AsyncAgent({
    name: 'assistant',
    llm: new AsyncMockLLM({
      responses: (messages) => {
        prompts.push(messages);
        return 'Noted.';
      },
    }),
    aggregator,
    memory: { store: sessions },
  });
  return { agent, aggregator, embedder, prompts };
}

/** Two agents on the same stores, one after the other (as two processes would be). */
async function roundTrip(sessions: SessionStore & { close(): Promise<void> }) {
  const vectors = new MemoryVectorStore({
    dimensions: DIMS,
    fields: { session: 'string', position: 'number' },
  });
  try {
    const first = agentOn(sessions, vectors);
    for (const text of [FACT, ...CHAT]) await first.agent.call(text, { sessionId: 'u' });
    await first.aggregator.flushRecall();
    const committed = 2 * (1 + CHAT.length);
    expect(await vectors.count({ namespace: 'recall:s:u' })).toBe(committed);
    // Each message embedded once by the indexing, besides the searches' queries.
    expect(first.embedder.texts.filter((text) => text === FACT)).toHaveLength(2);

    // Another agent (as another process would): the session comes from the store, the index is already whole.
    const second = agentOn(sessions, vectors);
    await second.agent.call(QUESTION, { sessionId: 'u' });
    expect(second.prompts.at(-1)!.some((message) => message.content?.includes(`user: ${FACT}`))).toBe(true);
    await second.aggregator.flushRecall();
    expect(second.embedder.texts).toEqual([QUESTION, QUESTION, 'Noted.']);
    expect(await vectors.count({ namespace: 'recall:s:u' })).toBe(committed + 2);
  } finally {
    await sessions.close();
  }
}

describe('Redis', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('indexes each turn once its commit landed, and a fresh agent on the same stores embeds nothing again', () =>
    roundTrip(new RedisStore({ url: server.url, prefix: `recall-${process.pid}` })));
});

const binaries = postgresBinaries();
describe.runIf('bin' in binaries)('PostgreSQL', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres((binaries as { bin: string }).bin);
  }, 60_000);
  afterAll(async () => {
    await server?.close();
  });

  it('indexes each turn once its commit landed, and a fresh agent on the same stores embeds nothing again', () =>
    roundTrip(new PostgresStore({ connectionString: server.connectionString })));
});
