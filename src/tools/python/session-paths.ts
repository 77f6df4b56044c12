import { createHash } from 'node:crypto';
import { lstatSync, realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';

/** Longest encoded session key kept whole in a directory name (names are at most 255 bytes). */
const MAX_NAME = 160;

/**
 * The directory name of a session under `workDir`: `session-` and the key with every byte outside
 * `[A-Za-z0-9._-]` written as `%XX` (so `a/b`, `a_b` and `a?b` get three directories, and no key names a path
 * outside `workDir`). A key too long for a file name keeps its start and gets a hash of the whole.
 */
export function sessionDirName(key: string): string {
  let name = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const char = String.fromCharCode(byte);
    name += /[A-Za-z0-9._-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (name.length > MAX_NAME) {
    const digest = createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 32);
    name = `${name.slice(0, MAX_NAME - 33)}~${digest}`;
  }
  return `session-${name}`;
}

/**
 * The image paths a reply may return: regular files inside the session directory, reached without any
 * symbolic link. The reply comes from a process the user's code shares, so its paths are claims to check,
 * never paths to trust (`/etc/shadow`, or a link to it, is dropped).
 */
export function confineImages(sessionDir: string, paths: string[]): string[] {
  let root: string;
  try {
    root = realpathSync(sessionDir);
  } catch {
    return [];
  }
  const kept: string[] = [];
  for (const path of paths) {
    if (typeof path !== 'string' || path.includes('\0')) continue;
    const absolute = resolve(sessionDir, path);
    try {
      const real = realpathSync(absolute);
      const inside = relative(root, real);
      if (inside === '' || inside.startsWith(`..${sep}`) || inside === '..' || isAbsolute(inside)) continue;
      // No link on the way: the path as given resolves to itself (relative to the real session directory).
      if (resolve(root, relative(resolve(sessionDir), absolute)) !== real) continue;
      if (!lstatSync(real).isFile()) continue;
      kept.push(absolute);
    } catch {
      // gone, or unreadable: not an image
    }
  }
  return kept;
}
