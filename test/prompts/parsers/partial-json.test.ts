import { PartialJSONParser } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

function pushAll(pieces: string[], parser = new PartialJSONParser()): unknown[] {
  return pieces.map((piece) => structuredClone(parser.push(piece)));
}

describe('PartialJSONParser', () => {
  it('shows members as they start, strings growing, arrays with the elements so far', () => {
    expect(pushAll(['{"city": "Pa', 'ris", "days": [1, ', '2', ', 3]', ', "ok": tr', 'ue}'])).toEqual([
      { city: 'Pa' },
      { city: 'Paris', days: [1] },
      { city: 'Paris', days: [1] },
      { city: 'Paris', days: [1, 2, 3] },
      { city: 'Paris', days: [1, 2, 3] },
      { city: 'Paris', days: [1, 2, 3], ok: true },
    ]);
  });

  it('shows a number or literal only once complete, never a prefix of it', () => {
    const parser = new PartialJSONParser();
    expect(parser.push('[12')).toEqual([]);
    expect(parser.push('3.5e')).toEqual([]);
    expect(parser.push('2, nu')).toEqual([123.5e2]);
    expect(parser.push('ll, -0')).toEqual([123.5e2, null]);
    expect(parser.push(']')).toEqual([123.5e2, null, -0]);
    expect(parser.done).toBe(true);
  });

  it('completes a top-level number at the end of the text', () => {
    const parser = new PartialJSONParser();
    parser.push('4');
    parser.push('2');
    expect(parser.value).toBeUndefined();
    expect(parser.end()).toBe(42);
    expect(parser.done).toBe(true);
  });

  it('holds an escape until it is whole', () => {
    expect(pushAll(['{"a": "x\\', 'n\\u00', 'e9\\uD83D', '\\uDE00y"}'])).toEqual([
      { a: 'x' },
      { a: 'x\n' },
      { a: 'x\né' },
      { a: 'x\né😀y' },
    ]);
  });

  it('skips prose and a ```json fence line, and ignores what follows the value', () => {
    const parser = new PartialJSONParser();
    expect(parser.push('Sure! Here it is:\n``')).toBeUndefined();
    expect(parser.push('`json\n{"a": [1, {"b": "c')).toEqual({ a: [1, { b: 'c' }] });
    expect(parser.push('"}]}\n```\nAnything {"x": 1}')).toEqual({ a: [1, { b: 'c' }] });
    expect(parser.done).toBe(true);
  });

  it('drops a brace in prose that is not JSON and reads the value after it', () => {
    const parser = new PartialJSONParser();
    expect(parser.push('Fill {name} in: ')).toBeUndefined();
    expect(parser.push('{"name": "Ada"}')).toEqual({ name: 'Ada' });
    const scalar = new PartialJSONParser();
    expect(scalar.push('null, then {"a": 1}')).toEqual({ a: 1 });
  });

  it('allows // comments and trailing commas as JSONParser does', () => {
    const parser = new PartialJSONParser();
    parser.push('{\n  // the city\n  "city": "Paris", // required\n  "tags": ["a", "b",],\n}');
    expect(parser.value).toEqual({ city: 'Paris', tags: ['a', 'b'] });
    expect(parser.done).toBe(true);
  });

  it('keeps a "__proto__" key as an own member, like JSON.parse', () => {
    const parser = new PartialJSONParser();
    const value = parser.push('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(value).toEqual(JSON.parse('{"__proto__": {"polluted": true}}'));
  });

  it('stops at the depth limit and keeps the value read so far', () => {
    const parser = new PartialJSONParser({ maxDepth: 3 });
    parser.push('{"a": [{"b": 1}, [[');
    expect(parser.error).toMatch(/deeper than 3/);
    expect(parser.value).toEqual({ a: [{ b: 1 }, []] });
    parser.push(']]]}');
    expect(parser.value).toEqual({ a: [{ b: 1 }, []] });
    expect(parser.done).toBe(false);
  });

  it('reads 100,000 levels of nesting without growing the call stack (under the limit it is given)', () => {
    const depth = 100_000;
    const parser = new PartialJSONParser({ maxDepth: depth });
    parser.push('['.repeat(depth));
    parser.push(']'.repeat(depth));
    expect(parser.done).toBe(true);
  });

  it('feed() reads only the new tail of cumulative text, and starts over when the text is not an extension', () => {
    const parser = new PartialJSONParser();
    parser.feed('{"a": "x', '{"a": "x');
    expect(parser.feed('{"a": "xy', 'y')).toEqual({ a: 'xy' });
    expect(parser.feed('{"a": "xyz')).toEqual({ a: 'xyz' }); // no delta: the tail after what was read
    expect(parser.feed('{"b"')).toEqual({}); // shorter: a new text
    expect(parser.feed('{"b": 1}', ': 1}')).toEqual({ b: 1 });
  });

  it('the value is live: one object, updated in place', () => {
    const parser = new PartialJSONParser();
    const first = parser.push('{"a": "x');
    const second = parser.push('y"}');
    expect(second).toBe(first);
    expect(first).toEqual({ a: 'xy' });
  });
});
