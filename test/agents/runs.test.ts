import {
  type AgentMessage,
  AsyncAgent,
  AsyncBaseLLM,
  AsyncFunctionCallingAgent,
  AsyncStreamingAgent,
  asyncTool,
  type ChatMessage,
  interruptsOf,
  joinRun,
  type LLMCallParams,
  MemoryStore,
  ModelStatusCode,
  RunFailedError,
  type RunLogEvent,
  resumeWith,
  type StreamChunk,
  ValidationError,
} from 'lagent-ts';
import type { RunWrite, SessionStore } from 'lagent-ts/stores';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { recoverRuns } from '#src/agents/runs/recover-runs';
import { runPlaceOf } from '#src/agents/runs/run';
import { dyingStore } from '../helpers/durable';

/** The run log as a process that dies when its call fails leaves it: the run's end is never written. */
function dyingRuns(store: MemoryStore): SessionStore {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      if (property !== 'appendRuns') return value.bind(target);
      return (writes: RunWrite[]) =>
        target.appendRuns(
          writes.map((write) =>
            write.status === 'failed'
              ? { ...write, status: undefined, events: write.events.slice(0, -1) }
              : write,
          ),
        );
    },
  });
}

/**
 * A streaming model whose chunks come when the test lets them (`release(n)`), so a test sees a run in the
 * middle of its reply without waiting on a clock. `aborted` says whether its request was stopped.
 */
class GatedLLM extends AsyncBaseLLM {
  readonly words: string[];
  released = 0;
  aborted = false;
  requests = 0;
  #wake: (() => void) | undefined;
  /** Resolves when the model has sent `n` chunks. */
  readonly #sent: { n: number; resolve: () => void }[] = [];
  #count = 0;

  constructor(words: string[]) {
    super();
    this.words = words;
  }

  release(n = 1): void {
    this.released += n;
    this.#wake?.();
  }

  /** Resolves once `n` chunks were sent. */
  sent(n: number): Promise<void> {
    if (this.#count >= n) return Promise.resolve();
    return new Promise((resolve) => this.#sent.push({ n, resolve }));
  }

  async chat(): Promise<string> {
    return this.words.join('');
  }

  override async *streamChat(
    _messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    this.requests++;
    const signal = params?.signal;
    let content = '';
    for (let i = 0; i < this.words.length; i++) {
      while (this.released <= this.#count) {
        if (signal?.aborted) {
          this.aborted = true;
          throw signal.reason;
        }
        await new Promise<void>((resolve, reject) => {
          this.#wake = resolve;
          signal?.addEventListener(
            'abort',
            () => {
              this.aborted = true;
              reject(signal.reason);
            },
            { once: true },
          );
        });
      }
      content += this.words[i];
      this.#count++;
      for (const waiter of this.#sent.filter((w) => w.n <= this.#count)) waiter.resolve();
      yield { state: ModelStatusCode.STREAM_ING, content, delta: this.words[i]! };
    }
    yield { state: ModelStatusCode.END, content, delta: '' };
  }
}

async function collect(events: AsyncIterable<RunLogEvent>): Promise<RunLogEvent[]> {
  const all: RunLogEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/** The text a reader rebuilds from chunk and delta events. */
function textOf(events: RunLogEvent[], start = ''): string {
  let text = start;
  for (const event of events) {
    const content = (event.data as { content?: unknown }).content;
    if (event.type === 'chunk' && typeof content === 'string') text = content;
    if (event.type === 'delta' && typeof content === 'string') text += content;
  }
  return text;
}

describe('agent.start: runs', () => {
  it('logs a streamed reply; readers from the start, from the middle and late see one sequence, none lost or repeated', async () => {
    const llm = new GatedLLM(['The ', 'quick ', 'brown ', 'fox.']);
    const store = new MemoryStore();
    const agent = new AsyncStreamingAgent({ llm, name: 'writer' });
    const run = agent.start('tell me', { sessionId: 'alice', runs: { store } });
    expect(typeof run.id).toBe('string');
    const first = collect(run.events());
    const second = collect(run.events());
    llm.release(2);
    await llm.sent(2);
    // A reader that leaves after the first events, and rejoins from its last one.
    const seen: RunLogEvent[] = [];
    for await (const event of run.events()) {
      seen.push(event);
      if (event.type === 'delta') break;
    }
    llm.release(2);
    const rest = await collect(run.events(seen.at(-1)!.seq));
    const reply = await run.result;
    expect(reply.content).toBe('The quick brown fox.');
    const all = await first;
    expect(await second).toEqual(all);
    expect([...seen, ...rest]).toEqual(all);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)!.type).toBe('message');
    expect((all.at(-1)!.data as { content: string }).content).toBe('The quick brown fox.');
    expect(textOf(all)).toBe('The quick brown fox.');
    const kinds = all.filter((e) => e.type === 'agent').map((e) => (e.data as { kind: string }).kind);
    expect(kinds).toEqual(['callStart', 'llmStart', 'llmEnd', 'callEnd']);
    expect(all.find((e) => e.type === 'status')?.data).toEqual({ status: 'running' });
    // A reader after the end gets the whole log at once.
    expect(await collect(run.events())).toEqual(all);
    expect(await collect(run.events(all.length))).toEqual([]);
    const info = await run.info();
    expect(info).toMatchObject({ status: 'done', sessionId: 'alice', lastSeq: all.length });
    expect(JSON.parse(info!.result!).reply.content).toBe('The quick brown fox.');
  });

  it('an async agent: its agent events and its reply; the run is listed on its session', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['hi there'] }), name: 'greeter' });
    const run = agent.start('hello', { sessionId: 7, runs: { store } });
    expect((await run.result).content).toBe('hi there');
    const events = await collect(run.events());
    expect(events.map((e) => e.type)).toEqual(['status', 'agent', 'agent', 'agent', 'agent', 'message']);
    expect(agent.stateDict(7).memory).toHaveLength(2);
    expect(store.listRuns('greeter', '7').runs.map((r) => r.runId)).toEqual([run.id]);
  });

  it('cancel stops the model request; the run ends cancelled and the session is as before', async () => {
    const llm = new GatedLLM(['a', 'b', 'c']);
    const store = new MemoryStore();
    const agent = new AsyncStreamingAgent({ llm, name: 'w' });
    const run = agent.start('go', { sessionId: 's', runs: { store } });
    llm.release(1);
    await llm.sent(1);
    const record = await run.cancel();
    expect(record?.cancelRequested).toBe(true);
    await expect(run.result).rejects.toBeInstanceOf(RunFailedError);
    await expect(run.result).rejects.toMatchObject({ status: 'cancelled' });
    expect(llm.aborted).toBe(true);
    const events = await collect(run.events());
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { status: 'cancelled' } });
    expect((await run.info())?.status).toBe('cancelled');
    expect(agent.stateDict('s').memory).toEqual([]);
    // Cancelling a run that ended changes nothing.
    expect((await run.cancel())?.status).toBe('cancelled');
  });

  it("a caller's signal cancels the run too", async () => {
    const llm = new GatedLLM(['a', 'b']);
    const agent = new AsyncStreamingAgent({ llm, name: 'w' });
    const controller = new AbortController();
    const run = agent.start('go', { signal: controller.signal, runs: { store: new MemoryStore() } });
    await run.ready;
    controller.abort();
    await expect(run.result).rejects.toMatchObject({ status: 'cancelled' });
  });

  it('a failing call ends the run failed, with the reason in its last event', async () => {
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: () => {
          throw new Error('model down');
        },
      }),
      name: 'broken',
    });
    const run = agent.start('hi', { runs: { store: new MemoryStore() } });
    await expect(run.result).rejects.toThrow('model down');
    const events = await collect(run.events());
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      data: { detail: 'model down', error: 'Error', status: 'failed' },
    });
    // Joined from its log (another process would), the run says why it failed.
    const joined = joinRun({ store: run.store, namespace: run.namespace }, run.id);
    await expect(joined.result).rejects.toMatchObject({ name: 'RunFailedError', status: 'failed' });
  });

  it('a run that asks for approval waits; a run given the resume message and its id goes on in the same log', async () => {
    const store = new MemoryStore();
    const sent: string[] = [];
    const send = asyncTool({
      name: 'Send',
      parameters: z.object({ to: z.string() }),
      needsApproval: true,
      run: async ({ to }) => {
        sent.push(to);
        return `sent to ${to}`;
      },
    });
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: [{ toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] }, 'Sent it.'],
      }),
      actions: [send],
      name: 'mailer',
      durable: { store },
    });
    const run = agent.start('mail bob', { sessionId: 's' });
    const paused = await run.result;
    const [interrupt] = interruptsOf(paused);
    expect(interrupt?.toolCall.name).toBe('Send');
    expect((await run.info())?.status).toBe('waiting');
    const before = await collect(run.events());
    expect(before.at(-1)?.type).toBe('message');
    const resumed = agent.start(resumeWith([{ id: interrupt!.id, approve: true }]), {
      sessionId: 's',
      runId: run.id,
    });
    expect(resumed.id).toBe(run.id);
    expect((await resumed.result).content).toBe('Sent it.');
    expect(sent).toEqual(['bob']);
    const after = await collect(run.events(before.length));
    expect(after[0]).toMatchObject({ seq: before.length + 1, type: 'status', data: { resumed: true } });
    expect(after.at(-1)).toMatchObject({ type: 'message', data: { content: 'Sent it.' } });
    expect((await run.info())?.status).toBe('done');
  });

  it('a durable agent runs its call under the run id', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: ['ok'] }),
      name: 'd',
      durable: { store },
    });
    const run = agent.start('hi', { sessionId: 1 });
    const reply = (await run.result) as AgentMessage;
    expect((reply.extraInfo as { callId?: string }).callId).toBe(run.id);
    expect(store.readJournal('d', run.id)?.finished).toBe(true);
    // Its log is in the durable store, under the agent's namespace.
    expect(store.readRun('d', run.id)?.status).toBe('done');
  });

  it('refuses bad input: a run id in use, a negative or fractional after, an unknown run', async () => {
    const store = new MemoryStore();
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }), name: 'a' });
    const run = agent.start('hi', { runId: 'r1', runs: { store } });
    await run.result;
    const again = agent.start('hi', { runId: 'r1', runs: { store } });
    await expect(again.result).rejects.toThrow(/a run "r1" exists already/);
    const other = agent.start('hi', { runId: 'r1', sessionId: 'someone else', runs: { store } });
    await expect(other.result).rejects.toThrow(/a run of another session/);
    await expect(collect(run.events(-1))).rejects.toBeInstanceOf(ValidationError);
    await expect(collect(run.events(1.5))).rejects.toBeInstanceOf(ValidationError);
    const unknown = joinRun({ store, namespace: 'a' }, 'nope');
    await expect(unknown.ready).rejects.toThrow(/no run "nope"/);
    expect(() => agent.start('hi', { runId: '', runs: { store } })).toThrow(/keys are strings/);
  });

  it('bounds a log: past maxEvents, chunks are not logged, its end still is', async () => {
    const store = new MemoryStore();
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: ['x'.repeat(100)], chunkSize: 1 }),
      name: 'long',
    });
    const run = agent.start('go', { runs: { store, maxEvents: 10 } });
    await run.result;
    const events = await collect(run.events());
    expect(events.filter((e) => e.type === 'truncated')).toHaveLength(1);
    expect(events.length).toBeLessThanOrEqual(14);
    expect(events.at(-1)).toMatchObject({ type: 'message', data: { content: 'x'.repeat(100) } });
  });

  it('keeps memory bounded: finished runs past their retention are dropped', async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ clock: () => now });
    const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }), name: 'many' });
    for (let i = 0; i < 200; i++)
      await agent.start('hi', { sessionId: i, runs: { store, retainMs: 1_000 } }).result;
    expect(store.listRuns('many', '5').runs).toHaveLength(1);
    now += 2_000;
    // New runs prune the ones past their retention as they are made; purgeExpired drops the rest.
    await agent.start('hi', { sessionId: 'new', runs: { store, retainMs: 1_000 } }).result;
    expect(store.readRun('many', store.listRuns('many', 'new').runs[0]!.runId)).toBeDefined();
    store.purgeExpired('many');
    let left = 0;
    for (let i = 0; i < 200; i++) left += store.listRuns('many', String(i)).runs.length;
    expect(left).toBe(0);
  });

  it('start-up recovery finishes a run its process left, in the same log, without running its tool again', async () => {
    const store = new MemoryStore();
    const sent: string[] = [];
    const send = asyncTool({
      name: 'Send',
      parameters: z.object({ to: z.string() }),
      run: async ({ to }) => {
        sent.push(to);
        return `sent to ${to}`;
      },
    });
    let asked = 0;
    const first = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: () => {
          if (asked++ === 0) return { toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] };
          throw new Error('the process died');
        },
      }),
      actions: [send],
      name: 'mailer',
      durable: { store: dyingStore(store) },
    });
    const run = first.start('mail bob', { sessionId: 's', runs: { store: dyingRuns(store) } });
    await expect(run.result).rejects.toThrow('the process died');
    const left = store.readRunEvents('mailer', run.id, 0)!;
    // Left as a crash leaves it: not ended.
    expect(['queued', 'running']).toContain(left.run.status);
    expect(left.events.map((e) => JSON.parse(e.data).kind).filter(Boolean)).toContain('toolEnd');
    // A client follows the run from its last event while a new process recovers it.
    const rejoined = collect(joinRun({ store, namespace: 'mailer' }, run.id).events(left.run.lastSeq));
    const second = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({ responses: ['Sent.'] }),
      actions: [send],
      name: 'mailer',
      durable: { store },
    });
    const recovered = await recoverRuns(second, runPlaceOf(second, undefined));
    expect(recovered).toEqual([{ runId: run.id, sessionId: 's', status: 'done' }]);
    expect(sent).toEqual(['bob']);
    const rest = await rejoined;
    expect(rest[0]).toMatchObject({ seq: left.run.lastSeq + 1, type: 'status', data: { recovered: true } });
    expect(rest.at(-1)).toMatchObject({ type: 'message', data: { content: 'Sent.' } });
    // Once more: nothing is left to recover.
    expect(await recoverRuns(second, runPlaceOf(second, undefined))).toEqual([]);
  });

  it('start-up recovery that another process finished first, between its look and its start, is skipped, not failed', async () => {
    const store = new MemoryStore();
    const sent: string[] = [];
    const send = asyncTool({
      name: 'Send',
      parameters: z.object({ to: z.string() }),
      run: async ({ to }) => {
        sent.push(to);
        return `sent to ${to}`;
      },
    });
    const mailer = (llm: AsyncMockLLM, durableStore: SessionStore) =>
      new AsyncFunctionCallingAgent({
        llm,
        actions: [send],
        name: 'mailer',
        durable: { store: durableStore },
      });
    let asked = 0;
    const first = mailer(
      new AsyncMockLLM({
        responses: () => {
          if (asked++ === 0) return { toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] };
          throw new Error('the process died');
        },
      }),
      dyingStore(store),
    );
    const run = first.start('mail bob', { sessionId: 's', runs: { store: dyingRuns(store) } });
    await expect(run.result).rejects.toThrow('the process died');
    // What a second server saw when it started: the call unfinished, its run not ended...
    const unfinished = await store.listUnfinishedCalls('mailer', {});
    const journals = await store.listJournals('mailer', 's', { unfinished: true });
    const seen = store.readRun('mailer', run.id);
    // ...while a third finished it first.
    const third = mailer(new AsyncMockLLM({ responses: ['Sent.'] }), store);
    expect(await recoverRuns(third, runPlaceOf(third, undefined))).toEqual([
      { runId: run.id, sessionId: 's', status: 'done' },
    ]);
    const looked = new Set<string>();
    const stale = new Proxy(store, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (typeof value !== 'function') return value;
        const once = (answer: unknown) => {
          if (looked.has(String(property))) return value.bind(target);
          return () => {
            looked.add(String(property));
            return answer;
          };
        };
        if (property === 'listUnfinishedCalls') return once(Promise.resolve(unfinished));
        if (property === 'listJournals') return once(Promise.resolve(journals));
        if (property === 'readRun') return once(seen);
        return value.bind(target);
      },
    }) as MemoryStore;
    const second = mailer(new AsyncMockLLM({ responses: ['Sent again.'] }), stale);
    expect(await recoverRuns(second, runPlaceOf(second, undefined))).toEqual([
      { runId: run.id, sessionId: 's', status: 'skipped' },
    ]);
    expect(sent).toEqual(['bob']);
    expect(store.readRun('mailer', run.id)).toMatchObject({ status: 'done' });
  });

  it('start-up recovery leaves a run waiting for a decision as it is, and makes no run for a call that needs none', async () => {
    const store = new MemoryStore();
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({ responses: [{ toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] }] }),
      actions: [
        asyncTool({
          name: 'Send',
          parameters: z.object({ to: z.string() }),
          needsApproval: true,
          run: async () => 'sent',
        }),
      ],
      name: 'mailer',
      durable: { store },
    });
    const run = agent.start('mail bob', { sessionId: 's' });
    await run.result;
    const lastSeq = store.readRun('mailer', run.id)!.lastSeq;
    expect(await recoverRuns(agent, runPlaceOf(agent, undefined))).toEqual([
      { runId: run.id, sessionId: 's', status: 'skipped' },
    ]);
    expect(store.readRun('mailer', run.id)).toMatchObject({ status: 'waiting', lastSeq });
  });
});
