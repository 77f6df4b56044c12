// Builds the page of `lagent ui` (src/ui/page/) into dist/ui/: one minified script (preact and marked's lexer
// bundled in), one stylesheet and the HTML, so the page needs no network when it is served. Run after tsup, which
// empties dist/.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const page = fileURLToPath(new URL('../src/ui/page/', import.meta.url));
const out = fileURLToPath(new URL('../dist/ui/', import.meta.url));
mkdirSync(out, { recursive: true });
const shared = { bundle: true, minify: true, legalComments: 'none', logLevel: 'warning', outdir: out };
await Promise.all([
  build({
    ...shared,
    entryPoints: { app: `${page}main.jsx` },
    format: 'iife',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
  }),
  build({ ...shared, entryPoints: { app: `${page}app.css` } }),
]);
copyFileSync(`${page}index.html`, `${out}index.html`);
const size = (name) => {
  const bytes = readFileSync(`${out}${name}`);
  return `${name} ${(bytes.length / 1024).toFixed(1)} kB (${(gzipSync(bytes).length / 1024).toFixed(1)} kB gzipped)`;
};
console.log(`build-ui: dist/ui/ ${['index.html', 'app.js', 'app.css'].map(size).join(', ')}`);
