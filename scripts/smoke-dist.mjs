// Checks the built package the way users load it: bundles two entries with `lagent-ts` left external
// (so Node resolves it to dist/ through the package's own exports), once as ESM and once as CommonJS,
// runs them, and compares their output. The entries are the quickstart example on the mock model, and the
// quickstart's agent on the sync GPTAPI (through the worker-thread bridge) against the fake server.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const out = new URL('../.smoke/', import.meta.url);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const entries = {
  quickstart: "import { main } from '../examples/quickstart';\nmain();\n",
  bridge: [
    "import { Agent, GPTAPI } from 'lagent-ts';",
    "import { startFakeOpenAIWorker } from 'lagent-ts/testing';",
    "const server = startFakeOpenAIWorker({ script: ['急'] });",
    "const llm = new GPTAPI({ model: 'smoke', baseURL: server.baseURL, apiKey: 'test' });",
    "console.log('reply: [Agent] ' + new Agent({ llm }).call('今天天气情况').content);",
    'server.close();',
    '',
  ].join('\n'),
  // The sync interpreter hosts its async twin from dist/tools/index.* in the bridge's worker.
  tools: [
    "import { IPythonInteractive } from 'lagent-ts/tools';",
    "const python = new IPythonInteractive({ ipython: false, env: { LAGENT_TEST_RUN: process.env.LAGENT_TEST_RUN ?? '' } });",
    "const result = python.call({ command: 'print(6 * 7)' }, 'run');",
    "console.log('python: ' + (result.errmsg ?? result.toText().trim()));",
    'python.close();',
    '',
  ].join('\n'),
};
const expected = { quickstart: 'reply: [Agent] 急', bridge: 'reply: [Agent] 急', tools: 'python: 42' };

const env = { ...process.env, OPENAI_API_KEY: '', OPENAI_BASE_URL: '' };
for (const [name, source] of Object.entries(entries)) {
  const entry = new URL(`${name}.ts`, out);
  writeFileSync(entry, source);
  const outputs = {};
  for (const format of ['esm', 'cjs']) {
    const file = new URL(`${name}.${format === 'esm' ? 'mjs' : 'cjs'}`, out).pathname;
    await build({
      entryPoints: [entry.pathname],
      bundle: true,
      platform: 'node',
      format,
      outfile: file,
      external: ['lagent-ts', 'lagent-ts/*'],
      // The examples run main() themselves when they are the entry script; here the entry calls it.
      define: { 'import.meta.url': '"bundled"' },
      logLevel: 'error',
    });
    // A timeout guards against a hang; a clean exit proves the bridge worker does not keep node alive.
    outputs[format] = execFileSync(process.execPath, [file], { env, encoding: 'utf8', timeout: 30_000 });
    if (!outputs[format].includes(expected[name])) {
      throw new Error(`the ${format} build did not run ${name}:\n${outputs[format]}`);
    }
  }
  if (outputs.esm !== outputs.cjs)
    throw new Error(`${name}: the ESM and CJS builds printed different output`);
}

// The package's files that are not modules are next to the code that reads them (scripts/copy-assets.mjs); the
// python entry above ran the driver, the page-extraction worker is only read here.
for (const asset of ['tools/python/driver.py', 'tools/web/extract/worker.cjs']) {
  const built = readFileSync(new URL(`../dist/${asset}`, import.meta.url), 'utf8');
  if (built !== readFileSync(new URL(`../src/${asset}`, import.meta.url), 'utf8'))
    throw new Error(`dist/${asset} is not src/${asset}`);
}

// The root entry loads only its four runtime dependencies (and Node's modules): every other package, the CLI's
// included, is reached through a subpath or a dynamic import where it is used. The CLI's own dependencies
// (commander, cli-progress) are reached from no library entry at all: only the `lagent` bin loads them.
const ROOT_DEPENDENCIES = ['openai', 'zod', 'eventemitter3', 'p-retry'];
const CLI_DEPENDENCIES = ['commander', 'cli-progress'];
const isOneOf = (name, packages) => packages.some((dep) => name === dep || name.startsWith(`${dep}/`));
/**
 * The packages a file's static import graph reaches: of its code at load time, or (with `local` mapping
 * `./x.js` to `./x.d.ts`) of its declarations.
 */
const reachedBy = (entry, local = (specifier) => specifier) => {
  const seen = new Set();
  const bare = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const code = readFileSync(file, 'utf8');
    for (const [, specifier] of code.matchAll(
      /^(?:import|export)\b[^'"]*?from\s*["']([^"']+)["']|^import\s*["']([^"']+)["']/gm,
    )) {
      if (specifier === undefined) continue;
      if (specifier.startsWith('.')) visit(fileURLToPath(new URL(local(specifier), `file://${file}`)));
      else if (!specifier.startsWith('node:') && !builtinModules.includes(specifier)) bare.add(specifier);
    }
  };
  visit(fileURLToPath(new URL(`../dist/${entry}`, import.meta.url)));
  return [...bare];
};
const loadedBy = (entry) => reachedBy(entry);
const stray = loadedBy('index.js').filter((name) => !isOneOf(name, ROOT_DEPENDENCIES));
if (stray.length > 0) throw new Error(`the root entry imports ${stray.join(', ')} at load time`);
for (const entry of [
  'testing',
  'tools',
  'distributed',
  'distributed/http',
  'distributed/queue',
  'mcp',
  'stores',
  'retrieval',
]) {
  const cli = loadedBy(`${entry}/index.js`).filter((name) => isOneOf(name, CLI_DEPENDENCIES));
  if (cli.length > 0) throw new Error(`lagent-ts/${entry} imports the CLI's ${cli.join(', ')} at load time`);
}

// lagent-ts/distributed/http's types (every declaration file they reach) name neither bullmq nor ioredis, so an
// HTTP-only user needs neither installed.
const queuePeers = reachedBy('distributed/http/index.d.ts', (specifier) =>
  specifier.replace(/\.js$/, '.d.ts'),
).filter((name) => /^(bullmq|ioredis)$/.test(name));
if (queuePeers.length > 0)
  throw new Error(`lagent-ts/distributed/http's types need ${queuePeers.join(', ')}`);

// The package's bin, run the way npm installs it: through a symlink in a .bin folder.
const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const bin = new URL(`.bin/${Object.keys(manifest.bin)[0]}`, out);
mkdirSync(new URL('.bin/', out), { recursive: true });
symlinkSync(fileURLToPath(new URL(`../${manifest.bin.lagent}`, import.meta.url)), bin);
const help = execFileSync(fileURLToPath(bin), ['--help'], { env, encoding: 'utf8', timeout: 30_000 });
const version = execFileSync(fileURLToPath(bin), ['--version'], { env, encoding: 'utf8', timeout: 30_000 });
if (
  !['chat', 'serve', 'worker', 'batch'].every((command) => help.includes(command)) ||
  version.trim() !== manifest.version
) {
  throw new Error(`the lagent bin did not answer --help / --version:\n${help}\n${version}`);
}
console.log(
  'dist smoke test: the ESM and CJS builds run the quickstart, GPTAPI through the bridge, and a sync Python interpreter; the lagent bin runs through a .bin symlink',
);
