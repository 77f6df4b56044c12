import type { LagentMessageJSON } from '../schema/agent-message';
import { applyTurn, type SessionTurn, type StoredState } from './types';

/*
 * How RedisStore writes a session's state: a base (the JSON of a whole state dict, `{"memory": [...]}`) and
 * the turns since, one JSON each. A turn that only appends, the usual one, is the JSON of the messages it
 * appends per memory path (`{"memory": [question, reply]}`): the same form as the queue's stored turns, so
 * either can fold the other's appends. A turn that replaces paths is a two-item array,
 * `[replace, append]`, which no append can be mistaken for.
 */

/** A turn as stored. The result is JSON; a turn JSON cannot hold throws (a TypeError from JSON). */
export function encodeTurn(turn: SessionTurn): string {
  if (turn.replace !== undefined) return JSON.stringify([turn.replace, turn.append ?? {}]);
  return JSON.stringify(turn.append ?? {});
}

/** A stored turn, checked; throws an Error saying what is wrong. */
export function decodeTurn(json: string): SessionTurn {
  const value = parse(json);
  if (Array.isArray(value)) {
    if (value.length !== 2 || !isState(value[0]) || !isState(value[1])) {
      throw new Error('a replacing turn is not [replace, append]');
    }
    return { replace: value[0], append: value[1] };
  }
  if (!isState(value)) throw new Error('a turn is not an object of message lists');
  return { append: value };
}

/** A stored base (`''` is an empty one), checked. */
export function decodeState(json: string): StoredState {
  if (json === '') return {};
  const value = parse(json);
  if (!isState(value)) throw new Error('the base state is not an object of message lists');
  return value;
}

/** The state a base and the turns after it stand for. */
export function foldState(base: string, turns: readonly string[]): StoredState {
  let state = decodeState(base);
  for (const turn of turns) state = applyTurn(state, decodeTurn(turn));
  return state;
}

function parse(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new Error(`not JSON (${(error as Error).message})`);
  }
}

function isState(value: unknown): value is StoredState {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  for (const messages of Object.values(value)) {
    if (!Array.isArray(messages)) return false;
    for (const message of messages as LagentMessageJSON[]) {
      if (message === null || typeof message !== 'object' || Array.isArray(message)) return false;
    }
  }
  return true;
}
