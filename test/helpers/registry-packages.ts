import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Programs the tests run that the project does not install (other JavaScript runtimes, an old Node): each
 * is a package of the npm registry, fetched once per machine with `npm pack` and unpacked into the cache,
 * as `.ci/run` fetches the Node releases it tests on. Nothing is installed, so no install script runs.
 */

/** Where the packages are kept: `$XDG_CACHE_HOME/lagent-ts/packages`, else `~/.cache/lagent-ts/packages`. */
export const PACKAGE_CACHE = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'),
  'lagent-ts',
  'packages',
);

/**
 * The directory of `name@version` unpacked (its `package/` contents), fetched from the registry on first use.
 * Several test files may ask at once: each unpacks into a directory of its own and renames it into place.
 */
export function cachedPackage(name: string, version: string): string {
  const target = join(PACKAGE_CACHE, `${name.replace('/', '+')}@${version}`);
  if (existsSync(target)) return target;
  mkdirSync(PACKAGE_CACHE, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'lagent-package-'));
  try {
    execFileSync('npm', ['pack', `${name}@${version}`, '--silent'], {
      cwd: work,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 300_000,
    });
    const tarball = readdirSync(work).find((file) => file.endsWith('.tgz'));
    if (tarball === undefined) throw new Error(`npm pack ${name}@${version} wrote no tarball`);
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    execFileSync('tar', ['xzf', join(work, tarball), '-C', unpacked, '--strip-components=1']);
    try {
      renameSync(unpacked, target);
    } catch (error) {
      // Another test file put it in place first.
      if (!existsSync(target)) throw error;
    }
    return target;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
