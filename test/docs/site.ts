import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, relative, sep } from 'node:path';
import { ROOT } from './code-blocks';

/**
 * Helpers of the docs site's tests: building it when its sources changed, serving the built folder on
 * 127.0.0.1, and checking every link between its pages.
 */

export const SITE = join(ROOT, 'docs', '.vitepress', 'dist');
export const SHOTS = join(ROOT, 'reports', 'docs');

/** The newest modification time of the files under `dir` (recursively), skipping build output. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'dist' || entry.name === 'cache' || entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/**
 * Runs `npm run docs`'s two steps (VitePress, then TypeDoc into the site's api/) when the site is missing or
 * older than its sources: the docs pages, their configuration, the examples they show, the TSDoc in src/.
 * Returns how long the build took, in ms (0 when the site was up to date).
 */
export function ensureSite(): number {
  const built = join(SITE, 'api', 'index.html');
  const sources = Math.max(
    newest(join(ROOT, 'docs')),
    newest(join(ROOT, 'src')),
    newest(join(ROOT, 'examples')),
    statSync(join(ROOT, 'typedoc.json')).mtimeMs,
  );
  if (existsSync(built) && statSync(built).mtimeMs >= sources && existsSync(join(SITE, 'index.html')))
    return 0;
  const started = performance.now();
  const bin = (path: string) => join(ROOT, 'node_modules', path);
  execFileSync(process.execPath, [bin('vitepress/bin/vitepress.js'), 'build', 'docs'], {
    cwd: ROOT,
    stdio: 'pipe',
  });
  execFileSync(process.execPath, [bin('typedoc/bin/typedoc')], { cwd: ROOT, stdio: 'pipe' });
  return performance.now() - started;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

/** A static server of the built site on 127.0.0.1 and a free port, as `vitepress preview` serves it. */
export async function serveSite(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname);
    let file = normalize(join(SITE, path));
    if (file !== SITE && !file.startsWith(SITE + sep)) {
      response.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) {
      response.writeHead(404, { 'content-type': TYPES['.html'] });
      createReadStream(join(SITE, '404.html')).pipe(response);
      return;
    }
    response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The HTML files of a built site, as paths relative to it (`guide/agents.html`, `api/index.html`). */
export function htmlFiles(root = SITE, dir = root): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...htmlFiles(root, path));
    else if (entry.name.endsWith('.html')) files.push(relative(root, path));
  }
  return files;
}

/** The ids (and `name` anchors) an HTML text defines. */
function anchorsOf(html: string): Set<string> {
  const anchors = new Set<string>();
  for (const [, , value] of html.matchAll(/\s(id|name)="([^"]*)"/g)) anchors.add(decodeEntities(value!));
  return anchors;
}

function decodeEntities(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/**
 * Every link of the given pages of a site (in `root`) that leads nowhere: another page of the site that does not exist, or an
 * anchor the target page does not define. External links (another origin) are not followed: no network.
 * Returns one line per broken link: `<page>: <href> (<why>)`.
 */
export function brokenLinks(pages: readonly string[], root = SITE): string[] {
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (file: string) => {
    let found = anchorCache.get(file);
    if (!found) {
      found = anchorsOf(readFileSync(join(root, file), 'utf8'));
      anchorCache.set(file, found);
    }
    return found;
  };
  const broken: string[] = [];
  for (const page of pages) {
    const html = readFileSync(join(root, page), 'utf8');
    const base = new URL(`http://site/${page.split(sep).join('/')}`);
    for (const [, raw] of html.matchAll(/<a\s[^>]*?href="([^"]*)"/g)) {
      const href = decodeEntities(raw!);
      if (href === '' || /^(mailto|javascript|data):/i.test(href)) continue;
      const target = new URL(href, base);
      if (target.origin !== base.origin) continue;
      let file = decodeURIComponent(target.pathname).slice(1);
      if (file === '' || file.endsWith('/')) file += 'index.html';
      const path = join(root, file);
      if (!existsSync(path) || statSync(path).isDirectory()) {
        broken.push(`${page}: ${href} (no such page)`);
        continue;
      }
      const hash = decodeURIComponent(target.hash.slice(1));
      if (hash === '' || !file.endsWith('.html')) continue;
      if (!anchors(file).has(hash)) broken.push(`${page}: ${href} (no anchor #${hash} in ${file})`);
    }
  }
  return broken;
}
