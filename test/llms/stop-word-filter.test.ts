import fc from 'fast-check';
import { cutAtStopWords, StopWordFilter } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

function run(chunks: string[], stopWords: string[]): { released: string[]; filter: StopWordFilter } {
  const filter = new StopWordFilter(stopWords);
  const released: string[] = [];
  for (const chunk of chunks) {
    released.push(filter.push(chunk));
    if (filter.stopped) break;
  }
  released.push(filter.flush());
  return { released, filter };
}

describe('StopWordFilter', () => {
  it('holds back a possible stop-word prefix until it is resolved', () => {
    const filter = new StopWordFilter(['<|im_end|>']);
    expect(filter.push('Hello <|im')).toBe('Hello ');
    expect(filter.push('_end|> after')).toBe('');
    expect(filter.stopped).toBe(true);
    expect(filter.text).toBe('Hello ');
    expect(filter.push('more')).toBe('');
  });

  it('releases a held prefix that turned out to be text', () => {
    const filter = new StopWordFilter(['STOP']);
    expect(filter.push('a ST')).toBe('a ');
    expect(filter.push('ART')).toBe('START');
    expect(filter.push('S')).toBe('');
    expect(filter.flush()).toBe('S');
    expect(filter.text).toBe('a STARTS');
  });

  it('cuts at the earliest of several stop words', () => {
    expect(run(['x Obs', 'ervation: y <end>'], ['<end>', 'Observation:']).filter.text).toBe('x ');
  });

  it('a stop word that started earlier wins over one matched first (<>>b before >)', () => {
    const { released, filter } = run(['<', '>', '>b'], ['>', '<>>b']);
    expect(released.join('')).toBe('');
    expect(filter.text).toBe('');
    expect(run(['a<', '>', 'c'], ['>', '<>>b']).filter.text).toBe('a<');
  });

  it('matches cutAtStopWords for any chunking', () => {
    const alphabet = fc.constantFrom('a', 'b', '<', '|', 'e', '>', ' ');
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: alphabet, maxLength: 6 }), { maxLength: 12 }),
        fc.array(fc.string({ unit: alphabet, minLength: 1, maxLength: 4 }), { maxLength: 3 }),
        (chunks, stopWords) => {
          const { released, filter } = run(chunks, stopWords);
          const expected = cutAtStopWords(chunks.join(''), stopWords);
          expect(released.join('')).toBe(expected);
          expect(filter.text).toBe(expected);
        },
      ),
    );
  });
});
