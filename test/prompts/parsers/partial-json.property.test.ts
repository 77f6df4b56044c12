import fc from 'fast-check';
import { PartialJSONParser } from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { propertyRuns } from '../../helpers/property-runs';

/** Whether `partial` is a deep-partial of `final`: what it has is there, strings and arrays as prefixes. */
function isPrefixOf(partial: unknown, final: unknown): boolean {
  if (partial === undefined) return true;
  if (typeof partial === 'string') return typeof final === 'string' && final.startsWith(partial);
  if (Array.isArray(partial)) {
    if (!Array.isArray(final) || partial.length > final.length) return false;
    // Every element but the last is complete.
    return partial.every((item, index) =>
      index < partial.length - 1
        ? Object.is(JSON.stringify(item), JSON.stringify(final[index]))
        : isPrefixOf(item, final[index]),
    );
  }
  if (partial !== null && typeof partial === 'object') {
    if (final === null || typeof final !== 'object' || Array.isArray(final)) return false;
    return Object.keys(partial).every(
      (key) =>
        Object.hasOwn(final, key) &&
        isPrefixOf((partial as Record<string, unknown>)[key], (final as Record<string, unknown>)[key]),
    );
  }
  return Object.is(partial, final);
}

/** Splits `text` at the given cut points (sorted, deduplicated). */
function split(text: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let start = 0;
  for (const point of points) {
    pieces.push(text.slice(start, point));
    start = point;
  }
  pieces.push(text.slice(start));
  return pieces;
}

/** JSON values whose keys avoid duplicates after parsing (JSON.stringify never writes duplicates). */
const jsonValue = fc.jsonValue({ maxDepth: 4 });
const cuts = fc.array(fc.nat(), { maxLength: 40 });

describe('PartialJSONParser, for any JSON value and any chunking', () => {
  it('ends with the value JSON.parse reads, every partial a prefix of it and of the next partial', () => {
    fc.assert(
      fc.property(jsonValue, fc.boolean(), cuts, (value, pretty, points) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const expected = JSON.parse(text) as unknown;
        const parser = new PartialJSONParser();
        let previous: unknown;
        for (const piece of split(text, points)) {
          const partial = structuredClone(parser.push(piece));
          expect(isPrefixOf(partial, expected)).toBe(true);
          expect(isPrefixOf(previous, partial)).toBe(true);
          previous = partial;
        }
        expect(parser.end()).toEqual(expected);
        expect(parser.done).toBe(true);
      }),
      { numRuns: propertyRuns(400) },
    );
  });

  it('reads the same inside a ```json fence after prose, with any chunking', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })),
          fc.array(fc.jsonValue({ maxDepth: 3 })),
        ),
        cuts,
        (value, points) => {
          const json = JSON.stringify(value, null, 2);
          // What the text says (JSON has no -0: the value's -0 is read as 0).
          const expected = JSON.parse(json) as unknown;
          const text = `Here is the answer:\n\`\`\`json\n${json}\n\`\`\`\nDone.`;
          const parser = new PartialJSONParser();
          for (const piece of split(text, points)) {
            expect(isPrefixOf(structuredClone(parser.push(piece)), expected)).toBe(true);
          }
          expect(parser.end()).toEqual(expected);
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });

  it('decodes escapes and surrogate pairs split anywhere', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), cuts, (value, points) => {
        // Every character escaped as \uXXXX, so cuts fall inside escapes and between surrogate halves.
        const escaped = [...value]
          .map((char) =>
            [...char]
              .flatMap((point) =>
                point.length === 2 ? [point.charCodeAt(0), point.charCodeAt(1)] : [point.charCodeAt(0)],
              )
              .map((code) => `\\u${code.toString(16).padStart(4, '0')}`)
              .join(''),
          )
          .join('');
        const text = `{"s": "${escaped}"}`;
        const parser = new PartialJSONParser<{ s: string }>();
        for (const piece of split(text, points)) {
          const partial = parser.push(piece)?.s ?? '';
          expect(value.startsWith(partial)).toBe(true);
          // A high surrogate is shown only with its low half.
          const last = partial.charCodeAt(partial.length - 1);
          expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
        }
        expect(parser.value).toEqual({ s: value });
      }),
      { numRuns: propertyRuns(200) },
    );
  });
});
