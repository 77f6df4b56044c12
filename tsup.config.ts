import { defineConfig, type Options } from 'tsup';

const shared: Options = {
  entry: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    'tools/index': 'src/tools/index.ts',
    'distributed/index': 'src/distributed/index.ts',
    'distributed/http/index': 'src/distributed/http/index.ts',
    'distributed/queue/index': 'src/distributed/queue/index.ts',
    'mcp/index': 'src/mcp/index.ts',
    'stores/index': 'src/stores/index.ts',
    'retrieval/index': 'src/retrieval/index.ts',
    'cli/index': 'src/cli/index.ts',
    // Internal: the hosts the sync bridge's worker loads by path (not in package.json's exports).
    'bridge-hosts/index': 'src/bridge-hosts/index.ts',
    // The sync bridge starts a worker thread from this file; it must stay a separate file next to index.*.
    'sync-bridge-worker': 'src/bridge/worker.ts',
  },
  dts: true,
  sourcemap: true,
  target: 'node22',
  splitting: true,
  treeshake: true,
};

export default defineConfig([
  { ...shared, format: 'esm', clean: true },
  // p-retry (and its helper) ship only ESM; the CJS build carries its own copy so `require('lagent-ts')`
  // works on every supported Node release, including the 22.x ones before require() of ES modules.
  { ...shared, format: 'cjs', noExternal: ['p-retry', 'is-network-error'] },
]);
