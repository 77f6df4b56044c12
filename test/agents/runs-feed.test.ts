import {
  AsyncBaseLLM,
  AsyncStreamingAgent,
  type ChatMessage,
  type LLMCallParams,
  MemoryStore,
  ModelStatusCode,
  type StreamChunk,
} from 'lagent-ts';
import type { RunEvent, RunWrite, SessionStore } from 'lagent-ts/stores';
import { describe, expect, it } from 'vitest';
import { eventData, type LiveRunEvent } from '#src/agents/runs/run-events';
import { followRunPages } from '#src/agents/runs/run-reader';

/** A streaming model that sends its next chunk when the test releases it; `sent(n)` resolves after chunk n. */
class GatedLLM extends AsyncBaseLLM {
  readonly words: string[];
  #released = 0;
  #count = 0;
  #wake: (() => void) | undefined;
  readonly #sent: { n: number; resolve: () => void }[] = [];

  constructor(words: string[]) {
    super();
    this.words = words;
  }

  release(n = 1): void {
    this.#released += n;
    this.#wake?.();
  }

  sent(n: number): Promise<void> {
    if (this.#count >= n) return Promise.resolve();
    return new Promise((resolve) => this.#sent.push({ n, resolve }));
  }

  async chat(): Promise<string> {
    return this.words.join('');
  }

  override async *streamChat(
    _messages: ChatMessage[],
    _params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    let content = '';
    for (const word of this.words) {
      while (this.#released <= this.#count) await new Promise<void>((resolve) => (this.#wake = resolve));
      content += word;
      this.#count++;
      for (const waiter of this.#sent.filter((w) => w.n <= this.#count)) waiter.resolve();
      yield { state: ModelStatusCode.STREAM_ING, content, delta: word };
    }
    yield { state: ModelStatusCode.END, content, delta: '' };
  }
}

/** The same store seen as another process sees it: another object, so this process's feed of its runs is not its. */
function elsewhere(store: MemoryStore): SessionStore {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function pagesOf(
  store: SessionStore,
  namespace: string,
  runId: string,
  after = 0,
): Promise<RunEvent[][]> {
  const pages: RunEvent[][] = [];
  for await (const page of followRunPages(store as never, namespace, runId, { after })) pages.push([...page]);
  return pages;
}

/** Resolves on the event loop's next turn, once the microtasks queued now have run. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The text a reader rebuilds from chunk and delta events' data. */
function textOf(events: readonly RunEvent[]): string {
  let text = '';
  for (const event of events) {
    const content = (eventData(event) as { content?: unknown }).content;
    if (event.type === 'chunk' && typeof content === 'string') text = content;
    if (event.type === 'delta' && typeof content === 'string') text += content;
  }
  return text;
}

describe("a run's live feed", () => {
  it('gives readers in this process the chunks as logged (their values, not their text parsed again); a reader of the store parses; each sees every event once, in order', async () => {
    const words = ['The ', 'quick ', 'brown ', 'fox.'];
    const llm = new GatedLLM(words);
    const store = new MemoryStore();
    const agent = new AsyncStreamingAgent({ llm, name: 'writer' });
    const run = agent.start('tell me', { sessionId: 'alice', runs: { store } });
    await run.ready;
    const here = pagesOf(store, 'writer', run.id);
    const there = pagesOf(elsewhere(store), 'writer', run.id);
    llm.release(2);
    await llm.sent(2);
    // A reader that comes in the middle, from after the first event.
    const late = pagesOf(store, 'writer', run.id, 1);
    llm.release(2);
    await run.result;
    const live = (await here).flat();
    const stored = (await there).flat();
    expect(live.map((event) => event.seq)).toEqual(live.map((_, index) => index + 1));
    expect(stored.map((event) => [event.seq, event.type, event.data])).toEqual(
      live.map((event) => [event.seq, event.type, event.data]),
    );
    expect((await late).flat().map((event) => event.seq)).toEqual(live.slice(1).map((event) => event.seq));
    const chunks = live.filter((event) => event.type === 'chunk' || event.type === 'delta');
    expect(chunks).toHaveLength(words.length);
    for (const event of chunks) {
      const value = (event as LiveRunEvent).value;
      expect(value).toBeDefined();
      expect(value).toEqual(JSON.parse(event.data));
    }
    // Nothing the store read carries a value: its readers parse what it keeps.
    expect(stored.every((event) => (event as Partial<LiveRunEvent>).value === undefined)).toBe(true);
    expect(textOf(live)).toBe('The quick brown fox.');
    expect(textOf(stored)).toBe('The quick brown fox.');
    // Once the run ended, its feed is gone: a reader rejoining from any event reads the store.
    const rejoined = (await pagesOf(store, 'writer', run.id, 2)).flat();
    expect(rejoined.map((event) => [event.seq, event.data])).toEqual(
      live.slice(2).map((event) => [event.seq, event.data]),
    );
    expect(rejoined.every((event) => (event as Partial<LiveRunEvent>).value === undefined)).toBe(true);
  });

  it('a write that fails is tried again: the events logged meanwhile follow it, each written once, in order', async () => {
    const words = ['a', 'b', 'c', 'd', 'e', 'f'];
    const llm = new GatedLLM(words);
    const store = new MemoryStore();
    let entered!: () => void;
    const firstWrite = new Promise<void>((resolve) => (entered = resolve));
    let fail!: () => void;
    const failed = new Promise<void>((resolve) => (fail = resolve));
    let failedOnce = false;
    const flaky = new Proxy(store, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (property !== 'appendRuns') return typeof value === 'function' ? value.bind(target) : value;
        return async (batch: RunWrite[]) => {
          // The first write of a chunk fails, once the test has logged more behind it.
          const chunks = batch.some((write) =>
            write.events.some((event) => /^(chunk|delta)$/.test(event.type)),
          );
          if (!failedOnce && chunks) {
            failedOnce = true;
            entered();
            await failed;
            throw new Error('the store is briefly away');
          }
          return target.appendRuns(batch);
        };
      },
    });
    const agent = new AsyncStreamingAgent({ llm, name: 'flaky' });
    const run = agent.start('go', { sessionId: 's', runs: { store: flaky } });
    await run.ready;
    llm.release(2);
    await firstWrite;
    // Logged while the failing write is out (a model that never waits has logged its chunk once the microtasks
    // it queued ran, before the next turn of the event loop) ...
    llm.release(2);
    await llm.sent(4);
    await nextTurn();
    fail();
    // ... and after it failed, before it is tried again (a timer's turn, later).
    await nextTurn();
    llm.release(2);
    expect((await run.result).content).toBe('abcdef');
    const events = store.readRunEvents('flaky', run.id, 0)!.events;
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.filter((event) => event.type === 'chunk' || event.type === 'delta')).toHaveLength(
      words.length,
    );
    expect(textOf(events)).toBe('abcdef');
    expect(events.at(-1)?.type).toBe('message');
  });
});
