import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../cli/helpers';
import { ensureBuilt, launchBrowser, openPage, type RunningUi, send, shown } from './browser';

/**
 * The page shows the selected session's working memory (as the model last updated it, and as the session's
 * state holds it after a reload) and, under each `recall` event, what semantic recall placed before that model
 * call: each message's score, sender and text.
 */

const TOKEN = 'memory-token';
const AGENT = fileURLToPath(new URL('./fixtures/memory-agent.ts', import.meta.url));

describe('lagent ui: working memory and recall', () => {
  let ui: RunningUi;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    const start = async (): Promise<RunningUi> => {
      const cli = await startCli(
        ['ui', '--agent', AGENT, '--port', '0', '--token', TOKEN],
        /^lagent ui: .* at http/,
      );
      const pageUrl = /(http:\/\/\S+)/.exec(cli.line)![1]!;
      return { cli, pageUrl, base: new URL(pageUrl).origin };
    };
    [ui, browser] = await Promise.all([start(), launchBrowser()]);
    page = await openPage(browser, problems);
    await page.goto(ui.pageUrl);
    await page.getByTestId('tree-node').first().waitFor();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    if (ui) expect(await ui.cli.stop('SIGTERM')).toBe(0);
  });

  it('shows the working memory the model kept, live and after a reload; other sessions show their own', async () => {
    await send(page, 'remember likes green tea');
    await shown(page, /^Noted\.$/);
    await expect.poll(() => page.getByTestId('working-memory').textContent()).toBe('likes green tea');
    await page.reload();
    await page.getByTestId('tree-node').first().waitFor();
    await expect.poll(() => page.getByTestId('working-memory').textContent()).toBe('likes green tea');
    await page.getByTestId('new-session').click();
    await send(page, 'hello');
    await shown(page, /^echo: hello$/);
    expect(await page.getByTestId('working-memory').count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('shows what was recalled for a model call under its recall event: score, sender and text', async () => {
    await send(page, 'recall my cat');
    await shown(page, /^echo: recall my cat$/);
    const event = page.locator('[data-testid=event][data-kind=recall]').first();
    await event.waitFor();
    expect(await event.locator('.summary').textContent()).toBe('2 messages for “recall my cat”');
    expect(await event.getByTestId('recalled-message').allTextContents()).toEqual([
      '0.91 user · old-1: my cat is called Miso',
      '0.42 assistant · old-1: Miso likes tuna',
    ]);
    expect(problems).toEqual([]);
  });
});
