import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { type RunningCli, startCli } from '../cli/helpers';

/**
 * Helpers of the `lagent ui` browser tests: the real command in a child process on the scripted agent of
 * test/ui/fixtures/ui-agent.ts, and Debian's headless Chromium driven by playwright-core. Screenshots go to
 * reports/ui/.
 */

// The functions given to page.evaluate run in the browser; the project's type-check has no DOM library.
declare const document: any;
declare const Image: any;

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const AGENT = fileURLToPath(new URL('./fixtures/ui-agent.ts', import.meta.url));
export const SHOTS = `${ROOT}reports/ui/`;
const CHROMIUM = '/usr/bin/chromium';

/** Builds dist/ui/ when it is missing or older than the page's sources. */
export function ensureBuilt(): void {
  const built = `${ROOT}dist/ui/app.js`;
  const page = `${ROOT}src/ui/page/`;
  const newest = Math.max(...readdirSync(page).map((name) => statSync(`${page}${name}`).mtimeMs));
  mkdirSync(SHOTS, { recursive: true });
  if (existsSync(built) && statSync(built).mtimeMs >= newest && existsSync(`${ROOT}dist/ui/index.html`))
    return;
  execFileSync(process.execPath, [`${ROOT}scripts/build-ui.mjs`], { cwd: ROOT, stdio: 'pipe' });
}

/** A GET with exactly these headers (fetch would add or refuse some); resolves to the status. */
export function status(url: string, headers: Record<string, string>, method = 'GET'): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
    request.end(method === 'POST' ? '{"message":["hi"],"session_id":"x"}' : undefined);
  });
}

/** `lagent ui` on the test agent, with the page's URL (token included) and its origin. */
export interface RunningUi {
  cli: RunningCli;
  pageUrl: string;
  base: string;
}

export async function startUi(token: string, env: Record<string, string> = {}): Promise<RunningUi> {
  const cli = await startCli(
    ['ui', '--agent', AGENT, '--port', '0', '--token', token],
    /^lagent ui: .* at http/,
    {
      env: { LAGENT_UI_TEST_CHUNK: '4', LAGENT_UI_TEST_CHUNK_MS: '40', ...env },
    },
  );
  const pageUrl = /(http:\/\/\S+)/.exec(cli.line)![1]!;
  return { cli, pageUrl, base: new URL(pageUrl).origin };
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}

/** A page that records console errors and page errors in `problems`. */
export async function openPage(
  browser: Browser,
  problems: string[],
  viewport = { width: 1280, height: 800 },
): Promise<Page> {
  const page = await browser.newPage({ viewport, acceptDownloads: true });
  page.setDefaultTimeout(8_000);
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return page;
}

/**
 * Whether a PNG shows something: decoded by the browser on a blank page, its pixels' luminance must vary
 * (a blank or single-colour image has none) and more than a handful of distinct colours must appear.
 */
export async function pixelStats(
  browser: Browser,
  png: Buffer,
): Promise<{ variance: number; colours: number }> {
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

/** Types a message in the page's composer and sends it. */
export async function send(page: Page, text: string): Promise<void> {
  await page.getByTestId('input').fill(text);
  await page.getByTestId('send').click();
}

/** Waits for a message of the session's transcript (not the reply still streaming) whose text matches. */
export function shown(page: Page, pattern: RegExp): Promise<void> {
  return page.locator('[data-testid=message] > .content', { hasText: pattern }).first().waitFor();
}
