import {
  AgentStatusCode,
  AsyncStreamingAgent,
  JSONParser,
  PartialJSONParser,
  StreamingAgent,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';

const schema = z.object({ city: z.string(), days: z.array(z.number()), notes: z.string().optional() });
const reply =
  'Here you go:\n```json\n{"city": "Paris", "days": [1, 22, 333], "notes": "caf\\u00e9 \\ud83d\\ude00"}\n```';

/** Whether `partial` is a deep-partial of `final` (strings and the last array element as prefixes). */
function isPrefixOf(partial: unknown, final: unknown): boolean {
  if (partial === undefined || partial === null) return true;
  if (typeof partial === 'string') return typeof final === 'string' && final.startsWith(partial);
  if (Array.isArray(partial))
    return Array.isArray(final) && partial.every((item, index) => isPrefixOf(item, final[index]));
  if (typeof partial === 'object')
    return Object.entries(partial).every(([key, value]) =>
      isPrefixOf(value, (final as Record<string, unknown>)[key]),
    );
  return Object.is(partial, final);
}

describe('streaming agents with a JSONParser output format', () => {
  it('StreamingAgent: every chunk carries the partial object so far; the final reply is the validated parse', () => {
    const parser = new JSONParser({ schema });
    const agent = new StreamingAgent({
      llm: new MockLLM({ responses: [reply], chunkSize: 3 }),
      outputFormat: parser,
    });
    const snapshots: unknown[] = [];
    let final: unknown;
    for (const message of agent.call('trip?')) {
      if (message.streamState === AgentStatusCode.END) final = message.formatted;
      else snapshots.push(structuredClone(message.formatted));
    }
    const expected = parser.parseResponse(reply);
    expect(final).toEqual(expected);
    // The partials grow field by field: a string before it is complete, an array with its elements so far.
    const partials = snapshots as ({ city?: string; days?: number[] } | null)[];
    expect(partials).toContainEqual({ city: 'Pa' });
    expect(partials.some((partial) => partial?.city === 'Paris' && partial.days?.length === 2)).toBe(true);
    expect(snapshots.at(-1)).toEqual(expected);
    for (const [index, snapshot] of snapshots.entries()) {
      expect(isPrefixOf(snapshot, expected)).toBe(true);
      if (index > 0) expect(isPrefixOf(snapshots[index - 1], snapshot)).toBe(true);
    }
    expect(snapshots.filter((snapshot) => snapshot !== null).length).toBeGreaterThan(20);
  });

  it('AsyncStreamingAgent: the same partials, and each chunk keeps its delta', async () => {
    const parser = new JSONParser({ schema });
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: [reply], chunkSize: 5 }),
      outputFormat: parser,
    });
    const snapshots: unknown[] = [];
    let text = '';
    for await (const message of agent.call('trip?', { sessionId: 'a' })) {
      if (message.streamState === AgentStatusCode.END) {
        expect(message.formatted).toEqual(parser.parseResponse(reply));
        continue;
      }
      text += message.delta ?? '';
      expect(message.content).toBe(text);
      snapshots.push(structuredClone(message.formatted));
    }
    expect(snapshots).toContainEqual({ city: 'Paris', days: [1, 22, 333] });
    expect(snapshots.at(-1)).toEqual(parser.parseResponse(reply));
  });

  it('a 256 KB reply in 4-character chunks streams in time linear in its size: each character is read once', () => {
    const items = Array.from({ length: 3000 }, (_, id) => ({
      id,
      title: `item ${id} — "quoted"`,
      tags: ['a', 'b'],
    }));
    const big = JSON.stringify({ items }).padEnd(256 * 1024, ' ');
    const parser = new JSONParser({
      schema: z.object({ items: z.array(z.object({ id: z.number() }).passthrough()) }),
    });
    const agent = new StreamingAgent({
      llm: new MockLLM({ responses: [big], chunkSize: 4, record: false }),
      outputFormat: parser,
    });
    // What the stream's reader reads: re-reading the text so far on every chunk would read 65,536 chunks of
    // 128 KB on average (8.6 billion characters, minutes here); reading each chunk once reads the reply once.
    const push = vi.spyOn(PartialJSONParser.prototype, 'push');
    let chunks = 0;
    let last: unknown;
    const partials = new Set<unknown>();
    try {
      for (const message of agent.call('list')) {
        chunks++;
        last = message.formatted;
        if (message.streamState !== AgentStatusCode.END && message.formatted !== null)
          partials.add(message.formatted);
      }
      expect(push.mock.calls.reduce((read, [piece]) => read + piece.length, 0)).toBe(big.length);
    } finally {
      push.mockRestore();
    }
    expect(chunks).toBeGreaterThan(65_000);
    expect(last).toEqual({ items });
    // The partial value grows in place: no chunk copies what came before it.
    expect(partials.size).toBe(1);
  });
});
