import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/*
 * The published types type-check in a project that installed lagent-ts with only what it requires — no
 * optional peer (fastify, ioredis, bullmq, pg, the MCP SDK, ...) — under `skipLibCheck: false`, from ESM
 * and from CommonJS. The package is the packed tarball of dist/ (`npm run build` first).
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  exports: Record<string, unknown>;
};
const OPTIONAL = Object.keys(pkg.peerDependenciesMeta).filter(
  (name) => pkg.peerDependenciesMeta[name]?.optional,
);
const REQUIRED_PEERS = Object.keys(pkg.peerDependencies).filter((name) => !OPTIONAL.includes(name));
const ENTRIES = Object.keys(pkg.exports)
  .filter((entry) => entry !== './package.json')
  .map((entry) => (entry === '.' ? 'lagent-ts' : `lagent-ts/${entry.slice(2)}`));

let project: string;

/** Links a package of this repository's node_modules into the project (its realpath keeps its own dependencies). */
function link(name: string): void {
  const target = join(project, 'node_modules', name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules', name), target, 'dir');
}

beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'index.d.ts')))
    throw new Error('dist/ is missing: run npm run build first');
  project = mkdtempSync(join(tmpdir(), 'lagent-types-'));
  execFileSync('npm', ['pack', '--pack-destination', project, '--silent'], { cwd: ROOT, stdio: 'ignore' });
  const tarball = readdirSync(project).find((file) => file.endsWith('.tgz'))!;
  const installed = join(project, 'node_modules', 'lagent-ts');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['xzf', join(project, tarball), '-C', installed, '--strip-components=1']);
  for (const name of [...Object.keys(pkg.dependencies), ...REQUIRED_PEERS, '@types/node', 'undici-types'])
    link(name);
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  const uses = ENTRIES.map((entry, i) => `import * as entry${i} from '${entry}';`).join('\n');
  const names = ENTRIES.map((_, i) => `entry${i}`).join(', ');
  // A few of the types users meet first, so the declarations are not only parsed but used.
  writeFileSync(
    join(project, 'esm.ts'),
    `${uses}
import { AsyncAgent, AsyncFunctionCallingAgent, type AgentMessage } from 'lagent-ts';
import type { HTTPAgentServerOptions } from 'lagent-ts/distributed/http';
import type { RedisStoreOptions } from 'lagent-ts/stores';
declare const agent: AsyncAgent;
declare const tools: AsyncFunctionCallingAgent;
const reply: Promise<AgentMessage> = agent.call('hi');
export const all = [${names}, reply, tools];
export type Options = [HTTPAgentServerOptions, RedisStoreOptions];
`,
  );
  writeFileSync(
    join(project, 'cjs.cts'),
    `${ENTRIES.map((entry, i) => `import entry${i} = require('${entry}');`).join('\n')}
export const all = [${names}];
`,
  );
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
      },
      files: ['esm.ts', 'cjs.cts'],
    }),
  );
}, 120_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('the published types', () => {
  it('no optional peer can be found from the project', () => {
    const require = createRequire(join(project, 'esm.ts'));
    for (const name of OPTIONAL) expect(() => require.resolve(name), name).toThrow();
  });

  it('check with skipLibCheck: false, from ESM and CommonJS, without the optional peers', () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(`${run.stdout}${run.stderr}`).toBe('');
    expect(run.status).toBe(0);
  }, 300_000);
});
