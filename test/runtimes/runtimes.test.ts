import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type FakeOpenAIServer, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/processes';
import { cachedPackage } from '../helpers/registry-packages';

/*
 * The root entry runs on Bun, Deno and Cloudflare's workerd (with `nodejs_compat`), not only on Node: the same
 * smoke (fixtures/smoke.mjs: a function-calling loop, a stream, a state dict on the built dist/) gives the
 * same result on each. The runtimes are the binaries the npm packages `bun`, `deno` and `workerd` install
 * (their platform packages, fetched once into the cache: no install script runs). Each run takes about a
 * second; the first fetch about 140 MB.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** The runtimes, pinned: each is the platform package its npm package (`bun`, `deno`, `workerd`) depends on. */
const RUNTIMES = {
  bun: { name: '@oven/bun-linux-x64', version: '1.4.5', bin: 'bin/bun' },
  deno: { name: '@deno/linux-x64-glibc', version: '2.9.6', bin: 'deno' },
  workerd: { name: '@cloudflare/workerd-linux-64', version: '1.20261117.1', bin: 'bin/workerd' },
} as const;

const SUPPORTED = process.platform === 'linux' && process.arch === 'x64';
if (!SUPPORTED)
  console.warn(
    `runtimes.test.ts: SKIPPED — the pinned runtimes are linux-x64 builds, this is ${process.platform}-${process.arch}`,
  );

function runtime(kind: keyof typeof RUNTIMES): string {
  const { name, version, bin } = RUNTIMES[kind];
  return join(cachedPackage(name, version), bin);
}

let server: FakeOpenAIServer;

/**
 * Runs a program to its end without blocking this thread (the fake OpenAI server the smoke asks lives in
 * it).
 */
function run(command: string, args: string[], cwd = ROOT) {
  return runProcess(command, args, {
    cwd,
    timeoutMs: 120_000,
    env: { ...process.env, NO_COLOR: '1', LAGENT_SMOKE_OPENAI_URL: server.baseURL },
  });
}

/** The smoke's result line: the last line of output that is a JSON object. */
function resultOf(output: string): unknown {
  const line = output
    .split('\n')
    .reverse()
    .find((text) => text.startsWith('{'));
  return line === undefined ? undefined : JSON.parse(line);
}

let expected: unknown;
let work: string;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'index.js')))
    throw new Error('dist/ is missing: run npm run build first');
  server = await startFakeOpenAI({
    script: (request) => `hi (${request.body?.stream === true ? 'stream' : 'plain'})`,
  });
  const node = await run(process.execPath, [join(FIXTURES, 'run.mjs')]);
  expect(node.code, node.stderr).toBe(0);
  expected = resultOf(node.stdout);
  expect(expected).toMatchObject({
    reply: 'the sum is 5',
    streamed: 'hello',
    client: { plain: 'hi (plain)', streamed: 'hi (stream)' },
  });
  work = mkdtempSync(join(tmpdir(), 'lagent-runtimes-'));
}, 60_000);

afterAll(async () => {
  if (work) rmSync(work, { recursive: true, force: true });
  await server?.close();
});

describe.skipIf(!SUPPORTED)('the root entry on other runtimes', () => {
  it('Bun runs it as Node does, the OpenAI client included', async () => {
    const bun = runtime('bun');
    const result = await run(bun, [join(FIXTURES, 'run.mjs')]);
    expect(result.code, result.stderr).toBe(0);
    expect(resultOf(result.stdout)).toEqual(expected);
  }, 300_000);

  it('Deno runs it as Node does, the OpenAI client included (read, env and loopback permissions)', async () => {
    const deno = runtime('deno');
    const args = ['run', '--allow-read', '--allow-env', '--allow-net=127.0.0.1', join(FIXTURES, 'run.mjs')];
    const result = await run(deno, args);
    expect(result.code, result.stderr).toBe(0);
    expect(resultOf(result.stdout)).toEqual(expected);
  }, 300_000);

  it('workerd runs it bundled as a Worker with nodejs_compat', async () => {
    const workerd = runtime('workerd');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      peerDependenciesMeta: Record<string, unknown>;
    };
    // As a Worker's bundler does: Node's built-ins are the runtime's, and the optional peers are not bundled.
    await build({
      entryPoints: [join(FIXTURES, 'worker.mjs')],
      bundle: true,
      format: 'esm',
      platform: 'node',
      conditions: ['workerd', 'worker'],
      external: Object.keys(pkg.peerDependenciesMeta),
      outfile: join(work, 'worker.bundle.mjs'),
      logLevel: 'error',
    });
    writeFileSync(
      join(work, 'config.capnp'),
      `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.mjs", esModule = embed "worker.bundle.mjs") ],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = ["nodejs_compat"],
);
`,
    );
    const result = await run(workerd, ['test', 'config.capnp'], work);
    const output = `${result.stdout}${result.stderr}`;
    expect(result.code, output).toBe(0);
    expect(output).toContain('[ PASS ] main');
    // The Worker asks no model server (workerd reaches no loopback address by default).
    const { client: _, ...withoutClient } = expected as Record<string, unknown>;
    expect(resultOf(output.replace(/^.*?(?=\{)/gm, ''))).toEqual(withoutClient);
  }, 300_000);
});
