import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKey } from '../../src/stores/sqlite-schema';
import { SQLiteStore } from '../../src/stores/sqlite-store';
import { describeStoreContract } from './contract';

const dir = mkdtempSync(join(tmpdir(), 'lagent-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(dir, `store-${++files}.db`);

// Every store of the contract suite opens its own connection to one file, as processes sharing it would.
const contractFile = freshFile();
describeStoreContract('SQLiteStore', () => ({
  open: async (options = {}) => new SQLiteStore({ path: contractFile, ...options }),
  corrupt: async (namespace, sessionId) => {
    const raw = new Database(contractFile);
    try {
      const keys = [sqliteKey(namespace), sqliteKey(sessionId)];
      raw
        .prepare('UPDATE lagent_bases SET state = ? WHERE namespace = ? AND session_id = ?')
        .run('{"mem', ...keys);
      raw
        .prepare('UPDATE lagent_turns SET turn = ? WHERE namespace = ? AND session_id = ?')
        .run('garbage', ...keys);
    } finally {
      raw.close();
    }
  },
}));
