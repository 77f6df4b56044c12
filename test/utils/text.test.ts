import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonText, kindOf, pythonJSON, pythonNumber, thrownText, toText } from '#src/utils/text';
import { propertyRuns } from '../helpers/property-runs';
import { PYTHON_CASES } from './python-json-cases';

describe('pythonJSON', () => {
  it.each(PYTHON_CASES)('renders %s as Python json.dumps does', (input, expected) => {
    expect(pythonJSON(JSON.parse(input))).toBe(expected);
  });

  it('renders integral floats as integers (JSON.parse cannot keep 1.0)', () => {
    // Python prints [1.0, 1e+16] for '[1.0, 1e16]'; after JSON.parse they are the integers 1 and 10^16.
    expect(pythonJSON(JSON.parse('[1.0, 1e16]'))).toBe('[1, 10000000000000000]');
    expect(pythonNumber(-0)).toBe('0');
    expect(pythonNumber(Number.NaN)).toBe('NaN');
    expect(pythonNumber(Number.NEGATIVE_INFINITY)).toBe('-Infinity');
  });
});

describe('toText', () => {
  it('keeps strings and renders other values', () => {
    expect(toText('a "b" é')).toBe('a "b" é');
    expect(toText(undefined)).toBe('');
    expect(toText(null)).toBe('null');
    expect(toText(12)).toBe('12');
    expect(toText(10n ** 30n)).toBe('1000000000000000000000000000000');
    expect(toText({ a: [1, 'x'] })).toBe('{"a":[1,"x"]}');
    expect(toText({ a: [1, 'x'] }, { json: 'python' })).toBe('{"a": [1, "x"]}');
    expect(toText({ a: [1] }, { json: 'pretty' })).toBe(JSON.stringify({ a: [1] }, null, 2));
    expect(toText(new Error('boom'))).toBe('boom');
    expect(toText(Symbol('s'))).toBe('Symbol(s)');
    expect(toText(function named() {})).toBe('[function named]');
  });

  it('renders what JSON.stringify cannot', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(toText(cyclic)).toBe('{"a":1,"self":"[Circular]"}');
    const shared = { x: 1 };
    expect(toText([shared, shared])).toBe('[{"x":1},{"x":1}]');
    expect(toText({ n: 10n })).toBe('{"n":10}');
    expect(
      toText(
        new Map<unknown, unknown>([
          ['k', 1],
          [2, new Set(['v'])],
        ]),
      ),
    ).toBe('{"k":1,"2":["v"]}');
    expect(toText({ toJSON: () => ({ replaced: true }) })).toBe('{"replaced":true}');
    expect(
      toText({
        a: 1,
        toJSON() {
          throw new Error('no');
        },
      }),
    ).toBe('{"a":1}');
    expect(toText({ e: new TypeError('bad') })).toBe('{"e":"TypeError: bad"}');
    const nullProto = Object.assign(Object.create(null), { k: 'v' });
    expect(toText(nullProto)).toBe('{"k":"v"}');
    const cyclicNull = Object.create(null);
    cyclicNull.me = cyclicNull;
    expect(toText(cyclicNull)).toBe('{"me":"[Circular]"}');
    expect(toText(new Uint8Array([1, 2]))).toBe('[1,2]');
  });

  it('never throws on hostile values', () => {
    const trap = () => {
      throw new Error('trap');
    };
    const hostile = new Proxy({}, { get: trap, ownKeys: trap, getPrototypeOf: trap, has: trap });
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const getter = Object.defineProperty({ ok: 1 }, 'bad', { enumerable: true, get: trap });
    const badError = new Error('x');
    Object.defineProperty(badError, 'message', { get: trap });
    const badString = {
      toString: trap,
      valueOf: trap,
      [Symbol.toPrimitive]: trap,
    };
    expect(toText(hostile)).toBe('"[unreadable]"');
    expect(toText(revocable.proxy)).toBe('"[unreadable]"');
    expect(toText(getter)).toBe('{"ok":1,"bad":"[unreadable]"}');
    expect(toText(badError)).toBe('Error');
    expect(toText(badString)).toBe('{}');
    expect(toText({ deep: hostile })).toBe('{"deep":"[unreadable]"}');
    fc.assert(
      fc.property(
        fc.anything({ withBigInt: true, withMap: true, withSet: true, withNullPrototype: true }),
        (value) => {
          for (const style of ['compact', 'python', 'pretty'] as const) {
            expect(typeof toText(value, { json: style })).toBe('string');
          }
          expect(typeof thrownText(value)).toBe('string');
        },
      ),
      { numRuns: propertyRuns(1000) },
    );
  });

  it('matches JSON.stringify on JSON values in compact and pretty styles', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(jsonText(value)).toBe(JSON.stringify(value));
        expect(jsonText(value, 'pretty')).toBe(JSON.stringify(value, null, 2));
      }),
      { numRuns: propertyRuns(500) },
    );
  });
});

describe('thrownText', () => {
  it('says what was thrown', () => {
    expect(thrownText(new Error('disk full'))).toBe('disk full');
    expect(thrownText('plain words')).toBe('plain words');
    expect(thrownText(null)).toBe('the tool threw null');
    expect(thrownText(undefined)).toBe('the tool threw undefined');
    expect(thrownText(42)).toBe('the tool threw the number 42');
    expect(thrownText(false)).toBe('the tool threw the boolean false');
    expect(thrownText('')).toBe('the tool threw an empty string');
    expect(thrownText({ code: 7 })).toBe('the tool threw an object: {"code":7}');
    expect(thrownText([1])).toBe('the tool threw an array: [1]');
    expect(thrownText(new Map([['a', 1]]))).toBe('the tool threw a Map: {"a":1}');
    expect(thrownText(Object.create(null))).toBe('the tool threw an object: {}');
    expect(thrownText(new Error(''))).toBe('the tool threw an Error without a message');
    expect(thrownText(null, 'it')).toBe('it threw null');
  });

  it('copes with errors and objects that cannot be read', () => {
    const badError = new RangeError('x');
    Object.defineProperty(badError, 'message', {
      get() {
        throw new Error('no');
      },
    });
    expect(thrownText(badError)).toBe('the tool threw a RangeError whose message cannot be read');
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    expect(thrownText(revocable.proxy)).toBe('the tool threw an object that cannot be read');
    expect(kindOf(revocable.proxy)).toBe('an object that cannot be inspected');
    expect(kindOf(new Date(0))).toBe('a Date');
  });
});
