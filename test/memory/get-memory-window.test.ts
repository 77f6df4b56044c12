import { ConfigurationError, Memory } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

function numbered(count: number, options?: { recentN?: number }): Memory {
  const memory = new Memory(options);
  for (let i = 0; i < count; i++) memory.add(String(i));
  return memory;
}

describe('Memory.getMemory windows', () => {
  it('passes filter indices counted within the recentN window, as Lagent does', () => {
    const memory = numbered(6);
    const seen: [string, number][] = [];
    const kept = memory.getMemory({
      recentN: 3,
      filter: (message, index) => {
        seen.push([String(message.content), index]);
        return index !== 1;
      },
    });
    expect(seen).toEqual([
      ['3', 0],
      ['4', 1],
      ['5', 2],
    ]);
    expect(kept.map((message) => message.content)).toEqual(['3', '5']);
    const all: number[] = [];
    memory.getMemory({ filter: (_message, index) => all.push(index) > 0 });
    expect(all).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('recentN: 0 means no messages, per call and as the default', () => {
    expect(numbered(3).getMemory({ recentN: 0 })).toEqual([]);
    expect(numbered(3, { recentN: 0 }).getMemory()).toEqual([]);
    // An explicit 0 is not "unset": it does not fall back to the memory's default.
    expect(numbered(3, { recentN: 2 }).getMemory({ recentN: 0 })).toEqual([]);
    expect(numbered(3, { recentN: 2 }).getMemory({ recentN: 5 })).toHaveLength(3);
  });

  it('refuses a recentN that is not a non-negative integer', () => {
    expect(() => numbered(3).getMemory({ recentN: -1 })).toThrow(ConfigurationError);
    expect(() => numbered(3).getMemory({ recentN: 1.5 })).toThrow(ConfigurationError);
  });
});
