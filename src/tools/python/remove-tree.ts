import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';

/**
 * Removing a session directory the code inside shaped as it liked. The code can nest directories thousands
 * deep (paths far past PATH_MAX, which no path-based call can reach, and deep enough to overflow a recursive
 * remover's stack), leave directories without write permission, or leave hundreds of thousands of files. So
 * the tree is removed by `rm -rf` in a child process: it walks any depth with `openat`/`unlinkat`, never
 * follows a symbolic link, and keeps the work off this thread. A failure is retried once after making the
 * tree writable (`chmod -R u+rwx`), then reported as a process warning; nothing here throws.
 */

function warn(dir: string, why: string): void {
  process.emitWarning(`could not remove the Python session directory ${dir}: ${why}`, {
    code: 'LAGENT_PYTHON_CLEANUP',
  });
}

function runTool(command: string, args: string[]): Promise<number | Error> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'ignore' });
    child.once('error', (error) => resolve(error));
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/** Removes `dir` and everything in it without blocking the event loop; resolves when done (or reported). */
export async function removeTree(dir: string): Promise<void> {
  try {
    let result = await runTool('rm', ['-rf', '--', dir]);
    if (result instanceof Error) {
      // No rm here: Node's own remover, which handles ordinary trees.
      await rm(dir, { recursive: true, force: true, maxRetries: 2 });
      return;
    }
    if (result !== 0 && existsSync(dir)) {
      await runTool('chmod', ['-R', 'u+rwx', '--', dir]);
      result = await runTool('rm', ['-rf', '--', dir]);
    }
    if (existsSync(dir)) warn(dir, `rm -rf ended with ${String(result)}`);
  } catch (error) {
    warn(dir, error instanceof Error ? error.message : String(error));
  }
}

/** The same, blocking: for a process that is exiting and cannot wait for a child asynchronously. */
export function removeTreeSync(dir: string): void {
  try {
    const removed = spawnSync('rm', ['-rf', '--', dir], { stdio: 'ignore', timeout: 60_000 });
    if (removed.error) rmSync(dir, { recursive: true, force: true });
    else if (removed.status !== 0 && existsSync(dir)) {
      spawnSync('chmod', ['-R', 'u+rwx', '--', dir], { stdio: 'ignore', timeout: 60_000 });
      spawnSync('rm', ['-rf', '--', dir], { stdio: 'ignore', timeout: 60_000 });
    }
    if (existsSync(dir)) warn(dir, 'rm -rf could not remove it');
  } catch (error) {
    warn(dir, error instanceof Error ? error.message : String(error));
  }
}
