import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

/**
 * Finding what a session without a sandbox started outside its process group. Killing the group misses a
 * process the code put in a session of its own (`setsid`, `start_new_session=True`, a daemon). Each such
 * driver gets `LAGENT_SESSION_TAG=<random>` in its environment, which its descendants inherit, and the
 * processes whose environment holds the tag are killed with it. Best effort: code that clears the variable
 * in a child's environment hides that child (under bubblewrap the PID namespace ends everything instead).
 */
export const TAG_VARIABLE = 'LAGENT_SESSION_TAG';

function tagged(environ: Buffer, needles: Buffer[]): boolean {
  return needles.some((needle) => environ.includes(needle));
}

function needlesOf(tags: Iterable<string>): Buffer[] {
  return [...tags].map((tag) => Buffer.from(`\0${TAG_VARIABLE}=${tag}\0`));
}

function signal(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // ended meanwhile
  }
}

/** One pass over `/proc`: kills the tagged processes and says how many it found. */
async function sweep(needles: Buffer[]): Promise<number> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return 0;
  }
  let found = 0;
  await Promise.all(
    entries.map(async (entry) => {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) return;
      try {
        const environ = Buffer.concat([Buffer.of(0), await readFile(`/proc/${entry}/environ`)]);
        if (tagged(environ, needles)) {
          found++;
          signal(Number(entry));
        }
      } catch {
        // ended meanwhile, or not ours to read
      }
    }),
  );
  return found;
}

/**
 * Kills every process whose environment carries one of `tags` (reading `/proc`), without blocking; passes
 * again while the last pass found any (a process may have forked meanwhile), at most five times.
 */
export async function killTagged(tags: Iterable<string>): Promise<void> {
  const needles = needlesOf(tags);
  if (needles.length === 0) return;
  for (let pass = 0; pass < 5 && (await sweep(needles)) > 0; pass++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The same, blocking: for a process that is exiting. */
export function killTaggedSync(tags: Iterable<string>): void {
  const needles = needlesOf(tags);
  if (needles.length === 0) return;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = Buffer.concat([Buffer.of(0), readFileSync(`/proc/${entry}/environ`)]);
      if (tagged(environ, needles)) signal(Number(entry));
    } catch {
      // ended meanwhile, or not ours to read
    }
  }
}
