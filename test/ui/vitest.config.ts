import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Runs the tests of test/ui on their own (`npx vitest run --config test/ui/vitest.config.ts`), with the
// project's aliases, until the folder is one of the main config's projects.
const root = fileURLToPath(new URL('../../', import.meta.url));

export default defineConfig({
  root,
  resolve: {
    alias: [
      { find: /^lagent-ts$/, replacement: `${root}src/index.ts` },
      { find: /^lagent-ts\/(.+)$/, replacement: `${root}src/$1/index.ts` },
    ],
  },
  test: { testTimeout: 20_000, include: ['test/ui/**/*.test.ts'] },
});
