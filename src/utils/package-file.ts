import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/*
 * Files of the package that are not JavaScript modules (the Python interpreters' driver, the page-extraction
 * worker): kept as real files in `src/` so they are linted as what they are, and copied by the build to the same
 * place under `dist/` (scripts/copy-assets.mjs). This module finds them in the three layouts lagent-ts runs from:
 * the TypeScript sources (this file is `src/utils/package-file.ts`), and the ESM and CJS builds, where this code
 * is bundled into a file of `dist/` or of one of its entry folders (`dist/tools/index.js`).
 */

/** This module's own file: `import.meta.url` in ESM; in the CJS build, where `import.meta` is empty, `__filename`. */
function currentFile(): string {
  const url: unknown = import.meta.url;
  if (typeof url === 'string' && url.startsWith('file:')) return fileURLToPath(url);
  return __filename;
}

const texts = new Map<string, string>();

/**
 * The text of a package file, by its path under `src/` (`'tools/python/driver.py'`); read once. Throws when the
 * file is missing (a package bundled without its assets).
 */
export function packageFileText(path: string): string {
  let text = texts.get(path);
  if (text !== undefined) return text;
  const folder = dirname(currentFile());
  const candidates = [join(folder, '..', path), join(folder, path), join(folder, '..', '..', path)];
  const found = candidates.find((candidate) => existsSync(candidate));
  if (found === undefined) {
    throw new Error(
      `lagent-ts: ${path} is missing next to ${folder} (was lagent-ts bundled into another file? its assets must be copied too)`,
    );
  }
  text = readFileSync(found, 'utf8');
  texts.set(path, text);
  return text;
}
