import { UsageTracker } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

describe('UsageTracker', () => {
  it('keeps at most maxSessions sessions, least recently used dropped, totals unchanged', () => {
    const tracker = new UsageTracker(3);
    const one = { promptTokens: 1, completionTokens: 2, totalTokens: 3 };
    for (const id of ['a', 'b', 'c', 'a', 'd']) tracker.record(one, id);
    expect(tracker.get('b')).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
    expect(tracker.get('a')).toEqual({ promptTokens: 2, completionTokens: 4, totalTokens: 6 });
    expect(tracker.total()).toEqual({ promptTokens: 5, completionTokens: 10, totalTokens: 15 });
    tracker.reset('a');
    expect(tracker.get('a').totalTokens).toBe(0);
  });

  it('is bounded by default', () => {
    const tracker = new UsageTracker();
    for (let i = 0; i < 10_050; i++)
      tracker.record({ promptTokens: 1, completionTokens: 0, totalTokens: 1 }, i);
    expect(tracker.get(0).totalTokens).toBe(0);
    expect(tracker.get(10_049).totalTokens).toBe(1);
    expect(tracker.total().totalTokens).toBe(10_050);
  });
});
