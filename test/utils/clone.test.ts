import { describe, expect, it } from 'vitest';
import { deepClone } from '../../src/utils/clone';

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
