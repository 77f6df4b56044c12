import { writeFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, launchBrowser, openPage, type RunningUi, SHOTS, send, shown, startUi } from './browser';

/**
 * The chat page in headless Chromium: tool calls and their results inline and folded, reasoning folded,
 * markdown and code rendered without raw HTML under the page's policy, Stop, a failed message kept with
 * Retry, and the event log and figures of the session shown only.
 */

// The functions given to page.evaluate run in the browser; the project's type-check has no DOM library.
declare const window: any;
declare const document: any;

const TOKEN = 'page-token';

describe('lagent ui chat page', () => {
  let ui: RunningUi;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    [ui, browser] = await Promise.all([startUi(TOKEN), launchBrowser()]);
    page = await openPage(browser, problems);
    await page.goto(ui.pageUrl);
    await page.getByTestId('tree-node').first().waitFor();
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    if (ui) expect(await ui.cli.stop('SIGTERM')).toBe(0);
  });

  it('shows tool calls and their results inline, folded to one line, while they stream and after', async () => {
    // Record the tool calls the streaming reply showed before its end.
    await page.evaluate(() => {
      window.liveTools = [];
      const seen = new Set();
      const observer = new window.MutationObserver(() => {
        for (const node of document.querySelectorAll('[data-testid=streaming] [data-testid=tool-call]')) {
          const key = `${node.getAttribute('data-name')}:${node.getAttribute('data-status')}`;
          if (!seen.has(key)) {
            seen.add(key);
            window.liveTools.push(key);
          }
        }
      });
      observer.observe(document.body, { subtree: true, childList: true, attributes: true });
    });
    await send(page, 'research cats');
    await shown(page, /^Done: found: research cats$/);
    expect(await page.evaluate(() => window.liveTools)).toContain('Research:done');
    const call = page.locator('[data-testid=message] [data-testid=tool-call]').last();
    expect(await call.getAttribute('data-name')).toBe('Research');
    expect(await call.getAttribute('data-status')).toBe('done');
    expect(await call.locator('summary').textContent()).toContain('Research({"query":"research cats"})');
    // Folded: the result is not shown until the call is opened.
    expect(await call.getByTestId('tool-result').isVisible()).toBe(false);
    await call.locator('summary').click();
    expect(await call.getByTestId('tool-result').textContent()).toBe('found: research cats');
    expect(JSON.parse((await call.getByTestId('tool-arguments').textContent())!)).toEqual({
      query: 'research cats',
    });
    expect(problems).toEqual([]);
  });

  it('renders markdown and code, and shows raw HTML and script links as text (nothing runs)', async () => {
    await send(page, 'markdown please');
    const message = page.locator('[data-testid=message] .markdown', { hasText: 'Results' }).last();
    await message.waitFor();
    expect(await message.locator('h4, h3, h5').first().textContent()).toBe('Results');
    expect(await message.locator('strong').first().textContent()).toBe('3 files');
    expect(await message.locator('li').allTextContents()).toEqual(['first item', 'second item with a link']);
    expect(await message.locator('pre.code code').textContent()).toBe('const answer: number = 42;');
    expect(await message.locator('pre.code').getAttribute('data-lang')).toBe('ts');
    expect(await message.locator('table td').allTextContents()).toEqual(['a.txt', '10']);
    const link = message.locator('a', { hasText: 'a link' });
    expect(await link.getAttribute('href')).toBe('https://example.com/docs');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    // The HTML the model wrote is text: no element was made of it, nothing ran, no javascript: link exists.
    expect(await message.textContent()).toContain('<img src=x onerror="window.pwned = true">');
    expect(await message.textContent()).toContain('<script>window.pwned = true</script>');
    expect(await message.locator('img, script').count()).toBe(0);
    expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
    expect(await page.evaluate(() => window.pwned)).toBeUndefined();
    // The page's policy is still the strict one.
    const response = await page.request.get(`${ui.base}/`);
    expect(response.headers()['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(problems).toEqual([]);
  });

  it('folds the reasoning a model message keeps (extra_info.reasoning)', async () => {
    await page.getByTestId('new-session').click();
    const state = {
      memory: [
        { sender: 'user', content: 'why is the sky blue?' },
        { sender: 'assistant', content: 'Because of **Rayleigh** scattering.' },
      ],
      'agent.memory': [
        { sender: 'user', content: 'why is the sky blue?' },
        {
          sender: 'assistant',
          content: 'Because of **Rayleigh** scattering.',
          extra_info: { reasoning: 'Short wavelengths scatter more; blue is short.' },
        },
      ],
      'researcher.memory': [],
    };
    const file = `${SHOTS}reasoning-state.json`;
    writeFileSync(file, JSON.stringify(state));
    await page.locator('input[type=file]').setInputFiles(file);
    const reasoning = page.getByTestId('reasoning');
    await reasoning.waitFor();
    expect(await reasoning.getAttribute('open')).toBeNull();
    expect(await reasoning.locator('.reasoning-text').isVisible()).toBe(false);
    await reasoning.locator('summary').click();
    expect(await reasoning.locator('.reasoning-text').textContent()).toBe(
      'Short wavelengths scatter more; blue is short.',
    );
    expect(await page.locator('[data-testid=message] strong', { hasText: 'Rayleigh' }).count()).toBe(1);
    expect(problems).toEqual([]);
  });

  it('Stop aborts the call: the reply stops, the turn is taken back, the message is kept with Retry', async () => {
    await send(page, 'be slow');
    await page.locator('[data-testid=streaming] .content', { hasText: 'word word' }).first().waitFor();
    await page.getByTestId('stop').click();
    const failed = page.getByTestId('failed');
    await failed.waitFor();
    expect(await failed.getByTestId('failure-reason').textContent()).toBe('Stopped');
    expect(await page.getByTestId('streaming').count()).toBe(0);
    // The server stopped the call (it failed, aborted) and took its turn back: the session does not have it.
    await page.locator('[data-testid=event][data-kind=error]').first().waitFor();
    expect(await page.locator('[data-testid=event][data-kind=error] .summary').first().textContent()).toMatch(
      /closed the connection|its stream was closed/,
    );
    const session = await page.getByTestId('session').inputValue();
    const memory = async () =>
      JSON.stringify(
        await (
          await page.request.get(`${ui.base}/memory/${session}`, {
            headers: { authorization: `Bearer ${TOKEN}` },
          })
        ).json(),
      );
    await expect.poll(memory).not.toContain('be slow');
    expect(await page.locator('[data-testid=messages]').textContent()).not.toContain('THE-END');
    await failed.getByTestId('dismiss').click();
    await failed.waitFor({ state: 'detached' });
    expect(problems).toEqual([]);
  });

  it('keeps a failed message with why, and Retry sends it again', async () => {
    await send(page, 'a flaky question');
    const failed = page.getByTestId('failed');
    await failed.waitFor();
    expect(await failed.locator('.content').textContent()).toBe('a flaky question');
    expect(await failed.getByTestId('failure-reason').textContent()).toBe(
      'Not sent: the model is overloaded, try again',
    );
    await page.screenshot({ path: `${SHOTS}failed-message.png` });
    await failed.getByTestId('retry').click();
    await shown(page, /^echo: a flaky question$/);
    expect(await failed.count()).toBe(0);
    // The composer was emptied when the message was sent, and Edit puts a failed text back: try it too.
    await send(page, 'another flaky one');
    await failed.waitFor();
    await failed.getByTestId('edit').click();
    expect(await page.getByTestId('input').inputValue()).toBe('another flaky one');
    expect(await failed.count()).toBe(0);
    // The browser logs each refused request (500) itself; the page threw nothing.
    expect(problems.filter((p) => !p.includes('Failed to load resource'))).toEqual([]);
  });

  it("shows the event log and the figures of the session it shows, not the other sessions'", async () => {
    const figures = async () => ({
      models: await page.getByTestId('figure-models').textContent(),
      tools: await page.getByTestId('figure-tools').textContent(),
    });
    const sessions = () => page.getByTestId('session').locator('option').allTextContents();
    const [first] = await sessions();
    await page.getByTestId('session').selectOption(first!);
    await shown(page, /^Done: found: research cats$/);
    // The first session ran Research (one tool call) and the markdown reply.
    // The first session: research (the loop's two model calls, the researcher's one, a tool call), markdown.
    await expect.poll(figures).toEqual({ models: '4 model calls', tools: '1 tool call' });
    const firstEvents = await page.getByTestId('event').count();

    await page.getByTestId('new-session').click();
    await expect.poll(() => page.getByTestId('event').count()).toBe(0);
    expect(await figures()).toEqual({ models: '0 model calls', tools: '0 tool calls' });
    await send(page, 'hello there');
    await shown(page, /^echo: hello there$/);
    await expect.poll(figures).toEqual({ models: '1 model call', tools: '0 tool calls' });
    const summaries = await page.locator('[data-testid=event] .summary').allTextContents();
    expect(summaries.join('\n')).not.toContain('research cats');

    await page.getByTestId('session').selectOption(first!);
    await expect.poll(() => page.getByTestId('event').count()).toBe(firstEvents);
    expect(problems.filter((p) => !p.includes('Failed to load resource'))).toEqual([]);
  });
});
