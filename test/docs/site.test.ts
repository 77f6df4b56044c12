import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, openPage, pixelStats } from '../ui/browser';
import { documentationFiles, ROOT } from './code-blocks';
import { brokenLinks, ensureSite, htmlFiles, SHOTS, serveSite } from './site';

/**
 * The docs site as built by `npm run docs` (built here first when its sources are newer): every link between
 * its pages and into the API reference leads to a page and an anchor that exist, and in headless Chromium
 * three pages render and the search finds a guide. Screenshots go to reports/docs/.
 */

// The functions given to page.evaluate run in the browser; the project's type-check has no DOM library.
declare const document: any;

describe('the docs site', () => {
  let site: { url: string; close(): Promise<void> };
  let browser: Browser;
  const problems: string[] = [];

  beforeAll(async () => {
    ensureSite();
    mkdirSync(SHOTS, { recursive: true });
    [site, browser] = await Promise.all([serveSite(), launchBrowser()]);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await site?.close();
  });

  it('has a page per guide and a reference page per entry point', () => {
    const pages = new Set(htmlFiles());
    for (const file of documentationFiles().filter((name) => name.startsWith('docs/'))) {
      expect(pages, file).toContain(file.replace(/^docs\//, '').replace(/\.md$/, '.html'));
    }
    const entries = [
      '',
      'testing',
      'tools',
      'stores',
      'distributed',
      'distributed_http',
      'distributed_queue',
    ];
    for (const entry of [...entries, 'mcp', 'retrieval']) {
      expect(pages).toContain(`api/modules/lagent-ts${entry ? `_${entry}` : ''}.html`);
    }
  });

  it('every link between pages, and into the API reference, leads to a page and an anchor that exist', () => {
    const pages = htmlFiles();
    expect(pages.length).toBeGreaterThan(100);
    expect(brokenLinks(pages)).toEqual([]);
  });

  it('the link check finds a missing page and a missing anchor, and follows no external link', () => {
    const root = mkdtempSync(join(tmpdir(), 'lagent-site-'));
    try {
      mkdirSync(join(root, 'guide'));
      writeFileSync(
        join(root, 'guide', 'a.html'),
        [
          '<h2 id="here">Here</h2><a href="#here">ok</a><a href="b.html#there">ok</a>',
          '<a href="b.html#nowhere">anchor</a><a href="/guide/c.html">page</a>',
          '<a href="https://example.com/x.html#y">external</a><a href="mailto:a@b.c">mail</a>',
        ].join(''),
      );
      writeFileSync(join(root, 'guide', 'b.html'), '<a id="there"></a><a href="../guide/a.html#here">ok</a>');
      expect(brokenLinks(htmlFiles(root), root)).toEqual([
        `guide${sep}a.html: b.html#nowhere (no anchor #nowhere in guide${sep}b.html)`,
        `guide${sep}a.html: /guide/c.html (no such page)`,
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("the README's links to the docs pages name files that exist", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const targets = [...readme.matchAll(/\]\((?!https?:|#|mailto:)([^)#\s]+)(?:#[^)]*)?\)/g)].map(
      (m) => m[1]!,
    );
    for (const target of targets) expect(existsSync(join(ROOT, target)), target).toBe(true);
  });

  /** Opens a page, waits for it to render, checks it shows `text`, and keeps a screenshot. */
  async function visit(path: string, text: RegExp, shot: string): Promise<Page> {
    const page = await openPage(browser, problems, { width: 1280, height: 900 });
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });
    const response = await page.goto(`${site.url}${path}`);
    expect(response?.status(), path).toBe(200);
    await page.getByText(text).first().waitFor();
    const png = await page.screenshot({ fullPage: false });
    writeFileSync(join(SHOTS, shot), png);
    const stats = await pixelStats(browser, png);
    expect(stats.colours, shot).toBeGreaterThan(20);
    return page;
  }

  it('renders the home page, a guide and an API page in Chromium', async () => {
    const home = await visit('/', /LLM agents composed like PyTorch modules/, 'home.png');
    expect(await home.locator('.VPFeature').count()).toBeGreaterThanOrEqual(6);
    await home.close();

    const guide = await visit('/guide/durable-runs.html', /Tool calls that wait for approval/, 'guide.png');
    expect(await guide.locator('h1').textContent()).toContain('Durable runs and approvals');
    // The code is highlighted (shiki) and the sidebar lists the guides.
    expect(await guide.locator('div.language-ts pre code span').count()).toBeGreaterThan(20);
    expect(await guide.locator('.VPSidebar a', { hasText: 'Budgets and guardrails' }).count()).toBe(1);
    // A link into the reference leaves the VitePress router and opens TypeDoc's page.
    await guide.locator('.VPNav a', { hasText: 'API reference' }).first().click();
    await guide.waitForURL(/\/api\/index\.html$/);
    expect(await guide.locator('h1').first().textContent()).toContain('lagent-ts');
    await guide.close();

    const api = await visit('/api/classes/lagent-ts.AsyncAgent.html', /Class AsyncAgent/, 'api.png');
    expect(await api.locator('#forward, [id="forward"]').count()).toBeGreaterThan(0);
    expect(await api.locator('a', { hasText: 'Guides' }).count()).toBeGreaterThan(0);
    await api.close();
    expect(problems).toEqual([]);
  });

  it('finds a guide with the search and opens it', async () => {
    const page = await visit('/guide/getting-started.html', /Quickstart/, 'search-before.png');
    await page.locator('.VPNavBarSearch button').click();
    const input = page.locator('.VPLocalSearchBox input');
    await input.fill('resumeWith');
    const results = page.locator('.VPLocalSearchBox .result');
    await results.first().waitFor();
    const titles = await results.allTextContents();
    expect(titles.some((title) => title.includes('Durable runs and approvals'))).toBe(true);
    writeFileSync(join(SHOTS, 'search.png'), await page.screenshot());
    await results.filter({ hasText: 'Durable runs and approvals' }).first().click();
    await page.waitForURL(/\/guide\/durable-runs\.html/);
    await page
      .getByText(/Tool calls that wait for approval/)
      .first()
      .waitFor();
    expect(await page.evaluate(() => document.title)).toContain('Durable runs and approvals');
    await page.close();
    expect(problems).toEqual([]);
  });
});
