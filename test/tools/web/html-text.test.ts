import { ConfigurationError } from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { ExtractorPool, resolvePeers } from '#src/tools/web/extract/pool';
import { htmlToText, tidy } from '#src/tools/web/html-text';

describe('htmlToText', () => {
  it('keeps the article of a page, one line per block, without scripts, styles or navigation', async () => {
    const paragraphs = Array.from(
      { length: 4 },
      (_, n) =>
        `<p>Paragraph ${n} says something long enough to count as content for a reader view, really.</p>`,
    ).join('');
    const page = await htmlToText(
      `<html><head><title>News</title><script>var leak = 1</script></head><body><nav>Menu Home</nav>
       <article><h1>Headline</h1>${paragraphs}</article><footer>Footer text</footer></body></html>`,
    );
    expect(page.title).toBe('News');
    const lines = page.text.split('\n');
    expect(lines.filter((line) => line.startsWith('Paragraph '))).toHaveLength(4);
    expect(page.text).not.toMatch(/leak|Menu Home|Footer text|<p>/);
  });

  it('falls back to the page text when there is no article', async () => {
    const page = await htmlToText(
      '<html><head><title>T</title><style>p{}</style></head><body><header>Top</header><div>A short <b>note</b> &amp; more</div><script>x()</script></body></html>',
    );
    expect(page).toEqual({ title: 'T', text: 'A short note & more' });
  });

  it('tidies whitespace and drops blank lines', () => {
    expect(tidy('  a \t b \n\n\n c\u00a0 d \n')).toBe('a b\nc d');
  });
});

describe('a missing optional peer', () => {
  it('is a ConfigurationError saying what to install, when it cannot be found', () => {
    expect(() => resolvePeers('/nowhere/lagent-ts/index.js')).toThrow(ConfigurationError);
    expect(() => resolvePeers('/nowhere/lagent-ts/index.js')).toThrow(
      'install @mozilla/readability and linkedom to use WebBrowser.select',
    );
  });

  it('is a ConfigurationError when it is found but does not load in the worker', async () => {
    const pool = new ExtractorPool({
      modules: { linkedom: '/nowhere/linkedom/index.js', readability: '/nowhere/readability/index.js' },
    });
    try {
      const failure = htmlToText('<p>x</p>', { pool });
      await expect(failure).rejects.toBeInstanceOf(ConfigurationError);
      await expect(failure).rejects.toThrow(
        'install @mozilla/readability and linkedom to use WebBrowser.select',
      );
    } finally {
      await pool.close();
    }
  });
});
