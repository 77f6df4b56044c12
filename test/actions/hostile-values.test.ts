import fc from 'fast-check';
import {
  ActionExecutor,
  ActionPreprocessor,
  ActionReturn,
  ActionStatusCode,
  AgentMessage,
  AsyncActionExecutor,
  asyncTool,
  HookError,
  MessageLogger,
  tool,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { propertyRuns } from '../helpers/property-runs';
import { resultOf } from '../helpers/tools';

const trap = () => {
  throw new Error('trap');
};

function hostileValues(): [string, unknown][] {
  const nullProto = Object.assign(Object.create(null), { code: 1 });
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const cyclicNull = Object.create(null);
  cyclicNull.me = cyclicNull;
  const badError = new Error('x');
  Object.defineProperty(badError, 'message', { get: trap });
  const revocable = Proxy.revocable({}, {});
  revocable.revoke();
  return [
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
    ['a null-prototype object', nullProto],
    ['a cycle', cyclic],
    ['a null-prototype cycle', cyclicNull],
    ['a throwing toString', { toString: trap, valueOf: trap, [Symbol.toPrimitive]: trap }],
    ['a throwing toJSON', { toJSON: trap }],
    ['a hostile Proxy', new Proxy({}, { get: trap, ownKeys: trap, getPrototypeOf: trap, has: trap })],
    ['a revoked Proxy', revocable.proxy],
    ['an Error whose message getter throws', badError],
    ['a BigInt', 10n ** 20n],
    ['a Map', new Map([['k', 1]])],
    ['a Set', new Set([1, 2])],
    ['a symbol', Symbol('s')],
    ['a frozen ActionReturn', Object.freeze(new ActionReturn({ result: [{ type: 'text', content: 'hi' }] }))],
  ];
}

function executors(value: () => unknown) {
  const thrower = tool({
    name: 'thrower',
    run: () => {
      throw value();
    },
  });
  const returner = tool({ name: 'returner', run: () => value() });
  const asyncThrower = asyncTool({
    name: 'asyncThrower',
    run: async () => {
      throw value();
    },
  });
  const asyncReturner = asyncTool({ name: 'asyncReturner', run: async () => value() });
  return {
    thrower,
    returner,
    asyncThrower,
    asyncReturner,
    sync: new ActionExecutor({ actions: [thrower, returner] }),
    async: new AsyncActionExecutor({ actions: [thrower, returner, asyncThrower, asyncReturner] }),
  };
}

function call(name: string): AgentMessage {
  return new AgentMessage({ sender: 'Agent', content: { name, parameters: {} } });
}

describe('executors never throw for what a tool throws or returns', () => {
  it.each(hostileValues())('a tool that throws %s gives API_ERROR with a sentence', async (_label, value) => {
    const { thrower, asyncThrower, sync, async } = executors(() => value);
    const results: ActionReturn[] = [
      thrower.call({}),
      sync.forward('thrower', {}),
      resultOf(sync.call(call('thrower'))),
      await asyncThrower.call({}),
      await async.forward('thrower', {}),
      await async.forward('asyncThrower', {}),
      resultOf(await async.call(call('asyncThrower'))),
    ];
    for (const result of results) {
      expect(result).toBeInstanceOf(ActionReturn);
      expect(result.state).toBe(ActionStatusCode.API_ERROR);
      expect(typeof result.errmsg).toBe('string');
      expect(result.errmsg!.length).toBeGreaterThan(3);
      expect(result.toText()).toBe(result.errmsg);
    }
  });

  it.each(hostileValues())('a tool that returns %s gives an ActionReturn', async (_label, value) => {
    const { returner, asyncReturner, sync, async } = executors(() => value);
    const results: ActionReturn[] = [
      returner.call({}),
      sync.forward('returner', {}),
      resultOf(sync.call(call('returner'))),
      await asyncReturner.call({}),
      await async.forward('asyncReturner', {}),
      resultOf(await async.call(call('asyncReturner'))),
    ];
    for (const result of results) {
      expect(result).toBeInstanceOf(ActionReturn);
      expect(typeof result.toText()).toBe('string');
      if (result.state !== ActionStatusCode.SUCCESS) expect(result.errmsg).toMatch(/\w{3}/);
    }
  });

  it('says what was thrown', () => {
    for (const [value, expected] of [
      [null, 'the tool thrower threw null'],
      [undefined, 'the tool thrower threw undefined'],
      [7, 'the tool thrower threw the number 7'],
      [{ code: 1 }, 'the tool thrower threw an object: {"code":1}'],
      [Object.create(null), 'the tool thrower threw an object: {}'],
    ] as const) {
      const { sync } = executors(() => value);
      expect(sync.forward('thrower', {}).errmsg).toBe(expected);
    }
    const badError = new TypeError('x');
    Object.defineProperty(badError, 'message', { get: trap });
    expect(executors(() => badError).sync.forward('thrower', {}).errmsg).toBe(
      'the tool thrower threw a TypeError whose message cannot be read',
    );
  });

  it('renders BigInt, Map, Set and cyclic results as text', () => {
    const cyclic: Record<string, unknown> = { n: 1n };
    cyclic.self = cyclic;
    const cases: [unknown, string][] = [
      [10n ** 20n, '100000000000000000000'],
      [new Map([['k', 1]]), '{"k":1}'],
      [new Set([1, 2]), '[1,2]'],
      [cyclic, '{"n":1,"self":"[Circular]"}'],
    ];
    for (const [value, text] of cases) {
      const result = executors(() => value).sync.forward('returner', {});
      expect(result.state).toBe(ActionStatusCode.SUCCESS);
      expect(result.formatResult()).toBe(text);
    }
  });

  it('completes a frozen ActionReturn on a copy instead of assigning to it', async () => {
    const frozen = Object.freeze(
      new ActionReturn({ result: [{ type: 'text', content: 'hi' }], state: ActionStatusCode.SUCCESS }),
    );
    const { sync, async } = executors(() => frozen);
    for (const result of [sync.forward('returner', {}), await async.forward('asyncReturner', {})]) {
      expect(result.formatResult()).toBe('hi');
      expect(result.args).toEqual({});
      expect(result.type).toMatch(/returner/i);
      expect(Object.isFrozen(result)).toBe(false);
    }
    expect(frozen.args).toBeNull();
  });

  it('never throws for unusual tool names', async () => {
    const { sync, async } = executors(() => 1);
    for (const name of [Object.create(null), { toString: trap }, Symbol('x'), 5, null] as unknown[]) {
      expect(sync.forward(name as string, {})).toBeInstanceOf(ActionReturn);
      expect(await async.forward(name as string, {})).toBeInstanceOf(ActionReturn);
    }
  });

  it('never throws for hostile arguments', async () => {
    const { sync, async } = executors(() => 1);
    for (const [label, parameters] of hostileValues()) {
      const results = [
        sync.forward('returner', parameters),
        await async.forward('asyncReturner', parameters),
      ];
      for (const result of results) {
        expect(result, label).toBeInstanceOf(ActionReturn);
        if (result.state !== ActionStatusCode.SUCCESS)
          expect(result.errmsg).toMatch(/^Invalid arguments for/);
      }
    }
  });

  it('hooks that throw such values become HookErrors with a readable message', async () => {
    for (const [label, value] of hostileValues()) {
      const hook = {
        hookName: 'Bad',
        beforeAction: () => {
          throw value;
        },
      };
      const sync = new ActionExecutor({ actions: [], hooks: [hook as never] });
      const async = new AsyncActionExecutor({ actions: [], hooks: [hook as never] });
      let error: unknown;
      try {
        sync.call(call('x'));
      } catch (thrown) {
        error = thrown;
      }
      expect(error, label).toBeInstanceOf(HookError);
      expect((error as HookError).message).toMatch(/^hook Bad\.beforeAction failed: ./);
      await expect(async.call(call('x'))).rejects.toBeInstanceOf(HookError);
    }
  });
});

// Hostile values are picked inside the property by index: fast-check itself cannot inspect them.
const HOSTILE = hostileValues().map(([, value]) => value);
const anyValue = fc.oneof(
  fc.record({
    value: fc.anything({
      withBigInt: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withDate: true,
    }),
  }),
  fc.record({ hostile: fc.nat(HOSTILE.length - 1) }),
);
type AnyValue = { value: unknown } | { hostile: number };
const pick = (drawn: AnyValue): unknown => ('hostile' in drawn ? HOSTILE[drawn.hostile] : drawn.value);

describe('executor properties over arbitrary thrown and returned values', () => {
  it('sync: zero throws in 10,000 runs (1,000 in the unit project)', () => {
    let current: { throws: boolean; value: unknown } = { throws: false, value: undefined };
    const chaos = tool({
      name: 'chaos',
      run: () => {
        if (current.throws) throw current.value;
        return current.value;
      },
    });
    const executor = new ActionExecutor({ actions: [chaos] });
    const logged: string[] = [];
    const withHooks = new ActionExecutor({
      actions: [chaos],
      hooks: [
        new ActionPreprocessor(),
        new MessageLogger({ stream: { write: (chunk) => logged.push(chunk) } }),
      ],
    });
    const formatted = new AgentMessage({
      sender: 'Agent',
      content: 'text',
      formatted: { name: 'chaos', parameters: {} },
    });
    fc.assert(
      fc.property(fc.boolean(), anyValue, (throws, drawn) => {
        current = { throws, value: pick(drawn) };
        const results = [
          chaos.call({}),
          executor.forward('chaos', {}),
          executor.call(call('chaos')).content as ActionReturn,
        ];
        expect(typeof withHooks.call(formatted).content).toBe('string');
        for (const result of results) {
          expect(result).toBeInstanceOf(ActionReturn);
          expect(typeof result.toText()).toBe('string');
          if (throws) expect(result.state).toBe(ActionStatusCode.API_ERROR);
        }
      }),
      { numRuns: propertyRuns(10_000) },
    );
  });

  it('async: zero rejections in 10,000 runs (1,000 in the unit project)', async () => {
    let current: { throws: boolean; value: unknown } = { throws: false, value: undefined };
    const chaos = asyncTool({
      name: 'chaos',
      run: async () => {
        if (current.throws) throw current.value;
        return current.value;
      },
    });
    const syncChaos = tool({
      name: 'syncChaos',
      run: () => {
        if (current.throws) throw current.value;
        return current.value;
      },
    });
    const executor = new AsyncActionExecutor({ actions: [chaos, syncChaos] });
    await fc.assert(
      fc.asyncProperty(fc.boolean(), anyValue, async (throws, drawn) => {
        current = { throws, value: pick(drawn) };
        const results = [
          await chaos.call({}),
          await executor.forward('chaos', {}),
          await executor.forward('syncChaos', {}),
          (await executor.call(call('chaos'))).content as ActionReturn,
        ];
        for (const result of results) {
          expect(result).toBeInstanceOf(ActionReturn);
          expect(typeof result.toText()).toBe('string');
          if (throws) expect(result.state).toBe(ActionStatusCode.API_ERROR);
        }
      }),
      { numRuns: propertyRuns(10_000) },
    );
  });
});
