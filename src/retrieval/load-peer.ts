import { createRequire } from 'node:module';
import { missingPeer } from '../schema/errors';

/**
 * Loads an optional peer with `require` from this module's place (the ESM and CJS builds alike), failing
 * with "install <packages> to use <feature>" when it is missing.
 */
export function requirePeer<T>(name: string, packages: readonly string[], feature: string): T {
  try {
    const from: unknown = import.meta.url;
    const base = typeof from === 'string' && from.startsWith('file:') ? from : __filename;
    return createRequire(base)(name) as T;
  } catch (error) {
    throw missingPeer(packages, feature, error);
  }
}

/** Loads an optional ES-module peer with `import()`, failing as {@link requirePeer} does. */
export async function importPeer<T>(name: string, packages: readonly string[], feature: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    throw missingPeer(packages, feature, error);
  }
}
