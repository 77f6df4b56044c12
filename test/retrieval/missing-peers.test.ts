import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/without-peers.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));

it('without the engines the entry imports, and each store says what to install', async () => {
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', fixture],
      { cwd: root, timeout: 60_000 },
      (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
    );
  });
  const lines = stdout.trim().split('\n');
  expect(lines[0]).toMatch(
    /^SQLiteVectorStore: ConfigurationError: install better-sqlite3 and sqlite-vec to use SQLiteVectorStore \(npm install better-sqlite3 sqlite-vec\): Cannot find module 'sqlite-vec'/,
  );
  expect(lines[1]).toMatch(
    /^LanceVectorStore: ConfigurationError: install @lancedb\/lancedb and apache-arrow to use LanceVectorStore \(npm install @lancedb\/lancedb apache-arrow\): Cannot find module '@lancedb\/lancedb'/,
  );
  expect(lines[2]).toMatch(
    /^PostgresVectorStore: ConfigurationError: install pg to use PostgresVectorStore \(npm install pg\)/,
  );
  expect(lines[3]).toBe('MemoryVectorStore: ok');
}, 60_000);
