import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ActionStatusCode } from 'lagent-ts';
import { AsyncWebBrowser } from 'lagent-ts/tools';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ExtractorPool, resolvePeers } from '#src/tools/web/extract/pool';
import { htmlToText } from '#src/tools/web/html-text';
import { type FakeSearchServer, startFakeSearch } from '../fakes/search-services';

/**
 * Pages built to be slow to extract. Before extraction was bounded and moved to a worker thread, each blocked
 * the event loop: 1,500 nested divs for 30 s, 2,000 nested lists for 90 s, 2 MB of no-break spaces for 23 s.
 */
const HOSTILE: Record<string, string> = {
  '1,500 nested divs': `<html><body>${'<div>'.repeat(1500)}deep text${'</div>'.repeat(1500)}</body></html>`,
  '2,000 nested lists': `<html><body>${'<ul><li>'.repeat(2000)}deep text</body></html>`,
  '2 MB of no-break spaces': `<html><body><p>deep${'&nbsp;'.repeat(340_000)}text</p></body></html>`,
  '100,000 nested divs': `<html><body>${'<div>'.repeat(100_000)}deep text${'</div>'.repeat(100_000)}</body></html>`,
};

const paragraph = (n: number) =>
  `<p>Paragraph ${n} says something long enough to count as content for a reader view of the page.</p>`;

/**
 * Runs `work` and counts the turns the event loop made meanwhile (a `setImmediate` task set again each turn).
 * Work done on this thread before it resolves (a page parsed here) leaves it no turn; work handed to another
 * thread leaves this one turning while it waits for the answer, however long that takes.
 */
async function whileTurning<T>(
  work: () => Promise<T>,
  onTurn?: () => void,
): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let turning = true;
  const turn = () => {
    if (!turning) return;
    turns++;
    onTurn?.();
    setImmediate(turn);
  };
  setImmediate(turn);
  try {
    const value = await work();
    return { value, turns };
  } finally {
    turning = false;
  }
}

let pool: ExtractorPool;
/** A pool whose threads read a page only once this thread turned (see fixtures/linkedom-held.cjs). */
let held: ExtractorPool;
let flags: string;
let flag: string;

beforeAll(() => {
  pool = new ExtractorPool();
  const peers = resolvePeers();
  flags = mkdtempSync(join(tmpdir(), 'lagent-held-'));
  flag = join(flags, 'turned');
  // Threads take a copy of the environment when they start: the first extraction starts them.
  process.env.LAGENT_TEST_LINKEDOM = peers.linkedom;
  process.env.LAGENT_TEST_HELD_UNTIL = flag;
  held = new ExtractorPool({
    modules: {
      linkedom: fileURLToPath(new URL('./fixtures/linkedom-held.cjs', import.meta.url)),
      readability: peers.readability,
    },
  });
});
afterAll(async () => {
  await Promise.all([pool.close(), held.close()]);
  rmSync(flags, { recursive: true, force: true });
});

describe('extracting a hostile page', () => {
  it.each(Object.entries(HOSTILE))(
    'reads %s while the event loop keeps turning',
    async (_name, html) => {
      rmSync(flag, { force: true });
      const { value, turns } = await whileTurning(
        () => htmlToText(html, { pool: held, timeoutMs: 15_000 }),
        () => {
          if (!existsSync(flag)) writeFileSync(flag, '');
        },
      );
      expect(value.text.replace(/\s+/g, ' ')).toBe('deep text');
      // The main thread only hands the page over, and turns while a worker thread holds it: the worker reads
      // it only once this thread has turned (a page read here would never be).
      expect(turns).toBeGreaterThan(0);
    },
    30_000,
  );

  it('stops at the time limit and gives the page’s rough text, with a note', async () => {
    const html = `<html><head><title>Big</title></head><body><article>${Array.from({ length: 10_000 }, (_, n) => paragraph(n)).join('')}</article><script>secret()</script></body></html>`;
    await htmlToText('<p>warm</p>', { pool }); // a thread is up, so the limit is all that is measured
    const { value, turns } = await whileTurning(() => htmlToText(html, { pool, timeoutMs: 50 }));
    expect(value.title).toBe('Big');
    expect(value.text.split('\n')[0]).toBe(
      '[The main text of this page could not be extracted within 50 ms; this is all of its text, roughly.]',
    );
    expect(value.text).toContain('Paragraph 9999 says something');
    expect(value.text).not.toContain('secret()');
    expect(turns).toBeGreaterThan(0);
    // The stopped thread was replaced: the next page is read normally.
    const next = await htmlToText(
      `<html><body><article>${paragraph(1)}${paragraph(2)}${paragraph(3)}</article></body></html>`,
      { pool },
    );
    expect(next.text).toContain('Paragraph 3 says');
  });

  it('stops the extraction when the caller aborts', async () => {
    const html = `<html><body>${Array.from({ length: 10_000 }, (_, n) => paragraph(n)).join('')}</body></html>`;
    await htmlToText('<p>warm</p>', { pool });
    const controller = new AbortController();
    // The page is with the (warm) thread as soon as the call is made; the abort comes before its answer can.
    const reading = htmlToText(html, { pool, signal: controller.signal });
    controller.abort(new Error('user cancelled'));
    await expect(reading).rejects.toThrow('user cancelled');
    expect(pool.size).toBe(0); // the thread that had the page was stopped
  });
});

describe('a page that needs more memory than a thread may have', () => {
  it('ends that thread, not the process, and gives the rough text', async () => {
    const small = new ExtractorPool({ maxHeapMb: 40 });
    try {
      expect((await htmlToText('<p>a small page</p>', { pool: small })).text).toBe('a small page');
      const html = `<html><body>${'<span>word </span>'.repeat(130_000)}</body></html>`;
      const page = await htmlToText(html, { pool: small, timeoutMs: 15_000 });
      expect(page.text.split('\n')[0]).toMatch(
        /^\[The main text of this page could not be extracted \(.*memory.*\); this is all of its text, roughly\.\]$/,
      );
      expect(page.text).toContain('word word word');
      expect(small.size).toBe(0);
    } finally {
      await small.close();
    }
  }, 30_000);
});

describe('bounding keeps what the page says', () => {
  it('keeps the text after a deeply nested part in its place', async () => {
    const html = `<html><body>${'<div>'.repeat(5000)}deep${'</div>'.repeat(5000)}<p>after</p><ul><li>one<li>two</ul></body></html>`;
    const page = await htmlToText(html, { pool });
    expect(page.text).toBe('deep\nafter\none\ntwo');
  });

  it('reads fragments and empty documents', async () => {
    expect(await htmlToText('hello <b>world</b>', { pool })).toEqual({ title: '', text: 'hello world' });
    expect(await htmlToText('   ', { pool })).toEqual({ title: '', text: '' });
  });
});

describe('WebBrowser.open_url on a hostile page', () => {
  let fake: FakeSearchServer;
  let browser: AsyncWebBrowser | undefined;

  beforeAll(async () => {
    fake = await startFakeSearch({ pages: { deep: { body: HOSTILE['1,500 nested divs'] } } });
  });
  afterEach(() => browser?.close());
  afterAll(async () => {
    await fake.close();
  });

  it('answers while other work goes on: the page is read by an extraction thread', async () => {
    browser = new AsyncWebBrowser({ allowPrivateNetwork: true });
    const extract = vi.spyOn(ExtractorPool.prototype, 'extract');
    try {
      const value = await browser.call({ url: `${fake.url}/pages/deep` }, 'open_url');
      expect(value.state).toBe(ActionStatusCode.SUCCESS);
      expect(value.formatResult()).toBe('deep text');
      // Handed to a pool (whose threads the tests above show keep this one turning), which read it.
      expect(extract).toHaveBeenCalledTimes(1);
      expect(extract.mock.calls[0]![0].html).toBe(HOSTILE['1,500 nested divs']);
      await expect(extract.mock.results[0]!.value).resolves.toMatchObject({ ok: true });
    } finally {
      extract.mockRestore();
    }
  });
});
