import type { ChatMessage } from 'lagent-ts';
import { AsyncFunctionCallingAgent, asyncTool } from 'lagent-ts';
import { ingest, MemoryVectorStore, OpenAIEmbedder, retrievalTool } from 'lagent-ts/retrieval';
import { AsyncMockLLM, type FakeOpenAIServer, HashEmbedder, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';

let server: FakeOpenAIServer;
let hang = false;
beforeAll(async () => {
  server = await startFakeOpenAI({
    embeddings: { dimensions: 64, script: () => (hang ? { delayMs: 60_000 } : undefined) },
  });
});
afterAll(() => server.close());

it('an agent searches the documents through retrievalTool and reads passages citing their sources', async () => {
  const embedder = new OpenAIEmbedder({ model: 'local', baseURL: server.baseURL, dimensions: 64 });
  const store = new MemoryVectorStore({ dimensions: 64 });
  await ingest(
    [
      {
        id: 'pump',
        text: 'Priming. Fill the pump casing with water before the first start.',
        metadata: { source: 'pump.pdf' },
      },
      { id: 'cake', text: 'Whisk flour, eggs and milk for pancakes.', metadata: { source: 'recipes.md' } },
    ],
    { embedder, store },
  );
  const seen: ChatMessage[][] = [];
  const llm = new AsyncMockLLM({
    responses: (messages) => {
      seen.push(messages);
      return seen.length === 1
        ? { toolCalls: [{ name: 'search_documents', arguments: { query: 'prime the pump casing' } }] }
        : 'Fill the casing with water first [1].';
    },
  });
  const agent = new AsyncFunctionCallingAgent({
    llm,
    actions: [retrievalTool({ embedder, store, topK: 1 })],
  });
  const reply = await agent.call('How do I prime the pump?');
  expect(reply.content).toBe('Fill the casing with water first [1].');
  const toolMessage = seen[1]!.find((message) => message.role === 'tool');
  expect(toolMessage?.content).toMatch(
    /^\[1\] pump\.pdf, chunk 0 \(score 0\.\d\d\)\nPriming\. Fill the pump casing/,
  );
});

it('an embedding made inside an agent call stops when the call is cancelled, even when not given its signal', async () => {
  hang = true;
  const embedder = new OpenAIEmbedder({ model: 'local', baseURL: server.baseURL, dimensions: 64 });
  const outcomes: unknown[] = [];
  const remember = asyncTool({
    name: 'remember',
    parameters: z.object({ fact: z.string() }),
    run: async ({ fact }) => {
      try {
        await embedder.embed([fact]);
        outcomes.push('embedded');
      } catch (error) {
        outcomes.push(error);
        throw error;
      }
      return 'ok';
    },
  });
  const llm = new AsyncMockLLM({
    responses: [{ toolCalls: [{ name: 'remember', arguments: { fact: 'the sky is blue' } }] }, 'done'],
  });
  const agent = new AsyncFunctionCallingAgent({ llm, actions: [remember] });
  const controller = new AbortController();
  const call = agent.call('remember this', { signal: controller.signal });
  const before = server.requests.length;
  await expect.poll(() => server.requests.length).toBeGreaterThan(before);
  controller.abort(new Error('the user left'));
  await expect(call).rejects.toThrow('the user left');
  await expect.poll(() => outcomes.length).toBe(1);
  expect((outcomes[0] as Error).message).toBe('the user left');
  hang = false;
  // The deterministic embedder of the tests agrees with the fake server's vectors.
  expect((await embedder.embed(['hello']))[0]).toEqual(
    new HashEmbedder({ dimensions: 64 }).vectorOf('hello'),
  );
});
