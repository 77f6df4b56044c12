import { AgentMessage, AgentStatusCode, ConfigurationError, type Steps } from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { PromiseInSyncCall } from '#src/core/steps';
import { driveStream, driveStreamAsync } from '#src/core/stream-drivers';

/** Runs a driver to its end: the chunks it yielded and what it returned. */
function drain<T>(driver: Generator<AgentMessage, T, undefined>): { chunks: AgentMessage[]; result: T } {
  const chunks: AgentMessage[] = [];
  let step = driver.next();
  while (!step.done) {
    chunks.push(step.value);
    step = driver.next();
  }
  return { chunks, result: step.value };
}

async function drainAsync<T>(
  driver: AsyncGenerator<AgentMessage, T, undefined>,
): Promise<{ chunks: AgentMessage[]; result: T }> {
  const chunks: AgentMessage[] = [];
  let step = await driver.next();
  while (!step.done) {
    chunks.push(step.value);
    step = await driver.next();
  }
  return { chunks, result: step.value };
}

const view = (chunk: AgentMessage) => ({
  content: chunk.content,
  sender: chunk.sender,
  streamState: chunk.streamState,
  delta: chunk.delta,
});

function* words(...values: string[]): Generator<string, void, undefined> {
  for (const value of values) yield value;
}

async function* wordsAsync(...values: string[]): AsyncGenerator<string, void, undefined> {
  for (const value of values) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    yield value;
  }
}

/** Steps that relay one stream and return what it ended with. */
function* relayOne(stream: unknown): Steps<unknown> {
  return yield stream;
}

/** Steps that end without ever needing their driver. */
// biome-ignore lint/correctness/useYield: steps that return at once
function* returning<T>(value: T): Steps<T> {
  return value;
}

describe('driveStream', () => {
  it('returns what steps without streams return, and yields nothing without emitFinal', () => {
    expect(drain(driveStream(returning(7), 'bot', false))).toEqual({ chunks: [], result: 7 });
  });

  it('relays a stream of strings as STREAM_ING messages from the sender, each with its delta', () => {
    const { chunks } = drain(driveStream(relayOne(words('He', 'Hello', 'Hello!')), 'bot', false));
    expect(chunks.map(view)).toEqual([
      { content: 'He', sender: 'bot', streamState: AgentStatusCode.STREAM_ING, delta: 'He' },
      { content: 'Hello', sender: 'bot', streamState: AgentStatusCode.STREAM_ING, delta: 'llo' },
      { content: 'Hello!', sender: 'bot', streamState: AgentStatusCode.STREAM_ING, delta: '!' },
    ]);
  });

  it('gives a chunk that does not extend the previous one all its text as delta', () => {
    const { chunks } = drain(driveStream(relayOne(words('abc', 'xy')), 'bot', false));
    expect(chunks.map((chunk) => chunk.delta)).toEqual(['abc', 'xy']);
  });

  it('pulls the stream one chunk at a time, as the consumer asks', () => {
    const pulled: string[] = [];
    function* stream(): Generator<string, void, undefined> {
      for (const value of ['a', 'ab', 'abc']) {
        pulled.push(value);
        yield value;
      }
    }
    const driver = driveStream(relayOne(stream()), 'bot', false);
    expect((driver.next().value as AgentMessage).content).toBe('a');
    expect(pulled).toEqual(['a']);
    expect((driver.next().value as AgentMessage).content).toBe('ab');
    expect(pulled).toEqual(['a', 'ab']);
  });

  it('sends a copy of the last chunk back into the steps as the stream’s result', () => {
    let received: unknown;
    function* steps(): Steps<string> {
      received = yield words('x', 'xy');
      return 'done';
    }
    const { chunks, result } = drain(driveStream(steps(), 'bot', false));
    expect(result).toBe('done');
    expect(received).toBeInstanceOf(AgentMessage);
    expect((received as AgentMessage).content).toBe('xy');
    expect(received).not.toBe(chunks.at(-1));
  });

  it('sends the stream’s return value back into the steps when it has one', () => {
    const reply = new AgentMessage({ sender: 'bot', content: 'returned' });
    function* stream(): Generator<string, AgentMessage, undefined> {
      yield 'chunk';
      return reply;
    }
    expect(drain(driveStream(relayOne(stream()), 'bot', false)).result).toBe(reply);
  });

  it('relays a finished message as a STREAM_ING copy and leaves the stream’s own message unchanged', () => {
    const finished = new AgentMessage({ sender: 'tool', content: 'result', extraInfo: { id: 1 } });
    const coding = new AgentMessage({ sender: 'tool', content: 'code', streamState: AgentStatusCode.CODING });
    function* stream(): Generator<AgentMessage, void, undefined> {
      yield coding;
      yield finished;
    }
    const { chunks } = drain(driveStream(relayOne(stream()), 'bot', false));
    expect(chunks[0]).toBe(coding);
    expect(chunks[0]?.streamState).toBe(AgentStatusCode.CODING);
    expect(chunks[1]).not.toBe(finished);
    expect(chunks[1]).toMatchObject({
      sender: 'tool',
      content: 'result',
      extraInfo: { id: 1 },
      streamState: AgentStatusCode.STREAM_ING,
    });
    expect(finished.streamState).toBe(AgentStatusCode.END);
  });

  it('yields the final reply once more with emitFinal, its delta being what it adds to the last chunk', () => {
    function* steps(): Steps<AgentMessage> {
      yield words('Hel', 'Hello');
      return new AgentMessage({ sender: 'bot', content: 'Hello world' });
    }
    const { chunks, result } = drain(driveStream(steps(), 'bot', true));
    expect(chunks.map((chunk) => chunk.delta)).toEqual(['Hel', 'lo', ' world']);
    expect(chunks.at(-1)).toBe(result);
    expect(result.streamState).toBe(AgentStatusCode.END);
  });

  it('starts each relayed stream’s deltas afresh', () => {
    function* steps(): Steps<string> {
      yield words('one', 'one two');
      yield words('one two three');
      return 'done';
    }
    const { chunks } = drain(driveStream(steps(), 'bot', false));
    expect(chunks.map((chunk) => chunk.delta)).toEqual(['one', ' two', 'one two three']);
  });

  it('relays a nested streaming call’s chunks and makes its final reply the result, not one more chunk', () => {
    function* inner(): Steps<AgentMessage> {
      yield words('in', 'inner');
      return new AgentMessage({ sender: 'inner', content: 'inner done' });
    }
    let innerReply: unknown;
    function* outer(): Steps<AgentMessage> {
      innerReply = yield driveStream(inner(), 'inner', true);
      yield words('outer');
      return new AgentMessage({ sender: 'outer', content: 'all done' });
    }
    const { chunks } = drain(driveStream(outer(), 'outer', true));
    expect(chunks.map((chunk) => [chunk.sender, chunk.content])).toEqual([
      ['inner', 'in'],
      ['inner', 'inner'],
      ['outer', 'outer'],
      ['outer', 'all done'],
    ]);
    expect((innerReply as AgentMessage).content).toBe('inner done');
  });

  it('drives nested steps composed with yield*', () => {
    function* part(text: string): Steps<string> {
      const reply = (yield words(text)) as AgentMessage;
      return `${reply.content}.`;
    }
    function* steps(): Steps<string> {
      return (yield* part('a')) + (yield* part('b'));
    }
    const { chunks, result } = drain(driveStream(steps(), 'bot', false));
    expect(chunks.map((chunk) => chunk.content)).toEqual(['a', 'b']);
    expect(result).toBe('a.b.');
  });

  it('throws PromiseInSyncCall into the steps for a promise, where they can catch it', () => {
    let caught: unknown;
    function* steps(): Steps<string> {
      try {
        yield Promise.resolve('x');
        return 'awaited';
      } catch (error) {
        caught = error;
        return 'refused';
      }
    }
    expect(drain(driveStream(steps(), 'bot', false)).result).toBe('refused');
    expect(caught).toBeInstanceOf(PromiseInSyncCall);
  });

  it('refuses an async stream with a ConfigurationError thrown into the steps', () => {
    function* steps(): Steps<unknown> {
      try {
        return yield wordsAsync('x');
      } catch (error) {
        return error;
      }
    }
    const { chunks, result } = drain(driveStream(steps(), 'bot', false));
    expect(chunks).toEqual([]);
    expect(result).toBeInstanceOf(ConfigurationError);
    expect((result as Error).message).toMatch(/async stream inside a synchronous agent/);
  });

  it('throws an error of the stream into the steps at the yield', () => {
    const failure = new Error('stream broke');
    function* stream(): Generator<string, void, undefined> {
      yield 'partial';
      throw failure;
    }
    function* steps(): Steps<unknown> {
      try {
        return yield stream();
      } catch (error) {
        return error;
      }
    }
    const { chunks, result } = drain(driveStream(steps(), 'bot', false));
    expect(chunks.map((chunk) => chunk.content)).toEqual(['partial']);
    expect(result).toBe(failure);
  });

  it('refuses a chunk that is neither a string nor a message, and closes the stream', () => {
    let closed = false;
    function* stream(): Generator<unknown, void, undefined> {
      try {
        yield 'fine';
        yield 42;
        yield 'never';
      } finally {
        closed = true;
      }
    }
    function* steps(): Steps<unknown> {
      try {
        return yield stream();
      } catch (error) {
        return error;
      }
    }
    const { chunks, result } = drain(driveStream(steps(), 'bot', false));
    expect(chunks.map((chunk) => chunk.content)).toEqual(['fine']);
    expect(result).toBeInstanceOf(ConfigurationError);
    expect((result as Error).message).toMatch(/must yield strings or AgentMessages, got number/);
    expect(closed).toBe(true);
  });

  it('refuses a stream that ends without any message', () => {
    function* steps(): Steps<unknown> {
      try {
        return yield words();
      } catch (error) {
        return error;
      }
    }
    const { result } = drain(driveStream(steps(), 'bot', false));
    expect(result).toBeInstanceOf(ConfigurationError);
    expect((result as Error).message).toMatch(/finished without a message/);
  });

  it('lets an error the steps throw reach the consumer', () => {
    const failure = new Error('steps failed');
    function* steps(): Steps<never> {
      yield words('a');
      throw failure;
    }
    const driver = driveStream(steps(), 'bot', true);
    expect((driver.next().value as AgentMessage).content).toBe('a');
    expect(() => driver.next()).toThrow(failure);
  });

  it('runs the steps’ and the stream’s finally blocks when the consumer leaves early', () => {
    const order: string[] = [];
    function* stream(): Generator<string, void, undefined> {
      try {
        yield 'a';
        yield 'ab';
        order.push('stream went on');
      } finally {
        order.push('stream finally');
      }
    }
    function* steps(): Steps<string> {
      try {
        yield stream();
        order.push('steps went on');
        return 'done';
      } finally {
        order.push('steps finally');
      }
    }
    for (const chunk of driveStream(steps(), 'bot', true)) {
      if (chunk.content === 'a') break;
    }
    expect(order).toEqual(['stream finally', 'steps finally']);
  });
});

describe('driveStreamAsync', () => {
  it('returns what steps without streams return, and yields the final reply with emitFinal', async () => {
    expect(await drainAsync(driveStreamAsync(returning('x'), 'bot', false))).toEqual({
      chunks: [],
      result: 'x',
    });
    const reply = new AgentMessage({ sender: 'bot', content: 'hi' });
    const { chunks, result } = await drainAsync(driveStreamAsync(returning(reply), 'bot', true));
    expect(chunks).toEqual([reply]);
    expect(result).toBe(reply);
    expect(reply.delta).toBe('hi');
  });

  it('awaits a yielded promise and sends its value into the steps', async () => {
    function* steps(): Steps<number> {
      return ((yield new Promise((resolve) => setTimeout(() => resolve(20), 1))) as number) + 1;
    }
    expect((await drainAsync(driveStreamAsync(steps(), 'bot', false))).result).toBe(21);
  });

  it('throws a rejection into the steps at the yield, where they can catch it', async () => {
    const failure = new Error('model down');
    function* steps(): Steps<unknown> {
      try {
        yield Promise.reject(failure);
        return 'resumed';
      } catch (error) {
        return error;
      }
    }
    expect((await drainAsync(driveStreamAsync(steps(), 'bot', false))).result).toBe(failure);
  });

  it('relays async and sync streams chunk by chunk, with deltas', async () => {
    let received: unknown;
    function* steps(): Steps<string> {
      received = yield wordsAsync('He', 'Hello');
      yield words('Hello sync');
      return 'done';
    }
    const { chunks, result } = await drainAsync(driveStreamAsync(steps(), 'bot', false));
    expect(chunks.map(view)).toEqual([
      { content: 'He', sender: 'bot', streamState: AgentStatusCode.STREAM_ING, delta: 'He' },
      { content: 'Hello', sender: 'bot', streamState: AgentStatusCode.STREAM_ING, delta: 'llo' },
      { content: 'Hello sync', sender: 'bot', streamState: AgentStatusCode.STREAM_ING, delta: 'Hello sync' },
    ]);
    expect((received as AgentMessage).content).toBe('Hello');
    expect(result).toBe('done');
  });

  it('pulls an async stream one chunk at a time, as the consumer asks', async () => {
    const pulled: string[] = [];
    async function* stream(): AsyncGenerator<string, void, undefined> {
      for (const value of ['a', 'ab', 'abc']) {
        pulled.push(value);
        yield value;
      }
    }
    const driver = driveStreamAsync(relayOne(stream()), 'bot', false);
    expect(((await driver.next()).value as AgentMessage).content).toBe('a');
    expect(pulled).toEqual(['a']);
    expect(((await driver.next()).value as AgentMessage).content).toBe('ab');
    expect(pulled).toEqual(['a', 'ab']);
    await driver.return(undefined as never);
  });

  it('drives many consecutive promises and streams in order', async () => {
    function* steps(): Steps<number> {
      let total = 0;
      for (let index = 0; index < 30; index++) {
        total += (yield Promise.resolve(index)) as number;
        if (index % 10 === 0) yield wordsAsync(`at ${index}`);
      }
      return total;
    }
    const { chunks, result } = await drainAsync(driveStreamAsync(steps(), 'bot', false));
    expect(result).toBe(435);
    expect(chunks.map((chunk) => chunk.content)).toEqual(['at 0', 'at 10', 'at 20']);
  });

  it('relays a nested async streaming call and makes its final reply the result', async () => {
    function* inner(): Steps<AgentMessage> {
      yield wordsAsync('in');
      return new AgentMessage({ sender: 'inner', content: 'inner done' });
    }
    let innerReply: unknown;
    function* outer(): Steps<string> {
      innerReply = yield driveStreamAsync(inner(), 'inner', true);
      return 'outer done';
    }
    const { chunks, result } = await drainAsync(driveStreamAsync(outer(), 'outer', false));
    expect(chunks.map((chunk) => chunk.content)).toEqual(['in']);
    expect((innerReply as AgentMessage).content).toBe('inner done');
    expect(result).toBe('outer done');
  });

  it('throws an error of an async stream into the steps at the yield', async () => {
    const failure = new Error('stream broke');
    async function* stream(): AsyncGenerator<string, void, undefined> {
      yield 'partial';
      throw failure;
    }
    function* steps(): Steps<unknown> {
      try {
        return yield stream();
      } catch (error) {
        return error;
      }
    }
    const { chunks, result } = await drainAsync(driveStreamAsync(steps(), 'bot', false));
    expect(chunks.map((chunk) => chunk.content)).toEqual(['partial']);
    expect(result).toBe(failure);
  });

  it('lets an error the steps throw reach the consumer', async () => {
    const failure = new Error('steps failed');
    function* steps(): Steps<never> {
      yield Promise.resolve();
      throw failure;
    }
    await expect(drainAsync(driveStreamAsync(steps(), 'bot', false))).rejects.toBe(failure);
  });

  it('runs the steps’ and the async stream’s finally blocks when the consumer leaves early', async () => {
    const order: string[] = [];
    async function* stream(): AsyncGenerator<string, void, undefined> {
      try {
        yield 'a';
        yield 'ab';
        order.push('stream went on');
      } finally {
        await new Promise((resolve) => setTimeout(resolve, 5));
        order.push('stream finally');
      }
    }
    function* steps(): Steps<string> {
      try {
        yield stream();
        order.push('steps went on');
        return 'done';
      } finally {
        order.push('steps finally');
      }
    }
    for await (const chunk of driveStreamAsync(steps(), 'bot', true)) {
      if (chunk.content === 'a') break;
    }
    expect(order).toEqual(['stream finally', 'steps finally']);
  });
});
