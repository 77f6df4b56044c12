import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningCli, startCli } from '../cli/helpers';
import { runProcess } from '../helpers/processes';

/**
 * `lagent ui`'s secret. Without `--token` it makes one and prints the page's URL with it; every route that reads
 * or changes anything needs it, so another local user (`nobody`, with curl) is refused: it cannot list the
 * sessions, read a memory or approve a waiting tool call. The page keeps the secret where no other local server
 * can receive it: not in a cookie (cookies ignore ports), but in the tab's sessionStorage, sent as an
 * `Authorization` header by the page's own requests.
 */

declare const document: any;
declare const sessionStorage: any;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const AGENT = fileURLToPath(new URL('./fixtures/ui-agent.ts', import.meta.url));
const CHROMIUM = '/usr/bin/chromium';
const RUNUSER = '/usr/sbin/runuser';
const canSwitchUser = process.getuid?.() === 0 && existsSync(RUNUSER) && existsSync('/usr/bin/curl');

/** Builds dist/ui/ when it is missing or older than the page's sources. */
function ensureBuilt(): void {
  const built = `${ROOT}dist/ui/app.js`;
  const page = `${ROOT}src/ui/page/`;
  const newest = Math.max(...readdirSync(page).map((name) => statSync(`${page}${name}`).mtimeMs));
  if (existsSync(built) && statSync(built).mtimeMs >= newest && existsSync(`${ROOT}dist/ui/index.html`))
    return;
  execFileSync(process.execPath, [`${ROOT}scripts/build-ui.mjs`], { cwd: ROOT, stdio: 'pipe' });
}

/** curl as the local user `nobody`: the status of one request (headers and body as given). */
async function asNobody(method: string, url: string, options: { body?: string; headers?: string[] } = {}) {
  const args = [
    '-u',
    'nobody',
    '--',
    'curl',
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    '--max-time',
    '5',
  ];
  args.push('-X', method);
  for (const header of options.headers ?? []) args.push('-H', header);
  if (options.body !== undefined) args.push('-H', 'content-type: application/json', '--data', options.body);
  const { stdout } = await runProcess(RUNUSER, [...args, url]);
  return Number(stdout);
}

async function start(args: string[] = []): Promise<{ cli: RunningCli; pageUrl: string; base: string }> {
  const cli = await startCli(['ui', '--agent', AGENT, '--port', '0', ...args], /^lagent ui: .* at http/);
  const pageUrl = /(http:\/\/\S+)/.exec(cli.line)![1]!;
  return { cli, pageUrl, base: new URL(pageUrl).origin };
}

describe('lagent ui without --token', () => {
  let cli: RunningCli;
  let pageUrl: string;
  let base: string;
  let secret: string;

  beforeAll(async () => {
    ensureBuilt();
    ({ cli, pageUrl, base } = await start());
    secret = decodeURIComponent(/#token=([^&\s]+)$/.exec(pageUrl)?.[1] ?? '');
  }, 30_000);
  afterAll(async () => {
    if (cli) expect(await cli.stop('SIGTERM')).toBe(0);
  });

  it('makes a secret and prints the page’s URL with it, in the fragment', () => {
    expect(pageUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=[A-Za-z0-9_-]{40,}$/);
    // Another start, another secret.
    expect(secret.length).toBeGreaterThanOrEqual(40);
  });

  it('answers nothing of the agent without it; the page’s own files hold nothing and load', async () => {
    for (const path of ['/ui/info', '/ui/sessions', '/ui/events', '/memory/x', '/nothing-here']) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(401);
      expect(
        (await fetch(`${base}${path}`, { headers: { authorization: 'Bearer wrong' } })).status,
        path,
      ).toBe(401);
    }
    for (const path of ['/', '/ui/app.js', '/ui/app.css']) {
      const answer = await fetch(`${base}${path}`);
      expect(answer.status, path).toBe(200);
      expect(answer.headers.get('set-cookie'), path).toBeNull();
      expect(await answer.text()).not.toContain(secret);
    }
    const info = await fetch(`${base}/ui/info`, { headers: { authorization: `Bearer ${secret}` } });
    expect(info.status).toBe(200);
  });

  it.runIf(canSwitchUser)(
    'refuses another local user: no sessions, no memory, no approval of a waiting tool call',
    async () => {
      const auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
      // The owner's call waits for approval of Delete.
      const asked = await fetch(`${base}/chat_completion`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ message: ['please delete the file'], session_id: 'owner' }),
      });
      const interrupt = (await asked.json()) as { type: string; formatted: { interrupts: { id: string }[] } };
      expect(interrupt.type).toBe('interrupt');
      const id = interrupt.formatted.interrupts[0]!.id;

      expect(await asNobody('GET', `${base}/ui/sessions`)).toBe(401);
      expect(await asNobody('GET', `${base}/ui/info`)).toBe(401);
      expect(await asNobody('GET', `${base}/memory/owner`)).toBe(401);
      expect(await asNobody('GET', `${base}/ui/events`)).toBe(401);
      expect(
        await asNobody('GET', `${base}/memory/owner`, { headers: ['authorization: Bearer guess'] }),
      ).toBe(401);
      const approve = JSON.stringify({
        message: [
          {
            sender: 'user',
            type: 'resume',
            content: 'approve',
            formatted: { decisions: [{ id, approve: true }] },
          },
        ],
        session_id: 'owner',
      });
      expect(await asNobody('POST', `${base}/chat_completion/stream`, { body: approve })).toBe(401);
      expect(await asNobody('POST', `${base}/chat_completion`, { body: approve })).toBe(401);
      expect(await asNobody('POST', `${base}/ui/sessions/owner/reset`, { body: '{}' })).toBe(401);
      expect(await asNobody('PUT', `${base}/ui/state/owner`, { body: '{"memory":[]}' })).toBe(401);

      // The tool did not run, and the owner's session is as it was: the call still waits.
      const memory = (await (await fetch(`${base}/memory/owner`, { headers: auth })).json()) as {
        memory: { content: unknown }[];
      };
      expect(JSON.stringify(memory)).not.toContain('deleted /tmp/a.txt');
      const done = await fetch(`${base}/chat_completion`, { method: 'POST', headers: auth, body: approve });
      expect(((await done.json()) as { content: string }).content).toMatch(/^Done: .*deleted \/tmp\/a\.txt$/);
    },
  );
});

describe('the page keeps the secret from every other local server', () => {
  let cli: RunningCli;
  let pageUrl: string;
  let base: string;
  let browser: Browser;
  let other: http.Server;
  const secret = randomBytes(24).toString('hex');
  /** Every request the other server received: its URL and headers. */
  const seen: { url: string; headers: http.IncomingHttpHeaders }[] = [];

  beforeAll(async () => {
    ensureBuilt();
    other = http.createServer((request, response) => {
      seen.push({ url: request.url ?? '', headers: request.headers });
      response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>other</title>');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    [{ cli, pageUrl, base }, browser] = await Promise.all([
      start(['--token', secret]),
      chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] }),
    ]);
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => other?.close(resolve));
    if (cli) expect(await cli.stop('SIGTERM')).toBe(0);
  });

  it('works from the printed URL, cleans the address, sets no cookie; another port receives no secret', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(8_000);
    const cookies: string[] = [];
    page.on('response', (response) => {
      const cookie = response.headers()['set-cookie'];
      if (cookie) cookies.push(cookie);
    });
    await page.goto(pageUrl, { waitUntil: 'load' });
    await page.getByTestId('tree-node').nth(2).waitFor();
    expect(page.url()).toBe(`${base}/`);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    // The page chats (fetch and its event stream both carry the secret).
    await page.getByTestId('input').fill('hello world');
    await page.getByTestId('send').click();
    await page
      .locator('[data-testid=message] > .content', { hasText: /^echo: hello world$/ })
      .first()
      .waitFor();
    await page.locator('[data-testid=event]').first().waitFor();
    // A reload keeps working: the tab kept the secret.
    await page.reload({ waitUntil: 'load' });
    await page
      .locator('[data-testid=message] > .content', { hasText: /^echo: hello world$/ })
      .first()
      .waitFor();

    // Now another local server, on another port: as a page, and fetched from a page of its own.
    const otherUrl = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
    const visit = await context.newPage();
    await visit.goto(`${otherUrl}/visited`, { waitUntil: 'load' });
    await visit.evaluate((url: string) => fetch(`${url}/fetched`, { credentials: 'include' }), otherUrl);
    await page.goto(`${otherUrl}/from-the-ui-tab`, { waitUntil: 'load' });
    const localhost = otherUrl.replace('127.0.0.1', 'localhost');
    await visit.goto(`${localhost}/by-name`, { waitUntil: 'load' });
    expect(seen.map((request) => request.url)).toEqual(
      expect.arrayContaining(['/visited', '/fetched', '/from-the-ui-tab', '/by-name']),
    );
    for (const request of seen) {
      expect(request.headers.cookie, request.url).toBeUndefined();
      expect(JSON.stringify(request), request.url).not.toContain(secret);
    }
    expect(cookies).toEqual([]);
    expect((await context.cookies()).length).toBe(0);
    // The other origin's storage has nothing of it either.
    expect(await visit.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(secret);
    await context.close();
  }, 40_000);

  it('a page opened without the secret says how to get in, and reads nothing', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(8_000);
    await page.goto(`${base}/`, { waitUntil: 'load' });
    await page
      .getByText(/secret/i)
      .first()
      .waitFor();
    expect(await page.getByTestId('tree-node').count()).toBe(0);
    await context.close();
  }, 20_000);
});
