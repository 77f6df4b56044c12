import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { JSONParser } from '../src/prompts/parsers/json-parser';
import { PartialJSONParser } from '../src/prompts/parsers/partial-json';
import type { Suite } from './report';

/**
 * Streamed structured output: a JSON reply read incrementally in 4-character chunks (a model's token is
 * about that size), against one `JSON.parse` of the whole text. Linear cost shows as the same ratio at
 * 0.25, 0.5 and 1 MB; re-parsing the text so far on every chunk would grow with the size.
 */

const CHUNK = 4;

/** A JSON text of about `bytes` characters: an object with an array of records (strings, escapes, numbers). */
function document(bytes: number): string {
  const items: unknown[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const item = {
      id: i,
      title: `Item ${i}: "quoted" and \\ escaped — café ☕ 😀`,
      score: i * 0.37 - 12.5e-3,
      tags: ['alpha', 'beta', `t${i % 17}`],
      nested: { ok: i % 2 === 0, none: null, text: 'line one\nline two\ttabbed' },
    };
    items.push(item);
    size += JSON.stringify(item).length + 1;
  }
  return JSON.stringify({ summary: 'a long structured reply', items });
}

function chunks(text: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += CHUNK) pieces.push(text.slice(i, i + CHUNK));
  return pieces;
}

/** The best of `runs` timings of `work`, in ms. */
function best(runs: number, work: () => void): number {
  let fastest = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const start = performance.now();
    work();
    fastest = Math.min(fastest, performance.now() - start);
  }
  return fastest;
}

export const run: Suite = async (report) => {
  const sizes = [0.25, 0.5, 1];
  for (const megabytes of sizes) {
    const text = document(megabytes * 1024 * 1024);
    const pieces = chunks(text);
    const expected = JSON.parse(text) as unknown;
    let value: unknown;
    const incremental = best(5, () => {
      const parser = new PartialJSONParser();
      for (const piece of pieces) parser.push(piece);
      value = parser.end();
    });
    if (JSON.stringify(value) !== JSON.stringify(expected))
      throw new Error('partial-json: the incremental parse differs from JSON.parse');
    const whole = best(20, () => JSON.parse(text));
    const label = `${megabytes} MB in ${pieces.length} chunks of ${CHUNK}`;
    report({ name: `incremental parse, ${label}`, value: incremental, unit: 'ms' });
    report({
      name: `incremental / one JSON.parse, ${megabytes} MB`,
      value: incremental / whole,
      unit: 'x',
      note: `JSON.parse of the whole: ${whole.toFixed(2)} ms; per chunk ${((incremental / pieces.length) * 1000).toFixed(2)} µs`,
    });
  }
  // The alternatives, on small replies (they grow with the square of the size): re-parsing the text so far
  // on every chunk, and a fresh copy of the partial value per chunk instead of one live value.
  const parser = new JSONParser({ schema: z.unknown() });
  for (const kilobytes of [8, 16]) {
    const pieces = chunks(document(kilobytes * 1024));
    const reparse = best(1, () => {
      let text = '';
      for (const piece of pieces) {
        text += piece;
        try {
          parser.parseResponse(text);
        } catch {
          // partial text is not JSON yet
        }
      }
    });
    const copies = best(1, () => {
      const reader = new PartialJSONParser();
      for (const piece of pieces) structuredClone(reader.push(piece));
    });
    report({ name: `re-parse the text so far per chunk, ${kilobytes} KB`, value: reparse, unit: 'ms' });
    report({ name: `incremental + a fresh copy per chunk, ${kilobytes} KB`, value: copies, unit: 'ms' });
  }
};
