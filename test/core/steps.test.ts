import { ConfigurationError, type Steps } from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { driveAsync, driveSync, PromiseInSyncCall } from '#src/core/steps';

function* stream(): Generator<string, void, undefined> {
  yield 'a';
}

/** Steps that end without ever needing their driver. */
// biome-ignore lint/correctness/useYield: steps that return at once
function* returning<T>(value: T): Steps<T> {
  return value;
}

/** Steps that fail before their first yield. */
// biome-ignore lint/correctness/useYield: steps that throw at once
function* failing(error: Error): Steps<never> {
  throw error;
}

/** Collects the unhandled rejections raised while `run` and a few turns after it run. */
async function unhandledRejections(run: () => void): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    run();
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

describe('driveSync', () => {
  it('returns what the steps return', () => {
    expect(driveSync(returning(42))).toBe(42);
  });

  it('throws PromiseInSyncCall into the steps at the yield, where they can catch it', () => {
    const caught: unknown[] = [];
    function* steps(): Steps<string> {
      try {
        yield Promise.resolve('never awaited');
        return 'resumed';
      } catch (error) {
        caught.push(error);
        return 'handled';
      }
    }
    expect(driveSync(steps())).toBe('handled');
    expect(caught).toHaveLength(1);
    expect(caught[0]).toBeInstanceOf(PromiseInSyncCall);
    expect(caught[0]).toBeInstanceOf(ConfigurationError);
    expect((caught[0] as Error).message).toMatch(/Promise inside a synchronous call.*Async variant/);
  });

  it('lets a PromiseInSyncCall the steps do not catch reach the caller', () => {
    let finallyRan = false;
    function* steps(): Steps<string> {
      try {
        yield Promise.resolve(1);
        return 'resumed';
      } finally {
        finallyRan = true;
      }
    }
    expect(() => driveSync(steps())).toThrow(PromiseInSyncCall);
    expect(finallyRan).toBe(true);
  });

  it('treats any thenable as a promise', () => {
    // biome-ignore lint/suspicious/noThenProperty: a foreign thenable is what this test is about
    const thenable = { then: (resolve: (value: number) => void) => resolve(1) };
    function* steps(): Steps<string> {
      try {
        yield thenable;
        return 'resumed';
      } catch (error) {
        return (error as Error).name;
      }
    }
    expect(driveSync(steps())).toBe('PromiseInSyncCall');
  });

  it('silences the rejection of a promise it refuses', async () => {
    const rejections = await unhandledRejections(() => {
      function* steps(): Steps<string> {
        try {
          yield Promise.reject(new Error('async failure nobody awaits'));
          return 'resumed';
        } catch {
          return 'handled';
        }
      }
      expect(driveSync(steps())).toBe('handled');
    });
    expect(rejections).toEqual([]);
  });

  it('refuses a stream with a ConfigurationError (not PromiseInSyncCall) thrown into the steps', () => {
    let caught: unknown;
    function* steps(): Steps<string> {
      try {
        yield stream();
        return 'relayed';
      } catch (error) {
        caught = error;
        return 'refused';
      }
    }
    expect(driveSync(steps())).toBe('refused');
    expect(caught).toBeInstanceOf(ConfigurationError);
    expect(caught).not.toBeInstanceOf(PromiseInSyncCall);
    expect((caught as Error).message).toMatch(/stream inside a non-streaming agent/);
  });

  it('keeps driving after the steps caught a refusal', () => {
    const refusals: string[] = [];
    function* steps(): Steps<number> {
      for (const value of [Promise.resolve(1), stream(), Promise.resolve(2)]) {
        try {
          yield value;
        } catch (error) {
          refusals.push((error as Error).name);
        }
      }
      return refusals.length;
    }
    expect(driveSync(steps())).toBe(3);
    expect(refusals).toEqual(['PromiseInSyncCall', 'ConfigurationError', 'PromiseInSyncCall']);
  });

  it('lets an error thrown by the steps reach the caller unchanged', () => {
    const failure = new RangeError('boom');
    expect(() => driveSync(failing(failure))).toThrow(failure);
  });

  it('drives nested steps composed with yield*', () => {
    const order: string[] = [];
    function* inner(label: string): Steps<string> {
      order.push(`${label} start`);
      try {
        yield Promise.resolve(label);
      } catch (error) {
        order.push(`${label} caught ${(error as Error).name}`);
      }
      return label.toUpperCase();
    }
    function* outer(): Steps<string> {
      const a = yield* inner('a');
      const b = yield* inner('b');
      return a + b;
    }
    expect(driveSync(outer())).toBe('AB');
    expect(order).toEqual(['a start', 'a caught PromiseInSyncCall', 'b start', 'b caught PromiseInSyncCall']);
  });
});

describe('driveAsync', () => {
  it('resolves to what the steps return when they never yield', async () => {
    const result = driveAsync(returning('plain'));
    expect(result).toBeInstanceOf(Promise);
    await expect(result).resolves.toBe('plain');
  });

  it('sends a yielded promise’s value back into the steps', async () => {
    function* steps(): Steps<number> {
      const value = (yield Promise.resolve(20)) as number;
      return value + 1;
    }
    await expect(driveAsync(steps())).resolves.toBe(21);
  });

  it('throws a rejection into the steps at the yield, where they can catch it', async () => {
    const failure = new Error('model down');
    let caught: unknown;
    function* steps(): Steps<string> {
      try {
        yield Promise.reject(failure);
        return 'resumed';
      } catch (error) {
        caught = error;
        return 'recovered';
      }
    }
    await expect(driveAsync(steps())).resolves.toBe('recovered');
    expect(caught).toBe(failure);
  });

  it('rejects with a rejection the steps do not catch, after their finally ran', async () => {
    const failure = new Error('model down');
    let finallyRan = false;
    function* steps(): Steps<string> {
      try {
        yield Promise.reject(failure);
        return 'resumed';
      } finally {
        finallyRan = true;
      }
    }
    await expect(driveAsync(steps())).rejects.toBe(failure);
    expect(finallyRan).toBe(true);
  });

  it('rejects (never throws synchronously) when the steps fail before their first promise', async () => {
    const failure = new TypeError('bad input');
    let result: Promise<never> | undefined;
    expect(() => {
      result = driveAsync(failing(failure));
    }).not.toThrow();
    await expect(result).rejects.toBe(failure);
  });

  it('rejects with an error the steps throw after a promise', async () => {
    const failure = new Error('after the await');
    function* steps(): Steps<never> {
      yield Promise.resolve();
      throw failure;
    }
    await expect(driveAsync(steps())).rejects.toBe(failure);
  });

  it('refuses a stream, before and after the first promise, as a ConfigurationError thrown into the steps', async () => {
    const caught: unknown[] = [];
    function* steps(): Steps<string> {
      for (const value of [
        stream(),
        Promise.resolve('first'),
        stream(),
        Promise.resolve('second'),
        stream(),
      ]) {
        try {
          yield value;
        } catch (error) {
          caught.push(error);
        }
      }
      return 'done';
    }
    await expect(driveAsync(steps())).resolves.toBe('done');
    expect(caught).toHaveLength(3);
    for (const error of caught) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(/stream inside a non-streaming agent/);
    }
  });

  it('rejects when a refused stream is not caught', async () => {
    function* steps(): Steps<string> {
      yield stream();
      return 'relayed';
    }
    await expect(driveAsync(steps())).rejects.toThrow(/stream inside a non-streaming agent/);
  });

  it('drives many consecutive promises in order, with rejections thrown in where they were yielded', async () => {
    const seen: unknown[] = [];
    function* steps(): Steps<number> {
      let total = 0;
      for (let index = 0; index < 50; index++) {
        try {
          const value = (yield index % 7 === 3
            ? Promise.reject(new Error(`failed ${index}`))
            : new Promise((resolve) => setTimeout(() => resolve(index), index % 3))) as number;
          seen.push(value);
          total += value;
        } catch (error) {
          seen.push((error as Error).message);
        }
      }
      return total;
    }
    const expected: unknown[] = [];
    let total = 0;
    for (let index = 0; index < 50; index++) {
      if (index % 7 === 3) expected.push(`failed ${index}`);
      else {
        expected.push(index);
        total += index;
      }
    }
    await expect(driveAsync(steps())).resolves.toBe(total);
    expect(seen).toEqual(expected);
  });

  it('rejects with an uncaught rejection met in the loop after the first promise', async () => {
    const failure = new Error('third call failed');
    const reached: number[] = [];
    function* steps(): Steps<string> {
      reached.push((yield Promise.resolve(1)) as number);
      reached.push((yield Promise.resolve(2)) as number);
      yield Promise.reject(failure);
      reached.push(3);
      return 'finished';
    }
    await expect(driveAsync(steps())).rejects.toBe(failure);
    expect(reached).toEqual([1, 2]);
  });

  it('drives nested steps composed with yield*, awaiting each promise', async () => {
    function* fetchValue(value: number): Steps<number> {
      return ((yield new Promise((resolve) => setTimeout(() => resolve(value), 1))) as number) * 10;
    }
    function* outer(): Steps<number[]> {
      const results: number[] = [];
      for (let index = 1; index <= 3; index++) results.push(yield* fetchValue(index));
      return results;
    }
    await expect(driveAsync(outer())).resolves.toEqual([10, 20, 30]);
  });

  it('continues steps whose first step the caller already took', async () => {
    const order: string[] = [];
    function* steps(label: string): Steps<string> {
      order.push(`${label} started`);
      const value = (yield Promise.resolve(label)) as string;
      order.push(`${label} resumed`);
      return value.repeat(2);
    }
    const a = steps('a');
    const b = steps('b');
    const firstA = a.next();
    const firstB = b.next();
    expect(order).toEqual(['a started', 'b started']);
    const results = await Promise.all([driveAsync(a, firstA), driveAsync(b, firstB)]);
    expect(results).toEqual(['aa', 'bb']);
    expect(order).toEqual(['a started', 'b started', 'a resumed', 'b resumed']);
  });

  it('resolves a started step that is already done to its value', async () => {
    const generator = returning('finished on the first step');
    await expect(driveAsync(generator, generator.next())).resolves.toBe('finished on the first step');
  });
});
