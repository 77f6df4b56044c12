import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LanceVectorStore } from '../src/retrieval/lance-vector-store';
import { MemoryVectorStore } from '../src/retrieval/memory-vector-store';
import { SQLiteVectorStore } from '../src/retrieval/sqlite-vector-store';
import type { VectorRecord, VectorStore } from '../src/retrieval/types';
import type { Report, Suite } from './report';

/**
 * Vector stores side by side on the workload: 100,000 vectors of 384 dimensions (uniformly random,
 * the hardest case for an index), a top-10 query's latency (p50 and p95 of fresh random queries), the
 * ingestion rate through `upsert` in batches, the memory per vector of the in-memory store and the disk per
 * vector of SQLite (sqlite-vec) and LanceDB. LanceDB is measured scanning (exact) and again with an IVF-PQ
 * index. `LAGENT_BENCH_VECTORS` changes the count.
 */

const COUNT = Number(process.env.LAGENT_BENCH_VECTORS ?? 100_000);
const DIMENSIONS = 384;
const BATCH = 5_000;

/** mulberry32: fast, seeded, so every run measures the same data. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
}

const next = random(42);
const vector = () => Float32Array.from({ length: DIMENSIONS }, next);
function* batches(): Generator<VectorRecord[]> {
  for (let start = 0; start < COUNT; start += BATCH) {
    yield Array.from({ length: Math.min(BATCH, COUNT - start) }, (_, offset) => ({
      id: `v${start + offset}`,
      vector: vector(),
      metadata: { source: `doc-${(start + offset) % 100}` },
    }));
  }
}
// The same data for every store: generated once.
const data = [...batches()];
const queries = Array.from({ length: 40 }, vector);

const gc = (globalThis as { gc?: () => void }).gc;
/** The process's resident memory after a collection (a WebAssembly memory is counted by neither heap nor array buffers). */
const bytesInUse = () => {
  gc?.();
  return process.memoryUsage().rss;
};

function diskBytes(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + diskBytes(join(path, name)), 0);
}

async function ingest(store: VectorStore): Promise<number> {
  const started = performance.now();
  for (const batch of data) await store.upsert(batch);
  return COUNT / ((performance.now() - started) / 1000);
}

async function latencies(store: VectorStore, rounds: number): Promise<{ p50: number; p95: number }> {
  await store.query(queries[0]!, { topK: 10 });
  const samples: number[] = [];
  for (let index = 0; index < rounds; index++) {
    const started = performance.now();
    await store.query(queries[index % queries.length]!, { topK: 10 });
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return {
    p50: samples[Math.floor(samples.length / 2)]!,
    p95: samples[Math.min(samples.length - 1, Math.floor(samples.length * 0.95))]!,
  };
}

export const run: Suite = async (report: Report) => {
  const thousands = `${COUNT / 1000}k × ${DIMENSIONS}`;
  const dir = mkdtempSync(join(tmpdir(), 'lagent-bench-retrieval-'));
  try {
    // In memory: exact search with the WebAssembly SIMD kernel.
    const before = bytesInUse();
    const memory = new MemoryVectorStore({ dimensions: DIMENSIONS, fields: { source: 'string' } });
    report({ name: `memory: upsert ${thousands}`, value: await ingest(memory), unit: 'vectors/s' });
    report({
      name: 'memory: bytes per vector',
      value: (bytesInUse() - before) / COUNT,
      unit: 'B',
      note: 'growth of the resident set',
    });
    const inMemory = await latencies(memory, 40);
    report({
      name: `memory: top-10 query of ${thousands}, p50`,
      value: inMemory.p50,
      unit: 'ms',
      target: 20,
    });
    report({ name: `memory: top-10 query of ${thousands}, p95`, value: inMemory.p95, unit: 'ms' });
    await memory.close();

    // SQLite with sqlite-vec: one file, exact search in the vec0 index.
    const file = join(dir, 'vectors.db');
    const sqlite = new SQLiteVectorStore({
      path: file,
      dimensions: DIMENSIONS,
      fields: { source: 'string' },
    });
    report({ name: `sqlite-vec: upsert ${thousands}`, value: await ingest(sqlite), unit: 'vectors/s' });
    const onSQLite = await latencies(sqlite, 20);
    report({ name: `sqlite-vec: top-10 query of ${thousands}, p50`, value: onSQLite.p50, unit: 'ms' });
    report({ name: `sqlite-vec: top-10 query of ${thousands}, p95`, value: onSQLite.p95, unit: 'ms' });
    await sqlite.close();
    report({
      name: 'sqlite-vec: disk per vector',
      value: (diskBytes(file) + diskBytes(`${file}-wal`)) / COUNT,
      unit: 'B',
    });

    // LanceDB: columnar files in a directory; exact scans, then an IVF-PQ index.
    const directory = join(dir, 'vectors.lance');
    const lance = new LanceVectorStore({
      path: directory,
      dimensions: DIMENSIONS,
      fields: { source: 'string' },
    });
    report({
      name: `lancedb: upsert ${thousands}`,
      value: await ingest(lance),
      unit: 'vectors/s',
      note: 'merge on (namespace, id)',
    });
    const scanned = await latencies(lance, 10);
    report({ name: `lancedb: top-10 query of ${thousands}, no index, p50`, value: scanned.p50, unit: 'ms' });
    const indexing = performance.now();
    await lance.createIndex({ partitions: 64, subVectors: 48, maxIterations: 10, sampleRate: 64 });
    report({
      name: 'lancedb: build the IVF-PQ index',
      value: (performance.now() - indexing) / 1000,
      unit: 's',
      note: '64 partitions, 48 sub-vectors',
    });
    const indexed = await latencies(lance, 40);
    report({
      name: `lancedb: top-10 query of ${thousands}, IVF-PQ, p50`,
      value: indexed.p50,
      unit: 'ms',
      note: '20 partitions probed, refined ×10',
    });
    report({ name: `lancedb: top-10 query of ${thousands}, IVF-PQ, p95`, value: indexed.p95, unit: 'ms' });
    await lance.close();
    report({
      name: 'lancedb: disk per vector',
      value: diskBytes(directory) / COUNT,
      unit: 'B',
      note: 'every version kept until compacted',
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
