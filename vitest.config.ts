import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

/**
 * Three projects. `unit`: the library's core in process (no Redis, no sandbox, no MCP server; seconds);
 * `types`: the type-level tests (`*.test-d.ts`, checked by tsc); `integration`: real tools, servers, queues,
 * MCP servers, the CLI, the examples and Python interop. `npm test` runs all three; `npm run test:unit` and
 * `npm run test:watch` only the first.
 */
const UNIT = [
  'core',
  'schema',
  'memory',
  'prompts',
  'hooks',
  'agents',
  'actions',
  'llms',
  'utils',
  'testing',
];
const INTEGRATION = [
  'bridge',
  'tools',
  'distributed',
  'mcp',
  'cli',
  'examples',
  'interop',
  'stores',
  'ui',
  'retrieval',
  'docs',
  'runtimes',
];
/**
 * Tests of the unit folders that start processes or worker threads (crash trials, the sync
 * model clients and their servers in workers): they run with the integration tests, so the unit project
 * stays in process and fast.
 */
const OUT_OF_PROCESS = [
  'test/agents/durable-kill.test.ts',
  'test/agents/durable-stop.test.ts',
  'test/agents/durable-composite.test.ts',
  'test/agents/keep-shape.test.ts',
  'test/llms/gpt-api.test.ts',
  'test/llms/gpt-api-tools.test.ts',
  'test/llms/openai-responses-sync.test.ts',
  'test/llms/claude/claude-agents.test.ts',
  'test/llms/claude/missing-sdk.test.ts',
  'test/agents/prebuilt/function-calling-agent-bridge.test.ts',
  'test/llms/ai-sdk-model-bridge.test.ts',
  'test/llms/raw-prompt-models-bridge.test.ts',
  'test/llms/wrappers/fallback-bridge.test.ts',
  'test/utils/text-python.test.ts',
];

/**
 * The unit files with property tests (they import fast-check). The unit project runs their properties with a
 * tenth of their runs (`propertyRuns` in test/helpers/property-runs.ts); the integration project runs these
 * files again with all of them.
 */
const PROPERTY = UNIT.flatMap((folder) =>
  readdirSync(`test/${folder}`, { recursive: true, encoding: 'utf8' })
    .map((file) => `test/${folder}/${file}`)
    .filter((file) => file.endsWith('.test.ts') && !OUT_OF_PROCESS.includes(file))
    .filter((file) => /from 'fast-check'/.test(readFileSync(file, 'utf8'))),
);

export default defineConfig({
  resolve: {
    alias: [
      { find: /^lagent-ts$/, replacement: src('index.ts') },
      { find: /^lagent-ts\/(.+)$/, replacement: src('$1/index.ts') },
      // The tests reach what no entry exports (a module's internals) as `#src/<path>`.
      { find: /^#src\/(.+)$/, replacement: src('$1') },
    ],
  },
  test: {
    // When the suite is done, no process a test started may still be running.
    globalSetup: ['test/leftover-processes.ts'],
    testTimeout: 20_000,
    // expect.poll() waits for what a test expects to happen (a request arriving, a tool starting): it ends as
    // soon as that holds, and fails only when it never does, not because a busy machine was slow.
    expect: { poll: { timeout: 10_000 } },
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: UNIT.map((folder) => `test/${folder}/**/*.test.ts`),
          exclude: OUT_OF_PROCESS,
          // In-process tests share their workers' module graph: each file no longer imports the library
          // afresh (13 s of the 40 s this project took isolated). Such a test must not depend on a clean process.
          pool: 'threads',
          isolate: false,
          provide: { propertyRuns: 'fewer' },
        },
      },
      {
        extends: true,
        test: {
          name: 'types',
          include: [],
          typecheck: {
            enabled: true,
            only: true,
            include: ['test/**/*.test-d.ts'],
            tsconfig: './tsconfig.json',
            ignoreSourceErrors: true,
          },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: [
            ...INTEGRATION.map((folder) => `test/${folder}/**/*.test.ts`),
            'test/*.test.ts',
            ...OUT_OF_PROCESS,
            ...PROPERTY,
          ],
          provide: { propertyRuns: 'all' },
        },
      },
    ],
  },
});
