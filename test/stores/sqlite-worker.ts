// A second process on a SQLiteStore file, for sqlite-store.test.ts. Run with node --import tsx:
//   sqlite-worker.ts <file> <namespace> <sessionId> <mode> <who> <count> <leaseMs>
// mode `commit`: commits `count` turns (two messages each) under the lease protocol, retrying while the
// session is busy, and prints each version it committed as a line `committed <version>`.
// mode `hold`: takes the lease, prints `held`, and waits to be killed.
// mode `churn`: commits turns of ~100 KB forever, printing `committed <version>` after each.
// mode `grouped`: as `commit`, through the grouped writes, from 4 lanes at once: lane i commits `count`
// turns to session <sessionId>i, printing `lane <i> <version>`; it prints `ready` and starts when the file
// <file>.go exists.
import { existsSync } from 'node:fs';
import { StoreConflictError } from '../../src/schema/errors';
import { SQLiteStore } from '../../src/stores/sqlite-store';
import { workerTurn } from './sqlite-turns';

const [file, namespace, sessionId, mode, who, countText, leaseText] = process.argv.slice(2) as string[];
const store = new SQLiteStore({ path: file!, busyTimeoutMs: 10_000 });
const owner = `${who}-${process.pid}`;
const leaseMs = Number(leaseText);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function commitOne(k: number, pad: number): Promise<number> {
  for (;;) {
    const lease = store.acquireSession(namespace!, sessionId!, { owner, leaseMs });
    if (!lease.acquired) {
      await sleep(1);
      continue;
    }
    try {
      return store.commitTurn(namespace!, sessionId!, {
        owner,
        version: lease.version,
        turn: workerTurn(who!, k, lease.version, pad),
      });
    } catch (error) {
      if (!(error instanceof StoreConflictError)) throw error;
    }
  }
}

async function commitGrouped(session: string, k: number): Promise<number> {
  for (;;) {
    const lease = await store.acquireSessionGrouped(namespace!, session, { owner, leaseMs }).result;
    if (!lease.acquired) {
      await sleep(1);
      continue;
    }
    try {
      return await store.commitTurnGrouped(namespace!, session, {
        owner,
        version: lease.version,
        turn: workerTurn(who!, k, lease.version),
      }).result;
    } catch (error) {
      if (!(error instanceof StoreConflictError)) throw error;
    }
  }
}

if (mode === 'grouped') {
  process.stdout.write('ready\n');
  while (!existsSync(`${file}.go`)) await sleep(2);
  await Promise.all(
    [0, 1, 2, 3].map(async (index) => {
      for (let k = 0; k < Number(countText); k++) {
        process.stdout.write(`lane ${index} ${await commitGrouped(`${sessionId}${index}`, k)}\n`);
        // Give the other process a chance at the session between turns.
        await sleep(1);
      }
    }),
  );
  store.close();
} else if (mode === 'hold') {
  const lease = store.acquireSession(namespace!, sessionId!, { owner, leaseMs });
  process.stdout.write(lease.acquired ? 'held\n' : 'busy\n');
  setInterval(() => undefined, 60_000);
} else if (mode === 'churn') {
  for (let k = 0; ; k++) process.stdout.write(`committed ${await commitOne(k, 100_000)}\n`);
} else {
  for (let k = 0; k < Number(countText); k++) {
    process.stdout.write(`committed ${await commitOne(k, 0)}\n`);
    // Give the other process a chance at the lock between turns.
    if (k % 4 === 3) await sleep(0);
  }
  store.close();
}
