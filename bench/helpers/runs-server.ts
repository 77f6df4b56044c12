// The server of bench/runs.ts, in its own process so its CPU time is its own: an HTTPAgentServer whose agent
// streams RUN_CHUNKS 4-character chunks after RUN_LATENCY_MS (the clients connect meanwhile), its run logs in
// a MemoryStore, or in SQLite at RUN_SQLITE. GET /cpu answers the process's CPU time (µs). Prints its URL.
import { HTTPAgentServer } from '../../src/distributed/http/index';
import { AsyncStreamingAgent } from '../../src/index';
import { MemoryStore } from '../../src/stores/memory-store';
import { SQLiteStore } from '../../src/stores/sqlite-store';
import { AsyncMockLLM } from '../../src/testing/index';

const chunks = Number(process.env.RUN_CHUNKS ?? 10_000);
const path = process.env.RUN_SQLITE;
const store = path ? new SQLiteStore({ path }) : new MemoryStore();
const agent = new AsyncStreamingAgent({
  llm: new AsyncMockLLM({
    responses: () => 'abcd'.repeat(chunks),
    chunkSize: 4,
    latencyMs: Number(process.env.RUN_LATENCY_MS ?? 0),
    record: false,
  }),
  memory: null,
  name: 'relay',
});
const server = new HTTPAgentServer({
  agent,
  port: 0,
  runs: { store, recover: false },
  setup: (app) => {
    app.get('/cpu', async () => {
      const { user, system } = process.cpuUsage();
      return { cpu: user + system };
    });
  },
});
process.stdout.write(`${await server.listen()}\n`);
process.on('SIGTERM', () => {
  server.close().then(() => process.exit(0));
});
