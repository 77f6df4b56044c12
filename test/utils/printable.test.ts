import { describe, expect, it } from 'vitest';
import { printable } from '#src/utils/printable';

describe('printable', () => {
  it('leaves ordinary text as it is, the same string', () => {
    const text = 'session 42: café, 漢字, emoji 🙂';
    expect(printable(text)).toBe(text);
  });

  it('escapes what a terminal would act on: C0 (newlines too), DEL, C1, separators, bidi controls', () => {
    expect(printable('a\x1b[2Jb')).toBe('a\\x1b[2Jb');
    expect(printable('one\ntwo\r\tthree')).toBe('one\\ntwo\\r\\tthree');
    expect(printable('\x00\x07\x7f\x9b31m')).toBe('\\x00\\x07\\x7f\\x9b31m');
    expect(printable('x\u2028y\u202ez\u2066')).toBe('x\\u2028y\\u202ez\\u2066');
  });

  it('doubles backslashes, so every escape in the output is its own', () => {
    expect(printable('\\x1b')).toBe('\\\\x1b');
    expect(printable('a\\\x1b')).toBe('a\\\\\\x1b');
  });

  it('gives the same answer called twice on one text (the pattern keeps no state between calls)', () => {
    expect(printable('\x1b')).toBe('\\x1b');
    expect(printable('\x1b')).toBe('\\x1b');
  });
});
