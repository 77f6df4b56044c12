import type { ChatMessage, LLMCallParams, StreamChunk } from 'lagent-ts';
import {
  AsyncAgent,
  AsyncBaseLLM,
  AsyncFallbackLLM,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  asyncTool,
  BaseLLM,
  type FallbackEvent,
  FallbackLLM,
  LLMRequestError,
  ModelStatusCode,
} from 'lagent-ts';
import { type FakeOpenAIServer, MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

/** Two fake OpenAI servers: the primary's replies are scripted per test, the backup echoes with a prefix. */
let primary: FakeOpenAIServer;
let backup: FakeOpenAIServer;

beforeAll(async () => {
  [primary, backup] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  backup.setScript((request) => `backup: ${String(request.body?.messages?.at(-1)?.content ?? '')}`);
});

afterAll(async () => {
  await Promise.all([primary.close(), backup.close()]);
});

const client = (server: FakeOpenAIServer, model: string) =>
  new AsyncGPTAPI({ model, apiKey: 'sk-test', baseURL: server.baseURL, retry: 1, maxRetryAfter: 5 });

/** A retryable failure asks the client to retry after 1 ms, so the tests do not wait for backoff. */
const QUICK = { 'retry-after-ms': '1' };

const ask = (text: string): ChatMessage[] => [{ role: 'user', content: text }];

describe('AsyncFallbackLLM', () => {
  it('asks the next model after a retryable failure, once the first model spent its own retries', async () => {
    primary.setScript({ status: 503, headers: QUICK });
    const before = primary.requests.length;
    const events: FallbackEvent[] = [];
    const llm = new AsyncFallbackLLM([client(primary, 'main-model'), client(backup, 'backup-model')], {
      onFallback: (event) => events.push(event),
    });
    expect(await llm.chat(ask('hello'))).toBe('backup: hello');
    expect(primary.requests.length - before).toBe(2); // the first attempt and its one retry
    expect(llm.lastModel).toEqual({ index: 1, name: 'backup-model' });
    expect(events).toHaveLength(1);
    expect(events[0]!.from).toEqual({ index: 0, name: 'main-model' });
    expect(events[0]!.error.status).toBe(503);

    const reply = await llm.generate(ask('again'));
    expect(reply.content).toBe('backup: again');
    expect(reply.answeredBy).toEqual({ index: 1, name: 'backup-model' });
  });

  it('answers from the first model when it works, and counts usage over the models', async () => {
    primary.setScript('primary answer');
    const llm = new AsyncFallbackLLM([client(primary, 'main-model'), client(backup, 'backup-model')]);
    expect(await llm.chat(ask('hi'), { sessionId: 's' })).toBe('primary answer');
    expect(llm.lastModel?.index).toBe(0);
    expect(llm.getUsage('s').totalTokens).toBeGreaterThan(0);
    expect(llm.getLastUsage()).toEqual((llm.models[0] as AsyncGPTAPI).getLastUsage());
    llm.resetUsage('s');
    expect(llm.getUsage('s').totalTokens).toBe(0);
  });

  it.each([400, 401])('does not swallow a %i: the next model is never asked', async (status) => {
    primary.setScript({ status, error: { message: `nope ${status}` } });
    const backupBefore = backup.requests.length;
    const llm = new AsyncFallbackLLM([client(primary, 'a'), client(backup, 'b')]);
    const error = await llm.chat(ask('x')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect((error as LLMRequestError).status).toBe(status);
    expect((error as Error).message).toContain(`nope ${status}`);
    expect(backup.requests.length).toBe(backupBefore);
  });

  it('does not move on when the call is aborted', async () => {
    primary.setScript({ content: 'slow', delayMs: 2000 });
    const backupBefore = backup.requests.length;
    const llm = new AsyncFallbackLLM([client(primary, 'a'), client(backup, 'b')]);
    const controller = new AbortController();
    const pending = llm.chat(ask('x'), { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user stop')), 50);
    await expect(pending).rejects.toThrow('user stop');
    expect(backup.requests.length).toBe(backupBefore);
  });

  it('fails with every failure listed when every model fails', async () => {
    primary.setScript({ status: 500, error: { message: 'primary down' }, headers: QUICK });
    const llm = new AsyncFallbackLLM([client(primary, 'a'), client(primary, 'b')]);
    const error = (await llm.chat(ask('x')).catch((e: unknown) => e)) as LLMRequestError;
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error.message).toMatch(
      /every model of the fallback chain failed: 1\. a: .*primary down.*; 2\. b: /,
    );
    expect(error.status).toBe(500);
    expect(error.retryable).toBe(true);
  });

  it('streams from the next model when the first fails before its first chunk', async () => {
    primary.setScript({ status: 502, headers: QUICK });
    const llm = new AsyncFallbackLLM([client(primary, 'a'), client(backup, 'b')]);
    const chunks: StreamChunk[] = [];
    for await (const chunk of llm.streamChat(ask('streamed'))) chunks.push(chunk);
    expect(chunks.at(-1)).toMatchObject({ state: ModelStatusCode.END, content: 'backup: streamed' });
    expect(chunks.length).toBeGreaterThan(2);
    expect(llm.lastModel?.index).toBe(1);
  });

  it('does not fall back once a chunk was yielded: the failure reaches the caller', async () => {
    class Breaks extends AsyncBaseLLM {
      async chat(): Promise<string> {
        return '';
      }
      override async *streamChat(): AsyncGenerator<StreamChunk, void, undefined> {
        yield { state: ModelStatusCode.STREAM_ING, content: 'par', delta: 'par' };
        throw new LLMRequestError({ message: 'connection lost', retryable: true });
      }
    }
    const backupBefore = backup.requests.length;
    const llm = new AsyncFallbackLLM([new Breaks(), client(backup, 'b')]);
    const seen: string[] = [];
    await expect(async () => {
      for await (const chunk of llm.streamChat(ask('x'))) seen.push(chunk.content);
    }).rejects.toThrow('connection lost');
    expect(seen).toEqual(['par']);
    expect(backup.requests.length).toBe(backupBefore);
  });

  it('is a model agents use: plain chat, and function calling through generate() with tools', async () => {
    primary.setScript({ status: 503, headers: QUICK });
    const weather = asyncTool({
      name: 'weather',
      description: 'the weather of a city',
      parameters: z.object({ city: z.string() }),
      run: ({ city }) => `sunny in ${city}`,
    });
    backup.setScript((request) => {
      const messages = request.body.messages as { role: string; content: string }[];
      if (messages.at(-1)?.role === 'tool') return `done: ${messages.at(-1)!.content}`;
      return { toolCalls: [{ name: 'weather', arguments: { city: 'Paris' } }] };
    });
    const llm = new AsyncFallbackLLM([client(primary, 'a'), client(backup, 'b')]);
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [weather] });
    const reply = await agent.call('weather in Paris?');
    expect(String(reply.content)).toContain('sunny in Paris');
    expect(backup.requests.at(-2)?.body.tools?.[0]?.function?.name).toBe('weather');

    backup.setScript((request) => `backup: ${String(request.body?.messages?.at(-1)?.content ?? '')}`);
    const plain = new AsyncAgent({ llm });
    expect((await plain.call('hey')).content).toBe('backup: hey');
  });

  it('needs at least one model', () => {
    expect(() => new AsyncFallbackLLM([])).toThrow(/non-empty list of models/);
  });
});

/** A sync model that fails `failures` times with `error`, then answers `answer`. */
class Flaky extends BaseLLM {
  calls = 0;
  constructor(
    readonly answer: string,
    readonly error?: Error,
  ) {
    super();
  }
  chat(_messages: ChatMessage[], _params?: LLMCallParams): string {
    this.calls++;
    if (this.error) throw this.error;
    return this.answer;
  }
}

describe('FallbackLLM (sync)', () => {
  it('wraps sync models directly: a retryable failure moves on, a non-retryable one is thrown', () => {
    const down = new Flaky('', new LLMRequestError({ message: 'overloaded', status: 529, retryable: true }));
    const backupModel = new MockLLM({ responses: ['from backup', 'again'] });
    const llm = new FallbackLLM([down, backupModel]);
    expect(llm.chat(ask('x'))).toBe('from backup');
    expect(llm.lastModel).toEqual({ index: 1, name: 'MockLLM' });
    expect(llm.generate(ask('y'))).toMatchObject({ content: 'again', answeredBy: { index: 1 } });

    const refused = new Flaky('', new LLMRequestError({ message: 'bad request', status: 400 }));
    const untouched = new Flaky('never');
    expect(() => new FallbackLLM([refused, untouched]).chat(ask('x'))).toThrow('bad request');
    expect(untouched.calls).toBe(0);
  });

  it('streams from the next model when the first fails before its first chunk', () => {
    const down = new Flaky('', new LLMRequestError({ message: 'timeout', retryable: true }));
    const llm = new FallbackLLM([down, new MockLLM({ responses: ['a streamed answer'], chunkSize: 4 })]);
    const chunks = [...llm.streamChat(ask('x'))];
    expect(chunks.at(-1)?.content).toBe('a streamed answer');
    expect(chunks.length).toBeGreaterThan(2);
  });
});

/** An async model that fails (retryable) while `down`, else answers; counts the calls it gets and has at once. */
class Switchable extends AsyncBaseLLM {
  calls = 0;
  inFlight = 0;
  maxInFlight = 0;
  down = true;
  /** While set, calls wait for it before they answer or fail. */
  gate: Promise<void> | undefined;
  constructor(readonly model: string) {
    super();
  }
  async chat(): Promise<string> {
    this.calls++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.gate;
      if (this.down)
        throw new LLMRequestError({ message: `${this.model} overloaded`, status: 529, retryable: true });
      return `from ${this.model}`;
    } finally {
      this.inFlight--;
    }
  }
}

/** A clock the test moves. */
function manualClock() {
  let time = 1_000;
  return { now: () => time, advance: (ms: number) => (time += ms) };
}

describe('the circuit breaker of a fallback chain', () => {
  it('skips a model that failed for its cool-down, then tries it once again', async () => {
    const clock = manualClock();
    const main = new Switchable('main');
    const spare = new Switchable('spare');
    spare.down = false;
    const events: FallbackEvent[] = [];
    const llm = new AsyncFallbackLLM([main, spare], {
      coolDownMs: 30_000,
      now: clock.now,
      onFallback: (event) => events.push(event),
    });
    for (let i = 0; i < 3; i++) expect(await llm.chat(ask('x'))).toBe('from spare');
    expect(main.calls).toBe(1);
    expect(events).toHaveLength(1);
    expect(llm.breaker.isOpen(0)).toBe(true);

    clock.advance(29_999);
    await llm.chat(ask('x'));
    expect(main.calls).toBe(1);

    // Cooled down but still failing: one call tries it, and it is skipped for another cool-down.
    clock.advance(1);
    expect(await llm.chat(ask('x'))).toBe('from spare');
    expect(main.calls).toBe(2);
    await llm.chat(ask('x'));
    expect(main.calls).toBe(2);

    // Back up: the next trial after the cool-down closes it, and calls stay on it.
    main.down = false;
    clock.advance(30_000);
    expect(await llm.chat(ask('x'))).toBe('from main');
    expect(await llm.chat(ask('x'))).toBe('from main');
    expect(main.calls).toBe(4);
    expect(llm.breaker.isOpen(0)).toBe(false);
  });

  it('a two-turn tool loop asks a dead primary once, not on every model call', async () => {
    primary.setScript({ status: 503, headers: QUICK });
    const before = primary.requests.length;
    backup.setScript((request) => {
      const messages = request.body.messages as { role: string; content: string }[];
      if (messages.at(-1)?.role === 'tool') return `done: ${messages.at(-1)!.content}`;
      return { toolCalls: [{ name: 'weather', arguments: { city: 'Oslo' } }] };
    });
    const weather = asyncTool({
      name: 'weather',
      description: 'the weather of a city',
      parameters: z.object({ city: z.string() }),
      run: ({ city }) => `snow in ${city}`,
    });
    const llm = new AsyncFallbackLLM([client(primary, 'main-model'), client(backup, 'backup-model')]);
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [weather] });
    const models: (string | undefined)[] = [];
    agent.events.on('llmEnd', (event) => models.push(event.model));
    expect(String((await agent.call('weather in Oslo?')).content)).toContain('snow in Oslo');
    expect(primary.requests.length - before).toBe(2); // one call: its first attempt and its one retry
    expect(models).toEqual(['backup-model', 'backup-model']);
    backup.setScript((request) => `backup: ${String(request.body?.messages?.at(-1)?.content ?? '')}`);
  });

  it('after the cool-down, one call at a time tries the model again; the others go on to the next', async () => {
    const clock = manualClock();
    const main = new Switchable('main');
    const spare = new Switchable('spare');
    spare.down = false;
    const llm = new AsyncFallbackLLM([main, spare], { coolDownMs: 1_000, now: clock.now });
    await llm.chat(ask('x'));
    clock.advance(1_000);
    let open!: () => void;
    main.gate = new Promise((resolve) => {
      open = resolve;
    });
    main.down = false;
    const calls = [llm.chat(ask('a')), llm.chat(ask('b')), llm.chat(ask('c'))];
    await new Promise((resolve) => setImmediate(resolve));
    expect(main.inFlight).toBe(1);
    open();
    expect(await Promise.all(calls)).toEqual(['from main', 'from spare', 'from spare']);
    expect(main.maxInFlight).toBe(1);
    expect(await llm.chat(ask('d'))).toBe('from main');
  });

  it('when every model is cooling down, asks the one that failed first, and says which were skipped', async () => {
    const clock = manualClock();
    const first = new Switchable('first');
    const second = new Switchable('second');
    const llm = new AsyncFallbackLLM([first, second], { now: clock.now });
    await expect(llm.chat(ask('x'))).rejects.toThrow(/1\. first: .*; 2\. second: /);
    clock.advance(10);
    const error = (await llm.chat(ask('x')).catch((e: unknown) => e)) as LLMRequestError;
    expect(first.calls).toBe(2);
    expect(second.calls).toBe(1);
    expect(error.message).toMatch(
      /every model of the fallback chain failed: 1\. first: .*\(skipped, as they failed within their cool-down: second\)/,
    );
  });

  it('coolDownMs: 0 asks every model in order on every call', async () => {
    const main = new Switchable('main');
    const spare = new Switchable('spare');
    spare.down = false;
    const llm = new AsyncFallbackLLM([main, spare], { coolDownMs: 0 });
    await llm.chat(ask('x'));
    await llm.chat(ask('x'));
    expect(main.calls).toBe(2);
    expect(() => new AsyncFallbackLLM([main], { coolDownMs: -1 })).toThrow(/coolDownMs/);
  });

  it('an abort or a refused request leaves the circuit as it was', async () => {
    const main = new Switchable('main');
    main.down = false;
    const llm = new AsyncFallbackLLM([main, new Switchable('spare')]);
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    main.gate = Promise.reject(new Error('stop'));
    main.gate.catch(() => {});
    await expect(llm.chat(ask('x'), { signal: controller.signal })).rejects.toThrow('stop');
    expect(llm.breaker.isOpen(0)).toBe(false);
  });

  it('agents say which model answered: the chain model of each session, else the llm name', async () => {
    const main = new Switchable('main');
    const spare = new Switchable('spare');
    spare.down = false;
    const chain = new AsyncFallbackLLM([main, spare]);
    const chained = new AsyncAgent({ llm: chain });
    const plain = new AsyncAgent({ llm: new Switchable('solo') });
    (plain.llm as Switchable).down = false;
    const seen: (string | undefined)[] = [];
    chained.events.on('llmEnd', (event) => seen.push(event.model));
    plain.events.on('llmEnd', (event) => seen.push(event.model));
    await chained.call('hi', { sessionId: 1 });
    main.down = false;
    chain.breaker.succeeded(0);
    await chained.call('hi', { sessionId: 2 });
    await plain.call('hi');
    expect(seen).toEqual(['spare', 'main', 'solo']);
    expect(chain.lastModelOf(1)?.name).toBe('spare');
    expect(chain.lastModelOf(2)?.name).toBe('main');
  });

  it('the sync chain skips a failed model too', () => {
    const clock = manualClock();
    const down = new Flaky('', new LLMRequestError({ message: 'overloaded', status: 529, retryable: true }));
    const llm = new FallbackLLM([down, new MockLLM({ responses: ['one', 'two', 'three'] })], {
      now: clock.now,
    });
    expect([llm.chat(ask('x')), llm.chat(ask('x'))]).toEqual(['one', 'two']);
    expect(down.calls).toBe(1);
    clock.advance(30_000);
    expect(llm.chat(ask('x'))).toBe('three');
    expect(down.calls).toBe(2);
  });
});
