import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReplyPrinter } from '#src/cli/reply-printer';
import { terminalText } from '#src/cli/terminal-text';
import { comparedCharacters } from '../helpers/compared-text';

/** How `lagent chat` prints a streamed reply: what cleaning the whole text gives, in time linear in its length. */

/** Streams `text` in the pieces `cuts` makes, as cumulative chunks with deltas; returns what was printed. */
function stream(text: string, cuts: number[]): string {
  let out = '';
  const printer = new ReplyPrinter((piece) => {
    out += piece;
  });
  const render = (content: unknown) => terminalText(String(content));
  let start = 0;
  for (const end of [...new Set(cuts)].sort((a, b) => a - b).concat(text.length)) {
    if (end <= start) continue;
    printer.show(text.slice(0, end), text.slice(start, end), render);
    start = end;
  }
  // The final reply, as the stream driver gives it: its delta against the last chunk.
  printer.show(text, '', render);
  return out;
}

const PIECES = [
  'a',
  'hello ',
  '\n',
  '\t',
  '\x1b',
  '[',
  '31m',
  '\x1b[0m',
  '\x1b]0;title',
  '\x07',
  '\x1b\\',
  '\x9b',
  '2J',
  '\x9d',
  '\x9c',
  '\r',
  '\x08',
  'é',
  ']',
  'P',
];

describe('ReplyPrinter', () => {
  it('prints what cleaning the whole reply gives, however the chunks cut its escape sequences', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...PIECES), { maxLength: 40 }).map((parts) => parts.join('')),
        fc.array(fc.nat(200)),
        (text, cuts) => {
          expect(stream(text, cuts)).toBe(terminalText(text));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('prints a 20,000-character reply in 4-character chunks from the deltas, comparing no chunk with the last', async () => {
    const text = 'abcdefghij'.repeat(2_000);
    const cuts = Array.from({ length: text.length / 4 }, (_, i) => i * 4);
    let out = '';
    const compared = await comparedCharacters(() => {
      out = stream(text, cuts);
    });
    expect(out).toBe(text);
    expect(compared).toBeLessThanOrEqual(2 * text.length);
  });

  it('prints the whole text again, on a new line, when a chunk rewrites what was printed', () => {
    let out = '';
    const printer = new ReplyPrinter((piece) => {
      out += piece;
    });
    const render = (content: unknown) => terminalText(String(content));
    printer.show('Hello', 'Hello', render);
    printer.show('Help', 'Help', render);
    printer.show('Help me', ' me', render);
    expect(out).toBe('Hello\nHelp me');
  });
});
