import type { LagentStateDict } from '../../agents/state-dict';
import type { LagentMessageJSON } from '../../schema/agent-message';
import type { JobSessionState } from '../../stores/redis-job-sessions';

/**
 * A session's state as a worker loads it: the state dict (frozen all the way down, `undefined` for a new or
 * reset session), and the size of its stored form (for the worker's cache).
 */
export interface LoadedState {
  state: LagentStateDict | undefined;
  /** The stored JSON's length: the base and every turn. */
  size: number;
}

/** Loads a session as RedisStore gives it for a call: frozen, and no state for one without memories. */
export function loadState(stored: JobSessionState): LoadedState {
  const state = stored.state as LagentStateDict;
  if (Object.keys(state).length === 0) return { state: undefined, size: stored.size };
  return { state: freezeState(state), size: stored.size };
}

/** How a turn changes the stored state: appends messages, replaces it whole, or leaves it as it was. */
export type StateChange =
  | { kind: 'append'; payload: string }
  | { kind: 'rewrite'; payload: string }
  | { kind: 'none'; payload: '' };

/**
 * What to store for a turn that took the state from `before` to `after`. An append when every key kept its
 * messages and only gained some at its end, so a turn writes its own messages and not the whole history;
 * else the whole new state. The comparison is by JSON value, and a message that differs in any way makes it
 * a rewrite.
 */
export function stateChange(before: LoadedState, after: LagentStateDict): StateChange {
  const rewrite = (): StateChange => ({ kind: 'rewrite', payload: JSON.stringify(after) });
  const old = before.state;
  if (old === undefined) return rewrite();
  const keys = Object.keys(after);
  if (keys.length !== Object.keys(old).length) return rewrite();
  const added: Record<string, LagentMessageJSON[]> = {};
  let appended = false;
  for (const key of keys) {
    const was = old[key];
    const now = after[key];
    if (!Array.isArray(was) || !Array.isArray(now) || now.length < was.length) return rewrite();
    for (let i = 0; i < was.length; i++) if (!jsonEqual(was[i], now[i], 0)) return rewrite();
    if (now.length > was.length) {
      added[key] = now.slice(was.length);
      appended = true;
    }
  }
  return appended ? { kind: 'append', payload: JSON.stringify(added) } : { kind: 'none', payload: '' };
}

/**
 * The state after a committed change, as a read of Redis would load it (parsed from what was stored, so
 * it is the same to the byte), in time proportional to the change.
 */
export function applyChange(before: LoadedState, change: StateChange): LoadedState {
  if (change.kind === 'none') return before;
  if (change.kind === 'rewrite') {
    const state = JSON.parse(change.payload) as LagentStateDict;
    return { state: freezeState(state), size: change.payload.length };
  }
  const state: LagentStateDict = { ...before.state };
  for (const [key, messages] of Object.entries(state)) state[key] = [...messages];
  appendTo(state, JSON.parse(change.payload) as LagentStateDict);
  return { state: freezeState(state), size: before.size + change.payload.length };
}

function appendTo(state: LagentStateDict, added: LagentStateDict): void {
  for (const key of Object.keys(added)) {
    const messages = state[key];
    if (!Array.isArray(messages)) state[key] = added[key]!;
    else for (const message of added[key]!) messages.push(message);
  }
}

/** Deeper values are not compared (they count as different, which only costs a rewrite). */
const MAX_DEPTH = 64;

/**
 * Whether `a` (parsed JSON) and `b` have the same JSON form. Errs only towards "different": values JSON
 * would convert (functions, `toJSON`, non-finite numbers) count as different.
 */
function jsonEqual(a: unknown, b: unknown, depth: number): boolean {
  if (a === b) return typeof a !== 'number' || Number.isFinite(a);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || depth > MAX_DEPTH) {
    return false;
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i], depth + 1)) return false;
    return true;
  }
  if (Array.isArray(b) || !isPlain(b) || !isPlain(a)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let count = 0;
  for (const key of Object.keys(right)) {
    const value = right[key];
    if (value === undefined) continue;
    if (!Object.hasOwn(left, key) || !jsonEqual(left[key], value, depth + 1)) return false;
    count++;
  }
  return count === Object.keys(left).length;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return (
    (proto === Object.prototype || proto === null) &&
    typeof (value as { toJSON?: unknown }).toJSON !== 'function'
  );
}

/**
 * Freezes a loaded state dict all the way down: the agent that loads it cannot change what the next commit is
 * compared with (it throws instead of storing a wrong history), and a worker can keep it for the next call.
 */
export function freezeState<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item === null || typeof item !== 'object' || Object.isFrozen(item)) continue;
    Object.freeze(item);
    for (const key of Object.keys(item)) stack.push((item as Record<string, unknown>)[key]);
  }
  return value;
}
