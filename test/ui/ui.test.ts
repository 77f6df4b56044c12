import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from '../cli/helpers';

/**
 * `lagent ui` in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core): the real command in
 * a child process, on a scripted model (test/ui/fixtures/ui-agent.ts). Screenshots go to reports/ui/.
 */

// The functions given to page.evaluate run in the browser; the project's type-check has no DOM library.
declare const document: any;
declare const window: any;
declare const Image: any;
declare const MutationObserver: any;
declare const performance: { now(): number; getEntriesByType(type: string): any[] };

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const AGENT = fileURLToPath(new URL('./fixtures/ui-agent.ts', import.meta.url));
const SHOTS = `${ROOT}reports/ui/`;
const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'ui-test-token';

/** Builds dist/ui/ when it is missing or older than the page's sources. */
function ensureBuilt(): void {
  const built = `${ROOT}dist/ui/app.js`;
  const page = `${ROOT}src/ui/page/`;
  const newest = Math.max(...readdirSync(page).map((name) => statSync(`${page}${name}`).mtimeMs));
  if (existsSync(built) && statSync(built).mtimeMs >= newest && existsSync(`${ROOT}dist/ui/index.html`))
    return;
  execFileSync(process.execPath, [`${ROOT}scripts/build-ui.mjs`], { cwd: ROOT, stdio: 'pipe' });
}

/** A GET with exactly these headers (fetch would add or refuse some); resolves to the status. */
function status(url: string, headers: Record<string, string>, method = 'GET'): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
    request.end(method === 'POST' ? '{"message":["hi"],"session_id":"x"}' : undefined);
  });
}

/**
 * Whether a PNG shows something: decoded by the browser on a blank page, its pixels' luminance must vary
 * (a blank or single-colour image has none) and more than a handful of distinct colours must appear.
 */
async function pixelStats(browser: Browser, png: Buffer): Promise<{ variance: number; colours: number }> {
  const page = await browser.newPage();
  try {
    return await page.evaluate(async (data) => {
      const image = new Image();
      image.src = `data:image/png;base64,${data}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d')!;
      context.drawImage(image, 0, 0);
      const pixels = context.getImageData(0, 0, image.width, image.height).data;
      let sum = 0;
      let squares = 0;
      const colours = new Set<number>();
      const n = pixels.length / 4;
      for (let i = 0; i < pixels.length; i += 4) {
        const y = 0.299 * pixels[i]! + 0.587 * pixels[i + 1]! + 0.114 * pixels[i + 2]!;
        sum += y;
        squares += y * y;
        if (colours.size < 1000) colours.add((pixels[i]! << 16) | (pixels[i + 1]! << 8) | pixels[i + 2]!);
      }
      const mean = sum / n;
      return { variance: squares / n - mean * mean, colours: colours.size };
    }, png.toString('base64'));
  } finally {
    await page.close();
  }
}

describe('lagent ui', () => {
  let cli: RunningCli;
  let base: string;
  let pageUrl: string;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  /** Waits for a message of the session's memory (not the reply still streaming) whose text matches. */
  const shown = (pattern: RegExp) =>
    page.locator('[data-testid=message] > .content', { hasText: pattern }).first().waitFor();

  beforeAll(async () => {
    ensureBuilt();
    mkdirSync(SHOTS, { recursive: true });
    [cli, browser] = await Promise.all([
      startCli(['ui', '--agent', AGENT, '--port', '0', '--token', TOKEN], /^lagent ui: .* at http/, {
        env: { LAGENT_UI_TEST_CHUNK: '4', LAGENT_UI_TEST_CHUNK_MS: '40' },
      }),
      chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] }),
    ]);
    pageUrl = /(http:\/\/\S+)/.exec(cli.line)![1]!;
    base = new URL(pageUrl).origin;
    page = await browser.newPage({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    page.setDefaultTimeout(8_000);
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    if (cli) expect(await cli.stop('SIGTERM')).toBe(0);
  });

  it('prints a URL with the token; without it every route answers 401', async () => {
    expect(pageUrl).toBe(`${base}/?token=${TOKEN}`);
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const path of ['/', '/ui/app.js', '/ui/info', '/ui/events', '/memory/x', '/?token=wrong']) {
      expect(await status(`${base}${path}`, {}), path).toBe(401);
    }
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
    console.info(
      `lagent ui page: load event ${navigation.load.toFixed(0)} ms after navigation (goto ${loadMs.toFixed(0)} ms), tree drawn ${drawnMs.toFixed(0)} ms`,
    );
    expect(navigation.load).toBeLessThan(3_000);
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
    // The token went into an HttpOnly cookie: the page's script cannot read it, and the address lost it.
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
    await page.getByTestId('input').fill('hello world');
    await page.getByTestId('send').click();
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
    await page.getByTestId('input').fill('research cats');
    await page.getByTestId('send').click();
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
    await page.getByTestId('input').fill('please delete the file');
    await page.getByTestId('send').click();
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
    await page.getByTestId('input').fill('delete another');
    await page.getByTestId('send').click();
    await card.waitFor();
    await page.getByTestId('interrupt-arguments').fill('{"path": "/tmp/b.txt"}');
    await page.getByTestId('approve').click();
    // The model reads (on a line of its own) that a person edited the arguments.
    await shown(/^Done: .*edited the arguments.*\ndeleted \/tmp\/b\.txt$/s);

    // Declined with a reason: the tool does not run, the model reads why.
    await page.getByTestId('input').fill('delete once more');
    await page.getByTestId('send').click();
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
    const edited = { ...state, memory: [...state.memory!, { content: 'uploaded note', sender: 'user' }] };
    writeFileSync(saved, JSON.stringify(edited));
    await page.locator('input[type=file]').setInputFiles(saved);
    await shown(/^uploaded note$/);
    const second = await page.getByTestId('session').inputValue();

    await page.getByTestId('session').selectOption(first);
    await shown(/^echo: hello world$/);
    await page.getByTestId('reset').click();
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
