import {
  Agent,
  AsyncAgent,
  AsyncBaseLLM,
  AsyncCachedLLM,
  AsyncWrappedLLM,
  BaseLLM,
  type ChatMessage,
  ConfigurationError,
  type ModelMiddleware,
  ModelStatusCode,
  type StreamChunk,
  WrappedLLM,
  wrapModel,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { PromiseInSyncCall } from '#src/core/steps';

const ask = (text: string): ChatMessage[] => [{ role: 'user', content: text }];

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** One middleware, written once: it rewrites the prompt, and upper-cases replies and streamed chunks. */
function shouting(seen: string[]): ModelMiddleware {
  return {
    name: 'shout',
    *call(request, next) {
      seen.push(`${request.mode}: ${request.messages.at(-1)?.content}`);
      const reply = yield* next({
        ...request,
        messages: [...request.messages, { role: 'user', content: '!' }],
      });
      return { ...reply, content: reply.content.toUpperCase() };
    },
    *stream(request, next) {
      seen.push(`stream: ${request.messages.at(-1)?.content}`);
      const source = next();
      for (;;) {
        const step = yield* source.next();
        if (step.done) return;
        yield { ...step.value, content: step.value.content.toUpperCase() };
      }
    },
  };
}

describe('wrapModel', () => {
  it('one middleware serves a sync and an async model: whole replies and streams', async () => {
    const seen: string[] = [];
    const sync = wrapModel(
      new MockLLM({ responses: (messages) => `got ${messages.length}`, chunkSize: 2 }),
      shouting(seen),
    );
    const async = wrapModel(
      new AsyncMockLLM({ responses: (messages) => `got ${messages.length}`, chunkSize: 2 }),
      shouting(seen),
    );
    expect(sync).toBeInstanceOf(WrappedLLM);
    expect(sync).toBeInstanceOf(BaseLLM);
    expect(async).toBeInstanceOf(AsyncWrappedLLM);
    expect(async).toBeInstanceOf(AsyncBaseLLM);

    expect(sync.chat(ask('a'))).toBe('GOT 2');
    expect(await async.chat(ask('a'))).toBe('GOT 2');
    expect(sync.generate(ask('b'))).toMatchObject({ content: 'GOT 2', toolCalls: [] });
    expect(await async.generate(ask('b'))).toMatchObject({ content: 'GOT 2', toolCalls: [] });
    const syncChunks = [...sync.streamChat(ask('c'))];
    expect(syncChunks.at(-1)).toMatchObject({ state: ModelStatusCode.END, content: 'GOT 1' });
    expect(await collect(async.streamChat(ask('c')))).toEqual(syncChunks);
    expect(seen).toEqual(['text: a', 'text: a', 'reply: b', 'reply: b', 'stream: c', 'stream: c']);
  });

  it('a wrapped model is a model agents use, and wrappers stack', async () => {
    const inner = new AsyncMockLLM({ responses: ['hello'] });
    const cached = new AsyncCachedLLM(inner);
    const seen: string[] = [];
    const agent = new AsyncAgent({ llm: wrapModel(cached, shouting(seen)) });
    expect((await agent.call('hi', { sessionId: 1 })).content).toBe('HELLO');
    expect((await agent.call('hi', { sessionId: 2 })).content).toBe('HELLO');
    expect(inner.calls).toHaveLength(1); // the shout's changed prompt was cached by the wrapper inside it
    expect(
      new Agent({ llm: wrapModel(new MockLLM({ responses: ['quiet'] }), shouting([])) }).call('x').content,
    ).toBe('QUIET');
  });

  it("a middleware without a hook passes the call on; the wrapped model's name, params and usage show through", async () => {
    const inner = new MockLLM({ responses: ['plain'] });
    (inner as { model?: string }).model = 'mock-model';
    const onlyStreams: ModelMiddleware = {
      name: 'streams-only',
      *stream(_request, next) {
        const source = next();
        for (;;) {
          const step = yield* source.next();
          if (step.done) return;
          yield step.value;
        }
      },
    };
    const llm = wrapModel(inner, onlyStreams);
    expect(llm.chat(ask('x'))).toBe('plain');
    expect(llm.model).toBe('mock-model');
    expect(llm.genParams).toBe(inner.genParams);
    expect(llm.getUsage()).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
  });

  it('a reader that leaves a stream early closes the model stream, through the middleware', () => {
    let closed = 0;
    class Endless extends BaseLLM {
      chat(): string {
        return '';
      }
      override *streamChat(): Generator<StreamChunk, void, undefined> {
        try {
          for (let n = 1; ; n++)
            yield { state: ModelStatusCode.STREAM_ING, content: 'x'.repeat(n), delta: 'x' };
        } finally {
          closed++;
        }
      }
    }
    const llm = wrapModel(new Endless(), shouting([]));
    for (const chunk of llm.streamChat(ask('go'))) if (chunk.content.length === 3) break;
    expect(closed).toBe(1);
  });

  it('a middleware that waits on a promise works on an async model and is refused on a sync one', async () => {
    const waits: ModelMiddleware = {
      name: 'waits',
      *call(_request, next) {
        yield Promise.resolve();
        return yield* next();
      },
    };
    expect(await wrapModel(new AsyncMockLLM({ responses: ['ok'] }), waits).chat(ask('x'))).toBe('ok');
    expect(() => wrapModel(new MockLLM({ responses: ['ok'] }), waits).chat(ask('x'))).toThrow(
      PromiseInSyncCall,
    );
  });

  it('an async call fails as a rejection, whatever the hook throws and when', async () => {
    const refuses: ModelMiddleware = {
      name: 'refuses',
      call() {
        throw new Error('refused before any step');
      },
    };
    const llm = wrapModel(new AsyncMockLLM({ responses: ['ok'] }), refuses);
    const pending = llm.chat(ask('x'));
    await expect(pending).rejects.toThrow('refused before any step');
  });

  it('refuses what is not a model or not middleware', () => {
    expect(() => wrapModel({} as never)).toThrow(ConfigurationError);
    expect(() => wrapModel(new MockLLM({ responses: ['x'] }), { name: 'none' } as never)).toThrow(
      /middleware\[0\] is not model middleware/,
    );
  });
});
