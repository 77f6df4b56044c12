import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AsyncAgent, type ChatMessage, TokenWindowAggregator } from 'lagent-ts';
import { SQLiteVectorStore } from 'lagent-ts/retrieval';
import { SQLiteStore } from 'lagent-ts/stores';
import { AsyncMockLLM, HashEmbedder } from 'lagent-ts/testing';
import { afterAll, expect, it } from 'vitest';

/*
 * Deleting a session (`agent.deleteSession`) deletes its semantic recall vectors with it, on the real engines
 * (an SQLiteStore and an SQLiteVectorStore in one file), also from an agent that never called the session
 * (another process), and whatever the scope.
 */

const dir = mkdtempSync(join(tmpdir(), 'lagent-recall-delete-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DIMS = 128;
const FACT = 'My locker code at the harbour gym is 4719.';
const QUESTION = 'What is my locker code at the harbour gym?';
const CHAT = [
  'The weather was lovely on the walk along the river today',
  'I watched a film about penguins and glaciers last night',
  'We are painting the kitchen a pale shade of green this weekend',
];

/** An agent on the file's stores, as a process would open them. */
function open(path: string, scope: 'session' | 'resource') {
  const sessions = new SQLiteStore({ path });
  const vectors = new SQLiteVectorStore({
    path,
    dimensions: DIMS,
    fields: { session: 'string', position: 'number' },
  });
  const prompts: ChatMessage[][] = [];
  const aggregator = new TokenWindowAggregator({
    maxTokens: 120,
    recall: { embedder: new HashEmbedder({ dimensions: DIMS }), store: vectors, topK: 3, scope },
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
  const close = async () => {
    await vectors.close();
    sessions.close();
  };
  return { agent, aggregator, sessions, vectors, prompts, close };
}

const recalled = (prompt: ChatMessage[] | undefined) =>
  prompt?.some(
    (message) =>
      String(message.content).startsWith('Recalled from earlier') && String(message.content).includes('4719'),
  );

it("scope 'resource': deleting a session removes its vectors from its user's namespace, from another process too", async () => {
  const path = join(dir, 'resource.db');
  const first = open(path, 'resource');
  for (const text of [FACT, ...CHAT])
    await first.agent.call(text, { sessionId: 'chat-1', resourceId: 'alice' });
  await first.agent.call(CHAT[0]!, { sessionId: 'chat-2', resourceId: 'alice' });
  await first.agent.call(CHAT[1]!, { sessionId: 'bob-1', resourceId: 'bob' });
  await first.aggregator.flushRecall();
  // Before: alice's other session recalls the fact of chat-1.
  await first.agent.call(QUESTION, { sessionId: 'chat-3', resourceId: 'alice' });
  expect(recalled(first.prompts.at(-1))).toBe(true);
  await first.aggregator.flushRecall();
  await first.close();

  // Another process, which never called chat-1, deletes it.
  const second = open(path, 'resource');
  const alice = 'recall:r:alice';
  const before = await second.vectors.count({ namespace: alice });
  expect(await second.vectors.count({ namespace: alice, filter: { session: 'chat-1' } })).toBe(8);
  expect(await second.agent.deleteSession('chat-1')).toBe(true);
  expect(await second.sessions.readSession('assistant', 'chat-1')).toBeUndefined();
  expect(await second.vectors.count({ namespace: alice, filter: { session: 'chat-1' } })).toBe(0);
  // Nothing else of alice's, nor bob's, is touched.
  expect(await second.vectors.count({ namespace: alice })).toBe(before - 8);
  expect(await second.vectors.count({ namespace: 'recall:r:bob' })).toBe(2);
  // The deleted session is never recalled in another one.
  await second.agent.call(QUESTION, { sessionId: 'chat-4', resourceId: 'alice' });
  expect(recalled(second.prompts.at(-1))).toBe(false);
  expect(await second.agent.deleteSession('chat-1')).toBe(false);
  await second.aggregator.flushRecall();
  await second.close();
});

it("scope 'session': deleting a session removes its store entry and its vectors, and only its", async () => {
  const path = join(dir, 'session.db');
  const { agent, aggregator, sessions, vectors, close } = open(path, 'session');
  for (const text of [FACT, ...CHAT]) await agent.call(text, { sessionId: 'a' });
  await agent.call(FACT, { sessionId: 'b' });
  await aggregator.flushRecall();
  expect(await vectors.count({ namespace: 'recall:s:a' })).toBe(8);
  expect(await agent.deleteSession('a')).toBe(true);
  expect(await vectors.count({ namespace: 'recall:s:a' })).toBe(0);
  expect(await vectors.count({ namespace: 'recall:s:b' })).toBe(2);
  expect(await sessions.readSession('assistant', 'a')).toBeUndefined();
  expect(agent.memory?.get('a')).toBeUndefined();
  // The session starts afresh: nothing of before is recalled, and its new turns are indexed from 0.
  await agent.call(QUESTION, { sessionId: 'a' });
  await aggregator.flushRecall();
  expect(await vectors.count({ namespace: 'recall:s:a' })).toBe(2);
  await close();
});

it('refuses to delete a session with a call in flight', async () => {
  const path = join(dir, 'busy.db');
  const { agent, aggregator, close } = open(path, 'session');
  const call = agent.call(FACT, { sessionId: 'a' });
  await expect(agent.deleteSession('a')).rejects.toThrow(/call in flight/);
  await call;
  await aggregator.flushRecall();
  await close();
});

it('a session deleted through the store itself is never recalled in another, and its vectors go', async () => {
  const path = join(dir, 'store-delete.db');
  const { agent, aggregator, sessions, vectors, prompts, close } = open(path, 'resource');
  for (const text of [FACT, ...CHAT]) await agent.call(text, { sessionId: 'chat-1', resourceId: 'alice' });
  await aggregator.flushRecall();
  const alice = 'recall:r:alice';
  expect(await vectors.count({ namespace: alice, filter: { session: 'chat-1' } })).toBe(8);
  // Deleted with the store's own API, which knows nothing of the vectors (as an expired session is purged).
  expect(await sessions.deleteSession('assistant', 'chat-1')).toBe(true);
  await agent.call(QUESTION, { sessionId: 'chat-2', resourceId: 'alice' });
  expect(recalled(prompts.at(-1))).toBe(false);
  await aggregator.flushRecall();
  expect(await vectors.count({ namespace: alice, filter: { session: 'chat-1' } })).toBe(0);
  expect(await vectors.count({ namespace: alice, filter: { session: 'chat-2' } })).toBe(2);
  await close();
});
