import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigurationError } from '../schema/errors';

/** The page's files, built by `scripts/build-ui.mjs` into the package's `dist/ui/`. */
export interface UIAssets {
  html: string;
  js: string;
  css: string;
}

/** The names of the built files in `dist/ui/`. */
export const UI_FILES = { html: 'index.html', js: 'app.js', css: 'app.css' } as const;

/** This module's file: `import.meta.url` in ESM (sources and the ESM build), `__filename` in the CJS build. */
function currentFile(): string {
  const url: unknown = import.meta.url;
  return typeof url === 'string' && url.startsWith('file:') ? fileURLToPath(url) : __filename;
}

/**
 * The package's `dist/ui/` directory: found by walking up from this module (in `src/ui/` or somewhere in
 * `dist/`) to the folder of lagent-ts's `package.json`.
 */
export function defaultAssetsDir(): string {
  let dir = dirname(currentFile());
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'lagent-ts') {
          return join(dir, 'dist', 'ui');
        }
      } catch {
        // not a readable manifest: keep looking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return join(dirname(currentFile()), 'ui');
    dir = parent;
  }
}

/** Reads the built page from `dir`; a {@link ConfigurationError} when it was not built. */
export function readAssets(dir: string = defaultAssetsDir()): UIAssets {
  const read = (name: string) => {
    const file = join(dir, name);
    if (!existsSync(file)) {
      throw new ConfigurationError({
        message: `the UI page is not built: ${file} is missing (run node scripts/build-ui.mjs, or npm run build)`,
      });
    }
    return readFileSync(file, 'utf8');
  };
  return { html: read(UI_FILES.html), js: read(UI_FILES.js), css: read(UI_FILES.css) };
}
