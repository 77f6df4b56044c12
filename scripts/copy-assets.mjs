// Copies the package's files that are not JavaScript modules from src/ to the same place under dist/, where
// `packageFileText` (src/utils/package-file.ts) finds them. Run after tsup, which empties dist/.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const ASSETS = ['tools/python/driver.py', 'tools/web/extract/worker.cjs'];

for (const asset of ASSETS) {
  const from = fileURLToPath(new URL(`../src/${asset}`, import.meta.url));
  const to = fileURLToPath(new URL(`../dist/${asset}`, import.meta.url));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}
console.log(`copy-assets: ${ASSETS.join(', ')}`);
