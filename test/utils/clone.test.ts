import { describe, expect, it } from 'vitest';
import { deepClone } from '#src/utils/clone';

describe('deepClone', () => {
  it('returns primitives as they are and copies nested arrays and objects', () => {
    expect(deepClone('x')).toBe('x');
    const value = { a: [1, { b: 2 }], c: null, d: new Date(5), m: new Map([[1, 2]]) };
    const copy = deepClone(value);
    expect(copy).toEqual(value);
    expect(copy.a).not.toBe(value.a);
    expect(copy.a[1]).not.toBe(value.a[1]);
    expect(copy.d).not.toBe(value.d);
    expect(copy.m).not.toBe(value.m);
  });

  it('keeps prototypes of class instances and preserves cycles', () => {
    class Point {
      constructor(
        public x: number,
        public y: number,
      ) {}
      norm() {
        return Math.hypot(this.x, this.y);
      }
    }
    const cyclic: { self?: unknown; p: Point } = { p: new Point(3, 4) };
    cyclic.self = cyclic;
    const copy = deepClone(cyclic);
    expect(copy.p).toBeInstanceOf(Point);
    expect(copy.p.norm()).toBe(5);
    expect(copy.p).not.toBe(cyclic.p);
    expect(copy.self).toBe(copy);
  });
});

describe('deepClone and "__proto__" keys', () => {
  const payload = () =>
    JSON.parse('{"a": 1, "__proto__": {"isAdmin": true}, "list": [{"__proto__": {"x": 1}}]}');

  it('keeps a "__proto__" key as an own data property, never as the prototype', () => {
    const copy = deepClone(payload());
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(copy.isAdmin).toBeUndefined();
    expect(Object.keys(copy)).toEqual(['a', '__proto__', 'list']);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual(
      JSON.parse('{"isAdmin": true}'),
    );
    expect(Object.getPrototypeOf(copy.list[0])).toBe(Object.prototype);
    expect(Object.keys(copy.list[0])).toEqual(['__proto__']);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(payload()));
  });

  it('does the same for class instances and null-prototype objects', () => {
    class Box {}
    const box = Object.defineProperty(new Box(), '__proto__', { value: 1, enumerable: true });
    const copy = deepClone(box);
    expect(copy).toBeInstanceOf(Box);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toBe(1);
    const bare = Object.create(null);
    Reflect.set(bare, '__proto__', { y: 1 }); // on a null-prototype object this makes an own key
    const bareCopy = deepClone(bare);
    expect(Object.getPrototypeOf(bareCopy)).toBeNull();
    expect(Object.keys(bareCopy)).toEqual(['__proto__']);
  });

  it('never throws: what cannot be read is kept as it is', () => {
    const trap = () => {
      throw new Error('trap');
    };
    const hostile = new Proxy({}, { getPrototypeOf: trap, ownKeys: trap, get: trap });
    const value = { ok: { n: 1 }, hostile };
    const copy = deepClone(value);
    expect(copy.ok).toEqual({ n: 1 });
    expect(copy.ok).not.toBe(value.ok);
    expect(copy.hostile).toBe(hostile);
  });
});
