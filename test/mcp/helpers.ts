import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));

/** The everything server's entry point, run with this Node (no npx: one process to watch and stop). */
export const EVERYTHING = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist/index.js',
);

/** Our stdio server fixture. */
export const FIXTURE = join(root, 'test/mcp/fixtures/lagent-server.ts');
