import {
  Agent,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  AsyncStreamingAgent,
  asyncTool,
  type ChatMessage,
  ConfigurationError,
  MemoryStore,
  type RecalledMessage,
  TokenWindowAggregator,
  ValidationError,
} from 'lagent-ts';
import { type Embedder, type EmbedOptions, MemoryVectorStore } from 'lagent-ts/retrieval';
import { AsyncMockLLM, HashEmbedder, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const DIMS = 256;
const FIELDS = { session: 'string', position: 'number' } as const;
const HEADER = 'Recalled from earlier in the conversation';

const CHAT = [
  'The weather was lovely on the walk along the river today',
  'I watched a film about penguins and glaciers last night',
  'We are painting the kitchen a pale shade of green this weekend',
  'My neighbour adopted a very loud parrot called Captain',
  'The bakery on the corner started selling sourdough pretzels',
  'I have been reading a novel set in a lighthouse in Norway',
  'Our football team lost again, three goals to nil',
  'I finally fixed the squeaky hinge on the garden gate',
];
const FACT = 'My locker code at the harbour gym is 4719.';
const QUESTION = 'What is my locker code at the harbour gym?';

/** An embedder that logs what it was asked to embed, and can be told to fail. */
class LoggedEmbedder implements Embedder {
  readonly dimensions = DIMS;
  readonly inner = new HashEmbedder({ dimensions: DIMS });
  readonly calls: string[][] = [];
  fail = false;
  async embed(texts: readonly string[], options?: EmbedOptions): Promise<number[][]> {
    this.calls.push([...texts]);
    if (this.fail) throw new Error('embedding service down');
    return this.inner.embed(texts, options);
  }
  get texts(): number {
    return this.calls.reduce((sum, call) => sum + call.length, 0);
  }
}

function setup(recall: Record<string, unknown> = {}, maxTokens = 80) {
  const embedder = new LoggedEmbedder();
  const store = new MemoryVectorStore({ dimensions: DIMS, fields: FIELDS });
  const prompts: ChatMessage[][] = [];
  const llm = new AsyncMockLLM({
    responses: (messages) => {
      prompts.push(messages);
      return 'Noted.';
    },
  });
  const aggregator = new TokenWindowAggregator({
    maxTokens,
    recall: { embedder, store, topK: 3, ...recall },
  });
  const agent = new AsyncAgent({ llm, aggregator, name: 'assistant' });
  const events: { query: string; recalled: readonly RecalledMessage[] }[] = [];
  agent.events.on('recall', (event) => events.push({ query: event.query, recalled: event.recalled }));
  return { embedder, store, prompts, aggregator, agent, events };
}

/** The recalled block of a prompt, if any. */
function block(prompt: ChatMessage[] | undefined): ChatMessage | undefined {
  return prompt?.find((message) => message.content?.startsWith(HEADER));
}

async function converse(
  agent: AsyncAgent,
  sessionId: string | number,
  texts: readonly string[],
  options: Record<string, unknown> = {},
) {
  for (const text of texts) await agent.call(text, { sessionId, ...options });
}

describe('semantic recall', () => {
  it('puts back a planted fact that fell out of the window, before the newest turn, marked as recalled', async () => {
    const { agent, prompts, aggregator, events } = setup();
    await converse(agent, 's', [FACT, ...CHAT]);
    await agent.call(QUESTION, { sessionId: 's' });
    const prompt = prompts.at(-1)!;
    const recalled = block(prompt);
    expect(recalled?.role).toBe('user');
    expect(recalled?.content).toContain(`user: ${FACT}`);
    // Just before the newest turn (the question), after the window's messages.
    expect(prompt.indexOf(recalled!)).toBe(prompt.length - 2);
    expect(prompt.at(-1)).toEqual({ role: 'user', content: QUESTION });
    // The fact is out of the window: only the recalled block shows it.
    expect(prompt.filter((message) => message.content?.includes('4719'))).toHaveLength(1);
    expect(events.at(-1)?.query).toBe(QUESTION);
    expect(events.at(-1)?.recalled[0]).toMatchObject({ content: FACT, sender: 'user', sessionId: 's' });
    await aggregator.flushRecall();

    // The token window alone does not have it.
    const plain: ChatMessage[][] = [];
    const windowOnly = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          plain.push(messages);
          return 'Noted.';
        },
      }),
      aggregator: new TokenWindowAggregator({ maxTokens: 80 }),
    });
    await converse(windowOnly, 's', [FACT, ...CHAT, QUESTION]);
    expect(plain.at(-1)!.some((message) => message.content?.includes('4719'))).toBe(false);
  });

  it('never recalls what is in the window, and emits nothing when nothing is placed', async () => {
    const { agent, prompts, events } = setup({}, 4000);
    await converse(agent, 's', [FACT, ...CHAT.slice(0, 2), QUESTION]);
    // Everything fits: the fact is in the window, once, and no block is added.
    expect(prompts.at(-1)!.filter((message) => message.content?.includes('4719'))).toHaveLength(1);
    expect(block(prompts.at(-1))).toBeUndefined();
    expect(events).toEqual([]);
  });

  it('a message pushed out of the window by the recalled block is a candidate itself: never lost between them', async () => {
    // However far back the fact is, the prompt shows it exactly once: in the window or in the block.
    for (let chats = 0; chats <= CHAT.length; chats++) {
      const { agent, prompts } = setup({}, 120);
      await converse(agent, 's', [...CHAT.slice(0, 3), FACT, ...CHAT.slice(0, chats)]);
      await agent.call(QUESTION, { sessionId: 's' });
      const shown = prompts.at(-1)!.map((message) => message.content?.split(FACT).length ?? 1);
      expect(
        shown.reduce((sum, parts) => sum + parts - 1, 0),
        `${chats} chats after the fact`,
      ).toBe(1);
    }
  });

  it("in a function-calling loop: searched with the user's message, placed before it, tool turns left whole", async () => {
    const embedder = new LoggedEmbedder();
    const store = new MemoryVectorStore({ dimensions: DIMS, fields: FIELDS });
    const aggregator = new TokenWindowAggregator({ maxTokens: 120, recall: { embedder, store, topK: 3 } });
    const prompts: ChatMessage[][] = [];
    let round = 0;
    const agent = new AsyncFunctionCallingAgent({
      name: 'assistant',
      llm: new AsyncMockLLM({
        responses: (messages) => {
          prompts.push(messages);
          const asking = messages.at(-1)?.content === QUESTION;
          return asking && round++ % 2 === 0
            ? { toolCalls: [{ name: 'lookup', arguments: { what: 'gym' } }] }
            : 'Noted.';
        },
      }),
      actions: [
        asyncTool({
          name: 'lookup',
          parameters: z.object({ what: z.string() }),
          run: async () => 'nothing on file',
        }),
      ],
      aggregator,
    });
    const queries: string[] = [];
    agent.events.on('recall', (event) => queries.push(event.query));
    await converse(agent as unknown as AsyncAgent, 's', [FACT, ...CHAT]);
    await aggregator.flushRecall();
    const before = queries.length;
    const indexed = await store.count({ namespace: 'recall:s:s' });
    await agent.call(QUESTION, { sessionId: 's' });
    // Two model calls (the tool round, then the answer): both searched with the question, both recall the fact.
    expect(queries.slice(before)).toEqual([QUESTION, QUESTION]);
    for (const prompt of prompts.slice(-2)) {
      const at = prompt.indexOf(block(prompt)!);
      expect(prompt[at]!.content).toContain(FACT);
      expect(prompt[at + 1]).toMatchObject({ role: 'user', content: QUESTION });
    }
    // The tool call and its result stay together, after the question.
    const last = prompts.at(-1)!;
    expect(last.slice(-2).map((message) => message.role)).toEqual(['assistant', 'tool']);
    // Nothing of the call is indexed before it returned: then its whole turn.
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(indexed);
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(agent.agent.memory!.get('s')!.length);
  });

  it('a streaming agent streams the reply to a prompt with the recalled block', async () => {
    const embedder = new LoggedEmbedder();
    const store = new MemoryVectorStore({ dimensions: DIMS, fields: FIELDS });
    const prompts: ChatMessage[][] = [];
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          prompts.push(messages);
          return 'It is 4719, as you told me.';
        },
      }),
      aggregator: new TokenWindowAggregator({ maxTokens: 80, recall: { embedder, store, topK: 3 } }),
    });
    const drain = async (text: string) => {
      let last = '';
      for await (const chunk of agent.call(text, { sessionId: 's' })) last = String(chunk.content);
      return last;
    };
    for (const text of [FACT, ...CHAT]) await drain(text);
    expect(await drain(QUESTION)).toBe('It is 4719, as you told me.');
    expect(block(prompts.at(-1))?.content).toContain(FACT);
  });

  it('brings range neighbours with each match, without duplicates', async () => {
    const { agent, prompts, events } = setup({ range: 1, topK: 1 });
    await converse(agent, 's', [CHAT[0]!, FACT, ...CHAT.slice(1)]);
    await agent.call(QUESTION, { sessionId: 's' });
    const lines = block(prompts.at(-1))!.content!.split('\n').slice(1);
    expect(lines).toEqual([`assistant: Noted.`, `user: ${FACT}`, 'assistant: Noted.']);
    const recalled = events.at(-1)!.recalled;
    expect(recalled).toHaveLength(3);
    // Neighbours carry their match's score.
    expect(new Set(recalled.map((message) => message.score)).size).toBe(1);
  });

  it("scope 'resource' recalls a user's other sessions and never another user's", async () => {
    const { agent, prompts, store, aggregator } = setup({ scope: 'resource' });
    await converse(agent, 'alice-1', [FACT, ...CHAT.slice(0, 2)], { resourceId: 'alice' });
    await converse(agent, 'bob-1', ['My locker code at the harbour gym is 1111.', ...CHAT.slice(0, 2)], {
      resourceId: 'bob',
    });
    // A new session of alice's: her fact, from her other conversation.
    await agent.call(QUESTION, { sessionId: 'alice-2', resourceId: 'alice' });
    const alice = block(prompts.at(-1))!.content!;
    expect(alice).toContain(`user (another conversation): ${FACT}`);
    expect(alice).not.toContain('1111');
    // Bob's new session sees his fact, never alice's.
    await agent.call(QUESTION, { sessionId: 'bob-2', resourceId: 'bob' });
    const bob = block(prompts.at(-1))!.content!;
    expect(bob).toContain('1111');
    expect(bob).not.toContain('4719');
    // A third user has nothing to recall at all.
    await agent.call(QUESTION, { sessionId: 'carol-1', resourceId: 'carol' });
    expect(block(prompts.at(-1))).toBeUndefined();
    await aggregator.flushRecall();
    // Each resource in its own namespace.
    expect(await store.namespaces()).toEqual(['recall:r:alice', 'recall:r:bob', 'recall:r:carol']);
  });

  it("scope 'resource' in a function-calling agent: its model turns are the resource's, given resourceId once", async () => {
    const store = new MemoryVectorStore({ dimensions: DIMS, fields: FIELDS });
    const aggregator = new TokenWindowAggregator({
      maxTokens: 80,
      recall: { embedder: new LoggedEmbedder(), store, topK: 3, scope: 'resource' },
    });
    const prompts: ChatMessage[][] = [];
    const agent = new AsyncFunctionCallingAgent({
      name: 'assistant',
      llm: new AsyncMockLLM({
        responses: (messages) => {
          prompts.push(messages);
          return 'Noted.';
        },
      }),
      actions: [],
      aggregator,
    });
    await converse(agent as unknown as AsyncAgent, 'alice-1', [FACT, ...CHAT.slice(0, 2)], {
      resourceId: 'alice',
    });
    await agent.call(QUESTION, { sessionId: 'alice-2', resourceId: 'alice' });
    expect(block(prompts.at(-1))!.content).toContain(`user (another conversation): ${FACT}`);
    await aggregator.flushRecall();
    expect(await store.namespaces()).toEqual(['recall:r:alice']);
  });

  it("scope 'session' never recalls another session's messages", async () => {
    const { agent, prompts } = setup();
    await converse(agent, 'one', [FACT, ...CHAT]);
    await agent.call(QUESTION, { sessionId: 'two' });
    expect(prompts.at(-1)!.some((message) => message.content?.includes('4719'))).toBe(false);
  });

  it("scope 'resource' without a resourceId is refused before anything runs", async () => {
    const { agent, prompts, embedder } = setup({ scope: 'resource' });
    await expect(agent.call('hello', { sessionId: 's' })).rejects.toThrow(ValidationError);
    await expect(agent.call('hello', { sessionId: 's' })).rejects.toThrow(/resourceId/);
    expect(prompts).toEqual([]);
    expect(embedder.calls).toEqual([]);
    expect(agent.memory!.get('s')?.length ?? 0).toBe(0);
  });

  it('indexes each committed message once, in the background; a failed call indexes nothing of its turn', async () => {
    const { agent, aggregator, store, embedder } = setup();
    await converse(agent, 's', [FACT, CHAT[0]!]);
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(4);
    const failing = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: () => {
          throw new Error('model down');
        },
      }),
      aggregator,
      memory: {},
    });
    // Same aggregator, another agent: its own memory, the same index.
    await converse(failing, 's2', [FACT]).catch(() => {});
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:s:s2' })).toBe(0);
    // Calling again does not embed the committed messages again.
    const before = embedder.texts;
    await agent.call(CHAT[1]!, { sessionId: 's' });
    await aggregator.flushRecall();
    expect(embedder.texts - before).toBe(1 + 2); // the query, then the new turn
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(6);
  });

  it('catches up before a recall what the background indexing missed (the embedder was down)', async () => {
    const { agent, aggregator, store, embedder, prompts } = setup();
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => {
      if (warning.code === 'LAGENT_RECALL_INDEX_FAILED') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      await agent.call(FACT, { sessionId: 's' }); // the query embedding works: nothing indexed yet
      embedder.fail = true;
      await aggregator.flushRecall();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).toHaveLength(1);
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(0);
    embedder.fail = false;
    await converse(agent, 's', [...CHAT, QUESTION]);
    expect(block(prompts.at(-1))?.content).toContain(FACT);
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(2 * (CHAT.length + 2));
  });

  it('a reset removes the session’s vectors', async () => {
    const { agent, aggregator, store } = setup();
    await converse(agent, 's', [FACT, CHAT[0]!]);
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(4);
    agent.reset('s');
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(0);
    await agent.call(CHAT[1]!, { sessionId: 's' });
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:s:s' })).toBe(2);
  });

  it("forgetRecalled removes one session's vectors from its resource's namespace, and no other's", async () => {
    const { agent, aggregator, store } = setup({ scope: 'resource' });
    await converse(agent, 'a1', [FACT], { resourceId: 'alice' });
    await converse(agent, 'a2', [CHAT[0]!], { resourceId: 'alice' });
    await aggregator.flushRecall();
    expect(await store.count({ namespace: 'recall:r:alice' })).toBe(4);
    expect(await aggregator.forgetRecalled('a1', { resourceId: 'alice' })).toBe(2);
    expect(await store.count({ namespace: 'recall:r:alice', filter: { session: 'a1' } })).toBe(0);
    expect(await store.count({ namespace: 'recall:r:alice', filter: { session: 'a2' } })).toBe(2);
  });

  it('counts the search’s embedding tokens in the call’s budget', async () => {
    const { agent } = setup();
    await converse(agent, 's', [FACT, ...CHAT]);
    const reply = await agent.call(QUESTION, { sessionId: 's', budget: { tokens: 100_000 } });
    const usage = (reply.extraInfo as { usage: { promptTokens: number } }).usage;
    const plain = await agent.call(QUESTION, { sessionId: 'x', budget: { tokens: 100_000 } });
    expect(usage.promptTokens).toBeGreaterThan(
      (plain.extraInfo as { usage: { promptTokens: number } }).usage.promptTokens,
    );
  });

  it('a durable call replayed from its journal does not embed or search again, and answers the same', async () => {
    /** A store whose next journal finish fails, after the call's model step was journaled. */
    class FailingStore extends MemoryStore {
      failNext = false;
      override finishJournal(...args: Parameters<MemoryStore['finishJournal']>): void {
        if (this.failNext) {
          this.failNext = false;
          throw new Error('disk failed');
        }
        super.finishJournal(...args);
      }
    }
    const journals = new FailingStore();
    const embedder = new LoggedEmbedder();
    const store = new MemoryVectorStore({ dimensions: DIMS, fields: FIELDS });
    let asked = 0;
    const prompts: ChatMessage[][] = [];
    const aggregator = new TokenWindowAggregator({ maxTokens: 80, recall: { embedder, store, topK: 3 } });
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          prompts.push(messages);
          return `answer ${++asked}`;
        },
      }),
      aggregator,
      durable: { store: journals },
    });
    const events: string[] = [];
    agent.events.on('recall', (event) => events.push(event.query));
    await converse(agent, 's', [FACT, ...CHAT]);
    await aggregator.flushRecall();
    journals.failNext = true;
    const asksBefore = asked;
    await expect(agent.call(QUESTION, { sessionId: 's', callId: 'q' })).rejects.toThrow(/disk failed/);
    expect(asked).toBe(asksBefore + 1);
    expect(block(prompts.at(-1))?.content).toContain(FACT);
    const embedded = embedder.calls.length;
    const searched = events.length;
    const reply = await agent.call(QUESTION, { sessionId: 's', callId: 'q' });
    expect(reply.content).toBe(`answer ${asked}`);
    expect(asked).toBe(asksBefore + 1); // the model step came from the journal
    expect(embedder.calls.length).toBe(embedded); // and nothing was embedded for it
    expect(events.length).toBe(searched);
  });
});

describe('semantic recall: minScore', () => {
  const SMALL_TALK = 'Did you see the sunset over the hills yesterday evening?';

  it('places no match below minScore: small talk sends no recalled block, the question still recalls its fact', async () => {
    // Without minScore, the nearest earlier messages are placed however unlike the small talk they are.
    const plain = setup();
    await converse(plain.agent, 's', [FACT, ...CHAT, SMALL_TALK]);
    expect(block(plain.prompts.at(-1))).toBeDefined();
    const nearest = plain.events.at(-1)!.recalled[0]!.score;

    const { agent, prompts, events } = setup({ minScore: 0.5 });
    await converse(agent, 's', [FACT, ...CHAT, SMALL_TALK]);
    expect(nearest).toBeLessThan(0.5);
    expect(block(prompts.at(-1))).toBeUndefined();
    expect(events).toEqual([]);
    await agent.call(QUESTION, { sessionId: 's' });
    expect(block(prompts.at(-1))?.content).toContain(`user: ${FACT}`);
    expect(events.at(-1)!.recalled.every((message) => message.score >= 0.5)).toBe(true);
  });
});

describe('semantic recall: bad configuration', () => {
  const embedder = new HashEmbedder({ dimensions: DIMS });
  const store = new MemoryVectorStore({ dimensions: DIMS, fields: FIELDS });
  const make = (recall: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    new TokenWindowAggregator({
      maxTokens: 100,
      ...extra,
      recall: { embedder, store, topK: 3, ...recall } as never,
    });

  it.each([
    [{ topK: 0 }, /topK/],
    [{ topK: -1 }, /topK/],
    [{ topK: 1.5 }, /topK/],
    [{ embedder: new HashEmbedder({ dimensions: 64 }) }, /64 dimensions, but the store holds 256/],
    [
      { store: new MemoryVectorStore({ dimensions: DIMS }) },
      /fields: \{ session: 'string', position: 'number' \}/,
    ],
    [{ scope: 'user' }, /scope/],
    [{ range: -1 }, /range/],
    [{ namespace: 'a b' }, /namespace/],
    [{ minScore: 2 }, /minScore/],
    [{ minScore: Number.NaN }, /minScore/],
    [{ minScore: '0.5' }, /minScore/],
    [{ embedder: {} }, /embedder/],
  ])('%o is refused at construction', (recall, message) => {
    expect(() => make(recall)).toThrow(ConfigurationError);
    expect(() => make(recall)).toThrow(message);
  });

  it('refuses recall with summarize', () => {
    const llm = new MockLLM({ responses: ['summary'] });
    expect(() => make({}, { summarize: { llm, triggerTokens: 80, keepTokens: 40 } })).toThrow(
      /recall and summarize/,
    );
  });

  it('a synchronous agent is refused with a clear error, before the model is asked', () => {
    const llm = new MockLLM({ responses: ['hi'] });
    const agent = new Agent({ llm, aggregator: make({}) });
    expect(() => agent.call('hello')).toThrow(ConfigurationError);
    expect(() => agent.call('hello')).toThrow(/Async\* agent/);
    expect(llm.calls).toEqual([]);
  });
});
