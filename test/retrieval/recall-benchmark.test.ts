import { expect, it } from 'vitest';
import { runLongMemory } from '../../bench/helpers/long-memory';

/*
 * The recall benchmark's set (bench/recall.ts), scored as `npm run bench` scores it: deterministic (a seeded
 * generator, the HashEmbedder, an exact in-memory store), so the thresholds hold on every run.
 */

it('semantic recall finds far more planted facts than the token window alone, in the same room', async () => {
  const on = await runLongMemory({ recall: true });
  const off = await runLongMemory({ recall: false });
  expect(on.questions).toBe(100);
  expect(on.calls).toBe(2600);
  expect(on.recallAtK).toBeGreaterThanOrEqual(0.8);
  expect(off.recallAtK).toBeLessThanOrEqual(0.1);
  // Both stay within the window's 256 tokens.
  expect(on.tokensPerQuestion).toBeLessThanOrEqual(256);
  expect(off.tokensPerQuestion).toBeLessThanOrEqual(256);
}, 60_000);
