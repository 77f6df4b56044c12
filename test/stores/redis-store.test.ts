import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AgentMessage, type LagentMessageJSON } from '../../src/schema/agent-message';
import { ConfigurationError, StoreConflictError, StoreError } from '../../src/schema/errors';
import { MemoryStore } from '../../src/stores/memory-store';
import { RedisStoreKeys } from '../../src/stores/redis-keys';
import { RedisStore } from '../../src/stores/redis-store';
import type { SessionStore, SessionTurn } from '../../src/stores/types';
import { type RedisServer, startRedis } from '../distributed/queue/redis-server';
import { describeStoreContract } from './contract';

let server: RedisServer;
let admin: Redis;
const prefix = `test-${process.pid}`;
const keys = new RedisStoreKeys(prefix);

beforeAll(async () => {
  // With an append-only file, so a restart keeps the data.
  server = await startRedis({ persist: true });
  admin = new Redis(server.port, '127.0.0.1');
  admin.on('error', () => {});
});
afterAll(async () => {
  admin?.disconnect();
  await server?.close();
});

describeStoreContract('RedisStore', () => ({
  open: async (options = {}) => new RedisStore({ url: server.url, prefix, ...options }),
  corrupt: async (namespace, sessionId) => {
    await admin.hset(keys.session(namespace, sessionId), 'state', '{"memory": [not json');
  },
  stopServer: () => server.stop(),
  restartServer: () => server.start(),
}));
