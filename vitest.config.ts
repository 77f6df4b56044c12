import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^lagent-ts$/, replacement: src('index.ts') },
      { find: /^lagent-ts\/(.+)$/, replacement: src('$1/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // When the suite is done, no process a test started may still run.
    globalSetup: ['test/leftover-processes.ts'],
    typecheck: {
      enabled: true,
      include: ['test/**/*.test-d.ts'],
      tsconfig: './tsconfig.json',
      ignoreSourceErrors: true,
    },
    testTimeout: 20_000,
    reporters: ['default', ['json', { outputFile: 'reports/vitest.json' }]],
  },
});
