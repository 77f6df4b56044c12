import { readFileSync, writeFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureBuilt,
  launchBrowser,
  openPage,
  pixelStats,
  type RunningUi,
  SHOTS,
  send,
  shown as shownIn,
  startUi,
  status,
} from './browser';

/**
 * `lagent ui` in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core): the real command in
 * a child process, on a scripted model (test/ui/fixtures/ui-agent.ts). Screenshots go to reports/ui/.
 */

// The functions given to page.evaluate run in the browser; the project's type-check has no DOM library.
declare const document: any;
declare const window: any;
declare const MutationObserver: any;
declare const performance: { now(): number; getEntriesByType(type: string): any[] };

const TOKEN = 'ui-test-token';

describe('lagent ui', () => {
  let ui: RunningUi;
  let base: string;
  let pageUrl: string;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  /** Waits for a message of the session's memory (not the reply still streaming) whose text matches. */
  const shown = (pattern: RegExp) => shownIn(page, pattern);

  beforeAll(async () => {
    ensureBuilt();
    [ui, browser] = await Promise.all([startUi(TOKEN), launchBrowser()]);
    ({ pageUrl, base } = ui);
    page = await openPage(browser, problems);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    if (ui) expect(await ui.cli.stop('SIGTERM')).toBe(0);
  });

  it('prints a URL with the token; without it every route but the page’s own files answers 401', async () => {
    expect(pageUrl).toBe(`${base}/#token=${TOKEN}`);
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const path of ['/ui/info', '/ui/sessions', '/ui/events', '/memory/x']) {
      expect(await status(`${base}${path}`, {}), path).toBe(401);
    }
    for (const path of ['/', '/ui/app.js', '/ui/app.css'])
      expect(await status(`${base}${path}`, {}), path).toBe(200);
    expect(
      await status(`${base}/chat_completion/stream`, { 'content-type': 'application/json' }, 'POST'),
    ).toBe(401);
    expect(await status(`${base}/ui/info`, { authorization: `Bearer ${TOKEN}` })).toBe(200);
  });

  it('refuses a foreign Origin or Host, token or not', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect(await status(`${base}/ui/info`, { ...auth, origin: 'https://evil.example' })).toBe(403);
    expect(await status(`${base}/ui/info`, { ...auth, host: 'rebound.evil.example' })).toBe(403);
    // A page of a rebound name is refused even with its "own" origin.
    expect(
      await status(`${base}/ui/info`, {
        ...auth,
        host: 'rebound.evil.example',
        origin: 'http://rebound.evil.example',
      }),
    ).toBe(403);
    const json = { ...auth, 'content-type': 'application/json' };
    expect(
      await status(`${base}/chat_completion/stream`, { ...json, origin: 'http://localhost:1' }, 'POST'),
    ).toBe(403);
    // The page's own origin is accepted.
    expect(await status(`${base}/ui/info`, { ...auth, origin: base })).toBe(200);
  });

  it('loads with no console errors, draws the tree with every sub-agent, streams a reply', async () => {
    const started = performance.now();
    await page.goto(pageUrl, { waitUntil: 'load' });
    const loadMs = performance.now() - started;
    await page.getByTestId('tree-node').nth(2).waitFor();
    const drawnMs = performance.now() - started;
    const navigation = await page.evaluate(() => {
      const [entry] = performance.getEntriesByType('navigation');
      return { load: entry!.loadEventEnd, domContentLoaded: entry!.domContentLoadedEventEnd };
    });
    // A figure to read, not a bound: a busy machine stretches it.
    console.info(
      `lagent ui page: load event ${navigation.load.toFixed(0)} ms after navigation (goto ${loadMs.toFixed(0)} ms), tree drawn ${drawnMs.toFixed(0)} ms`,
    );
    expect(await page.getByTestId('agent-name').textContent()).toBe('assistant');
    const nodes = await page
      .getByTestId('tree-node')
      .evaluateAll((items) =>
        items.map((item) => [item.getAttribute('data-path'), item.querySelector('.name')?.textContent]),
      );
    expect(nodes).toEqual([
      ['', 'assistant'],
      ['agent', 'assistant'],
      ['researcher', 'researcher'],
    ]);
    // The token went from the address's fragment into the tab's storage: the address lost it, no cookie holds it.
    expect(page.url()).toBe(`${base}/`);
    expect(await page.evaluate(() => document.cookie)).toBe('');

    // Record every text the streamed reply shows.
    await page.evaluate(() => {
      const seen: string[] = [];
      window.streamed = seen;
      new MutationObserver(() => {
        const text = document.querySelector('[data-testid=streaming] .content')?.textContent;
        if (text && text !== '…' && seen.at(-1) !== text) seen.push(text);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await send(page, 'hello world');
    await page.getByTestId('streaming').waitFor();
    await shown(/^echo: hello world$/);
    await page.getByTestId('streaming').waitFor({ state: 'detached' });
    const streamed = await page.evaluate(() => window.streamed);
    // "echo: hello world" in chunks of 4 characters: the page showed it growing.
    expect(streamed.length).toBeGreaterThanOrEqual(3);
    expect(streamed.at(-1)).toBe('echo: hello world');
    for (let i = 1; i < streamed.length; i++) expect(streamed[i]!.startsWith(streamed[i - 1]!)).toBe(true);
    // The tree and the events say what ran, with durations.
    await expect
      .poll(() => page.locator('[data-testid=tree-node][data-path=""]').getAttribute('data-status'))
      .toBe('done');
    expect(await page.locator('[data-testid=tree-node][data-path="agent"] .stats').textContent()).toMatch(
      /1 call · \d+ ms/,
    );
    // Every memory of the tree is shown.
    await expect
      .poll(() =>
        page.getByTestId('memory').evaluateAll((items) => items.map((i) => i.getAttribute('data-key'))),
      )
      .toEqual(['memory', 'agent.memory', 'researcher.memory']);

    // A sub-agent's work appears live in the tree.
    await send(page, 'research cats');
    await shown(/^Done: found: research cats$/);
    await expect
      .poll(() => page.locator('[data-testid=tree-node][data-path="researcher"]').getAttribute('data-status'))
      .toBe('done');
    expect(
      await page.locator('[data-testid=event][data-kind=toolEnd] .summary').first().textContent(),
    ).toContain('Research → found: research cats');

    const shot = await page.screenshot({ path: `${SHOTS}chat.png`, fullPage: true });
    const stats = await pixelStats(browser, shot);
    expect(shot.length).toBeGreaterThan(10_000);
    expect(stats.variance).toBeGreaterThan(50);
    expect(stats.colours).toBeGreaterThan(20);
    expect(problems).toEqual([]);
  }, 30_000);

  it('shows an interrupt as the tool call: approve, edit the arguments, decline with a reason', async () => {
    await send(page, 'please delete the file');
    const card = page.getByTestId('interrupt');
    await card.waitFor();
    expect(await card.textContent()).toContain('Delete');
    expect(JSON.parse(await page.getByTestId('interrupt-arguments').inputValue())).toEqual({
      path: '/tmp/a.txt',
    });
    await expect
      .poll(() => page.locator('[data-testid=tree-node][data-path=""]').getAttribute('data-status'))
      .toBe('waiting');
    const shot = await page.screenshot({ path: `${SHOTS}interrupt.png`, fullPage: true });
    expect((await pixelStats(browser, shot)).variance).toBeGreaterThan(50);
    await page.getByTestId('approve').click();
    await shown(/^Done: .*deleted \/tmp\/a\.txt$/);
    await card.waitFor({ state: 'detached' });
    await page.locator('[data-testid=event][data-kind=resume]').first().waitFor();
    await expect
      .poll(() => page.locator('[data-testid=tree-node][data-path=""]').getAttribute('data-status'))
      .toBe('done');

    // Edited arguments: the tool runs with them.
    await send(page, 'delete another');
    await card.waitFor();
    await page.getByTestId('interrupt-arguments').fill('{"path": "/tmp/b.txt"}');
    await page.getByTestId('approve').click();
    // The model reads (on a line of its own) that a person edited the arguments.
    await shown(/^Done: .*edited the arguments.*\ndeleted \/tmp\/b\.txt$/s);

    // Declined with a reason: the tool does not run, the model reads why.
    await send(page, 'delete once more');
    await card.waitFor();
    await page.getByTestId('decline-reason').fill('keep it');
    await page.getByTestId('decline').click();
    await shown(/^Done: .*keep it/s);
    expect(problems).toEqual([]);
  }, 30_000);

  it('lists, switches and resets sessions; downloads and uploads the state dict', async () => {
    const first = await page.getByTestId('session').inputValue();
    const messages = () => page.getByTestId('message').count();
    expect(await messages()).toBeGreaterThan(0);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('download').click(),
    ]);
    const saved = `${SHOTS}state.json`;
    await download.saveAs(saved);
    const state = JSON.parse(readFileSync(saved, 'utf8')) as Record<string, { content: unknown }[]>;
    expect(Object.keys(state)).toEqual(['memory', 'agent.memory', 'researcher.memory']);
    expect(state.memory![0]!.content).toBe('hello world');
    // The last reply, to the declined call, is in it.
    expect(state.memory!.at(-1)!.content).toMatch(/^Done: .*keep it/s);

    await page.getByTestId('new-session').click();
    await expect.poll(() => page.getByTestId('session').inputValue()).not.toBe(first);
    await expect.poll(messages).toBe(0);
    // Upload into the new session: it now holds the first one's conversation.
    // The note goes to the root's memory and to its loop's (the transcript the page shows).
    const note = { content: 'uploaded note', sender: 'user' };
    const edited = {
      ...state,
      memory: [...state.memory!, note],
      'agent.memory': [...state['agent.memory']!, note],
    };
    writeFileSync(saved, JSON.stringify(edited));
    await page.locator('input[type=file]').setInputFiles(saved);
    await shown(/^uploaded note$/);
    const second = await page.getByTestId('session').inputValue();

    await page.getByTestId('session').selectOption(first);
    await shown(/^echo: hello world$/);
    // Reset asks first: cancelled, nothing changes; confirmed, the session is cleared.
    await page.getByTestId('reset').click();
    await page.getByTestId('confirm-reset').waitFor();
    await page.getByTestId('confirm-reset-no').click();
    await page.getByTestId('confirm-reset').waitFor({ state: 'detached' });
    await shown(/^echo: hello world$/);
    await page.getByTestId('reset').click();
    await page.getByTestId('confirm-reset-yes').click();
    await expect.poll(messages).toBe(0);
    // The other session kept its messages, and both are listed.
    await page.getByTestId('session').selectOption(second);
    await shown(/^uploaded note$/);
    const options = await page.getByTestId('session').locator('option').allTextContents();
    expect(options).toEqual(expect.arrayContaining([first, second]));
    await page.screenshot({ path: `${SHOTS}sessions.png`, fullPage: true });
    expect(problems).toEqual([]);
  }, 30_000);
});
