import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SyncBridgeError } from '../schema/errors';

/** Where the bridge worker lives and which module holds lagent-ts's classes, for the running layout. */
export interface BridgeLocation {
  /** Absolute path of the worker entry. */
  worker: string;
  /** Absolute path of lagent-ts's root entry, the default module bridged classes come from. */
  library: string;
  /** Absolute path of lagent-ts's `tools` entry (the sync tools host their async twins from it). */
  tools: string;
  /** Absolute path of the internal `bridge-hosts` entry: hosts that no public entry exports (the sync HTTP client's, the fake servers'). */
  hosts: string;
  /** Running from TypeScript sources: the worker must register tsx before loading `worker`. */
  typescript: boolean;
  /** file: URL of tsx's ESM register API, when `typescript`. */
  tsxApi?: string | undefined;
}

/**
 * This module's own file: `import.meta.url` in ESM (sources and the ESM build); in the CJS build, where the
 * bundler leaves `import.meta` empty, the module-scoped `__filename`. `import.meta` is checked first because
 * some contexts (eval'd workers, REPLs) define a global `__filename` that is not this file.
 */
function currentFile(): string {
  const url: unknown = import.meta.url;
  if (typeof url === 'string' && url.startsWith('file:')) return fileURLToPath(url);
  return __filename;
}

function findTsxApi(from: string): string | undefined {
  try {
    const manifest = createRequire(from).resolve('tsx/package.json');
    const api = join(dirname(manifest), 'dist', 'esm', 'api', 'index.mjs');
    return existsSync(api) ? pathToFileURL(api).href : undefined;
  } catch {
    return undefined;
  }
}

let cached: BridgeLocation | undefined;

/**
 * Finds the worker entry for the three ways lagent-ts runs:
 * - from TypeScript sources (vitest, tsx): `src/bridge/worker.ts`, loaded after registering tsx;
 * - from the ESM build: `dist/sync-bridge-worker.js` next to `dist/index.js`;
 * - from the CJS build: `dist/sync-bridge-worker.cjs` next to `dist/index.cjs`.
 * The bundler may put this code in a chunk, so the build layout is searched in this file's folder and its parent.
 */
export function locateBridge(): BridgeLocation {
  if (cached) return cached;
  const file = currentFile();
  const folder = dirname(file);
  const extension = extname(file);
  if (extension === '.ts' || extension === '.mts' || extension === '.cts') {
    const worker = join(folder, 'worker.ts');
    const library = join(folder, '..', 'index.ts');
    const tsxApi = findTsxApi(file);
    if (!existsSync(worker)) {
      throw new SyncBridgeError({ message: `sync bridge worker not found at ${worker}` });
    }
    if (tsxApi === undefined) {
      throw new SyncBridgeError({
        message:
          'lagent-ts is running from its TypeScript sources, and its sync bridge worker needs tsx to load them; install tsx or use the built package',
      });
    }
    cached = {
      worker,
      library,
      tools: join(folder, '..', 'tools', 'index.ts'),
      hosts: join(folder, '..', 'bridge-hosts', 'index.ts'),
      typescript: true,
      tsxApi,
    };
    return cached;
  }
  for (const candidate of [folder, dirname(folder)]) {
    const worker = join(candidate, `sync-bridge-worker${extension}`);
    const library = join(candidate, `index${extension}`);
    if (existsSync(worker) && existsSync(library)) {
      cached = {
        worker,
        library,
        tools: join(candidate, 'tools', `index${extension}`),
        hosts: join(candidate, 'bridge-hosts', `index${extension}`),
        typescript: false,
      };
      return cached;
    }
  }
  throw new SyncBridgeError({
    message: `sync bridge worker not found: expected sync-bridge-worker${extension} next to ${file} (was lagent-ts bundled into another file? the worker must stay a separate file)`,
  });
}
