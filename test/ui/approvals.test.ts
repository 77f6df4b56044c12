import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, launchBrowser, type RunningUi, SHOTS, send, shown, startUi } from './browser';

/**
 * Approvals wherever the person is, in headless Chromium: the page rebuilds the calls a session waits for from
 * the server (`GET /ui/sessions/:id/interrupts`, which reads `pendingInterrupts`) after a reload, a switch to
 * another session and back, and in a second tab; a decision in one tab clears the card in the other; a message
 * typed while a call waits is sent only after the person says it declines the call, and the decline shows.
 */

const TOKEN = 'approvals-token';

describe('lagent ui approvals', () => {
  let ui: RunningUi;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  const track = (p: Page) => {
    p.setDefaultTimeout(8_000);
    p.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    p.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    return p;
  };
  const card = (p: Page) => p.getByTestId('interrupt');
  const argumentsOf = async (p: Page) => JSON.parse(await p.getByTestId('interrupt-arguments').inputValue());

  beforeAll(async () => {
    ensureBuilt();
    [ui, browser] = await Promise.all([startUi(TOKEN), launchBrowser()]);
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = track(await context.newPage());
    await page.goto(ui.pageUrl);
    await page.getByTestId('tree-node').first().waitFor();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    if (ui) expect(await ui.cli.stop('SIGTERM')).toBe(0);
  });

  it('rebuilds the waiting call after a reload and after switching sessions, and it is still approvable', async () => {
    await send(page, 'please delete the file');
    await card(page).waitFor();
    const id = await card(page).getAttribute('data-id');
    expect(id).toBeTruthy();

    await page.reload();
    await card(page).waitFor();
    expect(await card(page).getAttribute('data-id')).toBe(id);
    expect(await argumentsOf(page)).toEqual({ path: '/tmp/a.txt' });
    // The tool call is in the transcript too, waiting.
    expect(await page.getByTestId('tool-call').last().getAttribute('data-status')).toBe('waiting');

    const first = await page.getByTestId('session').inputValue();
    await page.getByTestId('new-session').click();
    await expect.poll(() => page.getByTestId('session').inputValue()).not.toBe(first);
    await expect.poll(() => card(page).count()).toBe(0);
    await page.getByTestId('session').selectOption(first);
    await card(page).waitFor();
    expect(await card(page).getAttribute('data-id')).toBe(id);

    await page.getByTestId('approve').click();
    await shown(page, /^Done: .*deleted \/tmp\/a\.txt$/);
    await card(page).waitFor({ state: 'detached' });
    // The decision shows on the call in the transcript.
    const call = page.getByTestId('tool-call').last();
    expect(await call.getAttribute('data-status')).toBe('done');
    expect(await call.getByTestId('tool-status').textContent()).toBe('approved · done');
    expect(problems).toEqual([]);
  }, 40_000);

  it('shows the waiting call in a second tab; a decision there clears the first tab', async () => {
    await send(page, 'delete in two tabs');
    await card(page).waitFor();
    const id = await card(page).getAttribute('data-id');
    // Another tab opened at the printed address (each tab keeps the secret of its own address).
    const second = track(await context.newPage());
    await second.goto(ui.pageUrl);
    await card(second).waitFor();
    expect(await card(second).getAttribute('data-id')).toBe(id);

    await second.getByTestId('decline-reason').fill('not from here');
    await second.getByTestId('decline').click();
    await shown(second, /^Done: .*not from here/);
    // The first tab hears the call settle and shows the reply, the card gone.
    await card(page).waitFor({ state: 'detached' });
    await shown(page, /^Done: .*not from here/);
    const declined = page.getByTestId('tool-call').last();
    expect(await declined.getAttribute('data-status')).toBe('declined');
    expect(await declined.getByTestId('tool-status').textContent()).toBe('declined: not from here');
    await second.close();
    expect(problems).toEqual([]);
  }, 40_000);

  it('a message typed while a call waits asks first: kept waiting, or declined in plain sight', async () => {
    await send(page, 'delete before asking');
    await card(page).waitFor();
    await send(page, 'what is the weather?');
    const confirm = page.getByTestId('confirm-decline');
    await confirm.waitFor();
    expect(await confirm.textContent()).toContain('Sending this message declines it');
    await page.screenshot({ path: `${SHOTS}confirm-decline.png` });
    await page.getByTestId('confirm-decline-cancel').click();
    await confirm.waitFor({ state: 'detached' });
    // Nothing was sent: the card waits, and the text is still in the composer.
    expect(await card(page).count()).toBe(1);
    expect(await page.getByTestId('input').inputValue()).toBe('what is the weather?');

    await page.getByTestId('send').click();
    await page.getByTestId('confirm-decline-send').click();
    await shown(page, /^echo: what is the weather\?$/);
    await card(page).waitFor({ state: 'detached' });
    const declined = page.getByTestId('tool-call').last();
    expect(await declined.getAttribute('data-status')).toBe('declined');
    expect(await declined.getByTestId('tool-status').textContent()).toBe(
      'declined: the user sent a new message',
    );
    expect(problems).toEqual([]);
  }, 40_000);
});
