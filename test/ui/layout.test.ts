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
  shown,
  startUi,
} from './browser';

/**
 * The page's layout from 420 to 1,920 px wide, with the prebuilt agent's own long default names
 * (`AsyncStreamingFunctionCallingAgent` for the root and its model-facing sub-agent) and a long session id:
 * nothing overflows the window sideways, long names are cut with an ellipsis, and below 900 px the panels are
 * tabs. Screenshots at 420, 1,400 and 1,920 px go to reports/ui/layout-<width>.png.
 */

// The functions given to page.evaluate run in the browser; the project's type-check has no DOM library.
declare const document: any;
declare const window: any;
declare const getComputedStyle: any;

const TOKEN = 'layout-token';
const SESSION = 'customer-support-escalation-2024-11-05-refund-for-order-88213-and-the-shipping-mixup';

/** What overflows: the page sideways, and any element of the header, the tree or a tool call past its box. */
function overflows(page: Page) {
  return page.evaluate(() => {
    const width = window.innerWidth;
    const out: string[] = [];
    if (document.documentElement.scrollWidth > width)
      out.push(`page ${document.documentElement.scrollWidth} > ${width}`);
    for (const element of document.querySelectorAll(
      'header > *, .tabs > *, .composer > *, .interrupt button',
    )) {
      const box = element.getBoundingClientRect();
      if (box.width > 0 && (box.right > width + 0.5 || box.left < -0.5))
        out.push(`${element.outerHTML.slice(0, 60)} at ${box.left}..${box.right}`);
    }
    for (const row of document.querySelectorAll('[data-testid=tree-node], .tool summary, .event button')) {
      if (row.offsetParent !== null && row.scrollWidth > row.clientWidth + 1)
        out.push(`${row.className} ${row.scrollWidth} > ${row.clientWidth}`);
    }
    return out;
  });
}

/** Whether an element's text is cut by an ellipsis (it is longer than its box, and the box says so). */
function ellipsised(page: Page, selector: string) {
  return page
    .locator(selector)
    .first()
    .evaluate((element) => {
      const style = getComputedStyle(element);
      return element.scrollWidth > element.clientWidth && style.textOverflow === 'ellipsis';
    });
}

describe('lagent ui layout', () => {
  let ui: RunningUi;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    [ui, browser] = await Promise.all([
      startUi(TOKEN, { LAGENT_UI_TEST_DEFAULT_NAMES: '1', LAGENT_UI_TEST_CHUNK_MS: '0' }),
      launchBrowser(),
    ]);
    page = await openPage(browser, problems, { width: 1400, height: 900 });
    await page.addInitScript((id) => window.localStorage.setItem('lagent-ui-session', id), SESSION);
    await page.goto(ui.pageUrl);
    await page.getByTestId('tree-node').nth(2).waitFor();
    await send(page, 'research cats');
    await shown(page, /^Done: found: research cats$/);
    await send(page, 'markdown please');
    await page.locator('.markdown table').waitFor();
    await send(page, 'delete the file');
    await page.getByTestId('interrupt').waitFor();
  }, 40_000);

  afterAll(async () => {
    await browser?.close();
    if (ui) expect(await ui.cli.stop('SIGTERM')).toBe(0);
  });

  it('shows the long default names of the prebuilt agent, cut with an ellipsis where they do not fit', async () => {
    expect(await page.getByTestId('agent-name').textContent()).toBe('AsyncStreamingFunctionCallingAgent');
    const names = await page.locator('[data-testid=tree-node] .name').allTextContents();
    expect(names.filter((name) => name === 'AsyncStreamingFunctionCallingAgent')).toHaveLength(2);
    expect(await page.getByTestId('session').inputValue()).toBe(SESSION);
  });

  for (const width of [1920, 1400, 420]) {
    it(`lays out at ${width} px: nothing overflows, long names are ellipsised`, async () => {
      await page.setViewportSize({ width, height: width === 420 ? 860 : 900 });
      await expect.poll(() => overflows(page)).toEqual([]);
      // The tree's rows keep their figures and cut the class names (or the names) that do not fit.
      const row = page.locator('[data-testid=tree-node][data-path=agent]');
      if (width < 900) {
        // One panel at a time: the chat, with the waiting call.
        expect(await page.getByTestId('tabs').isVisible()).toBe(true);
        expect(await page.locator('aside').isVisible()).toBe(false);
        expect(await page.getByTestId('interrupt').isVisible()).toBe(true);
      } else {
        expect(await page.getByTestId('tabs').isVisible()).toBe(false);
        expect(await row.isVisible()).toBe(true);
      }
      const shot = await page.screenshot({ path: `${SHOTS}layout-${width}.png` });
      const stats = await pixelStats(browser, shot);
      expect(stats.variance).toBeGreaterThan(50);
      expect(stats.colours).toBeGreaterThan(20);

      if (width < 900) {
        await page.getByTestId('tab-agents').click();
        await row.waitFor();
        expect(await page.locator('.chat').isVisible()).toBe(false);
        await expect.poll(() => overflows(page)).toEqual([]);
        expect(await ellipsised(page, '[data-testid=tree-node][data-path=agent] .class')).toBe(true);
        await page.screenshot({ path: `${SHOTS}layout-${width}-agents.png` });
        await page.getByTestId('tab-memory').click();
        await page.getByTestId('memory').first().waitFor();
        expect(await page.locator('.tree').isVisible()).toBe(false);
        await page.getByTestId('tab-chat').click();
        await page.getByTestId('interrupt').waitFor();
      }
      expect(problems).toEqual([]);
    });
  }
});
