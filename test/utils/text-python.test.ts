import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pythonJSON } from '#src/utils/text';
import { PYTHON_CASES } from './python-json-cases';

/**
 * `pythonJSON` against the real python3's `json.dumps`. Starts python3: an integration test (vitest.config.ts
 * OUT_OF_PROCESS).
 */

function hasPython(): boolean {
  try {
    return spawnSync('python3', ['-c', 'print(1)'], { encoding: 'utf8' }).stdout.trim() === '1';
  } catch {
    return false;
  }
}

/** Python's `json.dumps(json.loads(line), ensure_ascii=False)` for each line, in one python3 run. */
function pythonDumps(lines: readonly string[]): string[] {
  const script =
    'import json,sys\nfor line in sys.stdin.read().split("\\n"): print(json.dumps(json.loads(line), ensure_ascii=False))';
  const run = spawnSync('python3', ['-c', script], { input: lines.join('\n'), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(run.stderr);
  return run.stdout.split('\n').slice(0, lines.length);
}

describe('pythonJSON against python3', () => {
  it.skipIf(!hasPython())('matches real python3 on every case', () => {
    expect(pythonDumps(PYTHON_CASES.map(([input]) => input))).toEqual(
      PYTHON_CASES.map(([, expected]) => expected),
    );
  });

  it.skipIf(!hasPython())('matches python3 on arbitrary JSON', () => {
    const docs = fc.sample(fc.jsonValue({ maxDepth: 3 }), { numRuns: 200, seed: 42 });
    const expected = pythonDumps(docs.map((doc) => JSON.stringify(doc)));
    docs.forEach((doc, i) => {
      // Python keeps insertion order where JavaScript moves integer-like keys first: skip those.
      if (/"\d+":/.test(JSON.stringify(doc))) return;
      expect(pythonJSON(doc)).toBe(expected[i]);
    });
  });
});
