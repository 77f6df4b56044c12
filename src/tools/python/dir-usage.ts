import { spawn } from 'node:child_process';

/** What a session directory may hold. */
export interface DirLimits {
  files: number;
  bytes: number;
}

/** What a count of a directory found: whether it holds more than the limits allow, and what it counted. */
export interface DirUsage {
  over: boolean;
  files: number;
  bytes: number;
}

const UNKNOWN: DirUsage = { over: false, files: 0, bytes: 0 };

/**
 * Counts the entries and bytes under `dir` with `find` in a child process (never following symlinks, never
 * leaving the file system), so no tree, however deep or large, costs this thread more than reading numbers.
 * Counting stops as soon as either limit is passed. A directory that cannot be counted (find missing, the
 * directory gone) counts as within the limits.
 */
export function measureDir(dir: string, limits: DirLimits): Promise<DirUsage> {
  return new Promise((resolve) => {
    let files = 0;
    let bytes = 0;
    let over = false;
    let rest = '';
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn('find', [dir, '-xdev', '-mindepth', '1', '-printf', '%s\\n'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    } catch {
      resolve(UNKNOWN);
      return;
    }
    child.stdout!.setEncoding('latin1');
    child.stdout!.on('data', (chunk: string) => {
      if (over) return;
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        files++;
        bytes += Number(line) || 0;
      }
      if (files > limits.files || bytes > limits.bytes) {
        over = true;
        child.kill('SIGKILL');
      }
    });
    child.on('error', () => resolve(UNKNOWN));
    child.on('close', () => resolve({ over, files, bytes }));
  });
}
