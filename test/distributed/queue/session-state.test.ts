import { describe, expect, it } from 'vitest';
import { applyChange, loadState, stateChange } from '#src/distributed/queue/session-state';
import { foldState } from '#src/stores/redis-codec';

/** A session as RedisStore keeps it: a base and the turns since. */
interface StoredState {
  base: string;
  turns: string[];
}

/** What RedisStore hands a worker for a stored session. */
function load(stored: StoredState) {
  let size = stored.base.length;
  for (const turn of stored.turns) size += turn.length;
  return loadState({ state: foldState(stored.base, stored.turns), size });
}

const message = (content: unknown, extra: Record<string, unknown> = {}) => ({
  content,
  sender: 'user',
  formatted: null,
  extra_info: null,
  type: null,
  receiver: null,
  stream_state: 0,
  ...extra,
});

/** What Redis holds after a change, as the store writes it. */
function store(stored: StoredState, change: ReturnType<typeof stateChange>): StoredState {
  if (change.kind === 'rewrite') return { ...stored, base: change.payload, turns: [] };
  if (change.kind === 'append') return { ...stored, turns: [...stored.turns, change.payload] };
  return stored;
}

describe('the stored session state', () => {
  const empty: StoredState = { base: '', turns: [] };

  it('appends only what a turn added, and folds back to the same state dict', () => {
    let stored = empty;
    let loaded = load(stored);
    const memory: ReturnType<typeof message>[] = [];
    const answers: ReturnType<typeof message>[] = [];
    for (let turn = 0; turn < 5; turn++) {
      const answer = message({ text: `a${turn}`, parts: [1, 2] });
      memory.push(message(`q${turn}`), answer);
      answers.push(answer);
      const after = { memory: [...memory], 'writer.memory': [...answers] };
      const change = stateChange(loaded, after);
      // The first turn writes the state whole; a turn that only adds messages appends just those.
      if (turn === 0) expect(change.kind).toBe('rewrite');
      else
        expect(change).toEqual({
          kind: 'append',
          payload: JSON.stringify({ memory: memory.slice(-2), 'writer.memory': [answer] }),
        });
      stored = store(stored, change);
      loaded = applyChange(loaded, change);
      expect(foldState(stored.base, stored.turns)).toEqual(after);
      expect(loaded.state).toEqual(after);
      expect(load(stored)).toEqual(loaded);
    }
    expect(stored.turns).toHaveLength(4);
  });

  it('writes the state whole when a message changed, a key came or went, or a list shrank', () => {
    const before = { memory: [message('a'), message('b')] };
    const loaded = load({ base: JSON.stringify(before), turns: [] });
    expect(stateChange(loaded, { memory: [message('a'), message('b'), message('c')] })).toEqual({
      kind: 'append',
      payload: JSON.stringify({ memory: [message('c')] }),
    });
    expect(stateChange(loaded, { memory: [message('a'), message('b')] }).kind).toBe('none');
    // Properties JSON leaves out are no change.
    expect(stateChange(loaded, { memory: [message('a', { extra: undefined }), message('b')] }).kind).toBe(
      'none',
    );
    for (const after of [
      { memory: [message('A'), message('b'), message('c')] },
      { memory: [message('a')] },
      { memory: [message('a'), message('b')], other: [] },
      { memory: [message('a'), message('b', { stream_state: Number.NaN })] },
      { memory: [message('a'), message(new Date(0))] },
    ]) {
      expect(stateChange(loaded, after as never)).toEqual({
        kind: 'rewrite',
        payload: JSON.stringify(after),
      });
    }
  });

  it('loads a session without memories (new, or reset) as no state', () => {
    expect(load({ base: '', turns: [] }).state).toBeUndefined();
    expect(load({ base: '{}', turns: [] }).state).toBeUndefined();
    // A memory replaced by an empty one (an agent's reset with a store) is a state.
    expect(load({ base: '{}', turns: ['[{"memory":[]},{}]'] }).state).toEqual({ memory: [] });
  });

  it('hands the agent a frozen state, so changing it in place throws', () => {
    const loaded = load({ base: JSON.stringify({ memory: [message({ nested: ['x'] })] }), turns: [] });
    const first = loaded.state!.memory![0]! as { content: { nested: string[] } };
    expect(() => {
      first.content.nested.push('y');
    }).toThrow(TypeError);
    expect(() => {
      loaded.state!.memory!.pop();
    }).toThrow(TypeError);
  });
});
