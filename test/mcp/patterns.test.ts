// Server-supplied patterns run by RE2 with JavaScript's meaning.
import { beforeAll, describe, expect, it } from 'vitest';
import { compilePattern, loadRE2 } from '#src/mcp/patterns';

// re2js, an optional peer, is loaded with the MCP SDK; these tests use the parts directly.
beforeAll(() => loadRE2());

const test = (pattern: string, text: string) => compilePattern(pattern)?.test(text);

describe('compilePattern', () => {
  it('reads JavaScript escapes and classes as JavaScript does', () => {
    expect(test('^\\u00e9\\u{1F600}$', 'é😀')).toBe(true);
    expect(test('^\\cJ$', '\n')).toBe(true);
    expect(test('^\\s$', '\u00a0')).toBe(true);
    expect(test('^[\\s]$', '\u3000')).toBe(true);
    expect(test('^\\S$', '\u2028')).toBe(false);
    expect(test('^.$', '\r')).toBe(false);
    expect(test('^[.]$', 'x')).toBe(false);
    expect(test('^\\d{3}-\\w+$', '123-abc')).toBe(true);
    expect(test('b', 'abc')).toBe(true); // not anchored
  });

  it('has no RE2 form for lookaround, backreferences, [^] or what JavaScript rejects', () => {
    for (const pattern of ['(?=a)b', '(a)\\1', '[^]', '[]', 'a{1001}', '(', '\\u12']) {
      expect(compilePattern(pattern)).toBeUndefined();
    }
  });
});
