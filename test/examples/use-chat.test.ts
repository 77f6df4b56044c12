import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from '../cli/helpers';
import { type GatedModel, startGatedModel } from '../helpers/gated-model';
import { runProcess } from '../helpers/processes';
import { launchBrowser, openPage, pixelStats, ROOT, SHOTS } from '../ui/browser';

/*
 * examples/use-chat: the Vite + React page, type-checked and built with Vite, served as static files, its
 * `useChat` talking to `lagent serve --agent examples/use-chat/agent.ts`, driven in headless Chromium. The page
 * reloaded mid-reply is served by a second `lagent serve` whose model is a fake OpenAI server that streams only
 * as the test lets it.
 */

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

let out: string;
let site: http.Server;
let siteUrl: string;
let cli: RunningCli;
let serverUrl: string;
let browser: Browser;
let gatedModel: GatedModel;
let gatedCli: RunningCli;
let gatedServerUrl: string;

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'lagent-use-chat-'));
  const tsc = await runProcess(
    process.execPath,
    [`${ROOT}node_modules/typescript/bin/tsc`, '--noEmit', '-p', 'examples/use-chat/tsconfig.json'],
    { cwd: ROOT, timeoutMs: 120_000 },
  );
  expect(tsc.stdout + tsc.stderr).toBe('');
  const built = await runProcess(
    process.execPath,
    [
      `${ROOT}node_modules/vite/bin/vite.js`,
      'build',
      'examples/use-chat',
      '--outDir',
      out,
      '--logLevel',
      'warn',
    ],
    { cwd: ROOT, timeoutMs: 120_000 },
  );
  expect(built.code, built.stderr).toBe(0);
  // The built page, as any static host would serve it.
  site = http.createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    if (path === '/favicon.ico') {
      response.writeHead(204).end();
      return;
    }
    const file = join(out, path === '/' ? 'index.html' : path.replace(/\.\./g, ''));
    try {
      const body = readFileSync(file);
      response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  cli = await startCli(
    ['serve', '--agent', 'examples/use-chat/agent.ts', '--port', '0', '--allowed-origins', siteUrl],
    /listening on http:/,
    { env: { OPENAI_API_KEY: '', OPENAI_BASE_URL: '' } },
  );
  serverUrl = /(http:\/\/\S+)/.exec(cli.line)![1]!;
  gatedModel = await startGatedModel(() => ({ content: ['Once ', 'upon ', 'a ', 'time.'] }));
  gatedCli = await startCli(
    ['serve', '--agent', 'examples/use-chat/agent.ts', '--port', '0', '--allowed-origins', siteUrl],
    /listening on http:/,
    { env: { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: gatedModel.baseURL, OPENAI_MODEL: 'gated' } },
  );
  gatedServerUrl = /(http:\/\/\S+)/.exec(gatedCli.line)![1]!;
  browser = await launchBrowser();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await cli?.stop();
  await gatedCli?.stop();
  await gatedModel?.close();
  await new Promise((resolve) => site?.close(resolve));
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('examples/use-chat: useChat against lagent serve in Chromium', () => {
  it('streams replies, shows tool calls inline, approves and declines, shows the sub-agent at work', async () => {
    const problems: string[] = [];
    const page = await openPage(browser, problems);
    await page.goto(`${siteUrl}/?server=${encodeURIComponent(serverUrl)}`);
    const input = page.getByLabel('message');
    const send = async (text: string) => {
      await input.fill(text);
      await page.getByRole('button', { name: 'Send' }).click();
    };

    await send('weather in Paris');
    await page.locator('.tool.output-available', { hasText: 'sunny and 21 °C in Paris' }).waitFor();
    await page
      .locator('.message.assistant p', { hasText: 'Here is what I found: sunny and 21 °C in Paris' })
      .waitFor();
    expect(await page.locator('.reasoning').first().textContent()).toBe('The user wants Weather.');

    await send('research A2A');
    await page.locator('[data-testid=subagent].done', { hasText: 'researcher' }).waitFor();
    expect(await page.locator('[data-testid=subagent]').last().textContent()).toContain(
      'Search({"query":"A2A"}) → A2A is an open protocol',
    );
    await page.locator('.message.assistant p', { hasText: '3 sources agree' }).waitFor();

    await send('delete notes.txt');
    const waiting = page.locator('.tool.approval-requested', { hasText: 'DeleteFile({"name":"notes.txt"})' });
    await waiting.waitFor();
    const shot = await page.screenshot({ path: `${SHOTS}use-chat-approval.png`, fullPage: true });
    const stats = await pixelStats(browser, shot);
    expect(stats.variance).toBeGreaterThan(100);
    expect(stats.colours).toBeGreaterThan(20);
    await waiting.getByRole('button', { name: 'Approve' }).click();
    await page.locator('.tool.output-available', { hasText: 'deleted notes.txt' }).waitFor();
    await page
      .locator('.message.assistant p', { hasText: 'Here is what I found: deleted notes.txt' })
      .waitFor();

    await send('delete keep.txt');
    const second = page.locator('.tool.approval-requested', { hasText: 'keep.txt' });
    await second.getByRole('button', { name: 'Decline' }).click();
    await page.locator('.tool.output-denied', { hasText: 'keep.txt' }).waitFor();
    await page.locator('.message.assistant p', { hasText: /declined/ }).waitFor();
    await page.locator('.status.ready').waitFor();
    await page.screenshot({ path: `${SHOTS}use-chat.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});

describe('examples/use-chat: useChat({ resume: true }) in Chromium', () => {
  it('a page reloaded mid-reply picks the reply up from the run, and the message completes', async () => {
    const problems: string[] = [];
    const page = await openPage(browser, problems);
    await page.goto(`${siteUrl}/?server=${encodeURIComponent(gatedServerUrl)}`);
    await page.getByLabel('message').fill('tell a story');
    await page.getByRole('button', { name: 'Send' }).click();
    const request = await gatedModel.request(0);
    await page.locator('.message.assistant p', { hasText: 'Once' }).waitFor();
    // The chat's id is in the address: the reload comes back to the same chat.
    expect(page.url()).toMatch(/[?&]chat=/);
    await page.reload();
    await page.locator('.message.user', { hasText: 'tell a story' }).waitFor();
    await page.locator('.message.assistant p', { hasText: 'Once' }).waitFor();
    await page.locator('.status.streaming').waitFor();
    request.release(3);
    await page.locator('.message.assistant p', { hasText: 'Once upon a time.' }).waitFor();
    await page.locator('.status.ready').waitFor();
    expect(await page.locator('.message.assistant').count()).toBe(1);
    expect(await page.locator('.message.assistant').textContent()).toBe('Once upon a time.');
    // The reply was made once: the reload did not ask the model again.
    expect(gatedModel.requests).toHaveLength(1);
    expect(request.aborted).toBe(false);
    const shot = await page.screenshot({ path: `${SHOTS}use-chat-resumed.png`, fullPage: true });
    expect((await pixelStats(browser, shot)).variance).toBeGreaterThan(100);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
