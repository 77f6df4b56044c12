import { isPlainObject } from '../utils/is';

/**
 * The keys this library writes into a message's `extraInfo` (a loop's `MaxTurnInfo`), by their names in
 * Python Lagent's shape. Keys a user puts into `extraInfo` are never renamed: they are written as given.
 */
const LIBRARY_KEYS: Readonly<Record<string, string>> = Object.freeze({
  maxTurnReached: 'max_turn_reached',
  maxTurn: 'max_turn',
  reasoningParts: 'reasoning_parts',
});
const PYTHON_KEYS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.entries(LIBRARY_KEYS).map(([camel, snake]) => [snake, camel])),
);

/**
 * `extraInfo` with the library's own keys renamed, when it is an object this library wrote (has one of
 * `markers`).
 */
function rename(
  extraInfo: unknown,
  names: Readonly<Record<string, string>>,
  markers: readonly string[],
): unknown {
  if (!isPlainObject(extraInfo) || !markers.some((marker) => Object.hasOwn(extraInfo, marker)))
    return extraInfo;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(extraInfo)) {
    const renamed = Object.hasOwn(names, key) && !Object.hasOwn(extraInfo, names[key]!) ? names[key]! : key;
    // A "__proto__" key (from JSON.parse) stays a data property instead of setting the prototype.
    Object.defineProperty(out, renamed, {
      value: extraInfo[key],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * A message's `extraInfo` as it is written in Python Lagent's shape: the library's own keys in snake_case
 * (`{ maxTurnReached: true, maxTurn: 4 }` is `{ max_turn_reached: true, max_turn: 4 }`, a reply's
 * `{ reasoning, reasoningParts }` is `{ reasoning, reasoning_parts }`); anything else as is.
 */
export function extraInfoToLagent(extraInfo: unknown): unknown {
  return rename(extraInfo, LIBRARY_KEYS, ['maxTurnReached', 'reasoningParts']);
}

/** The inverse of {@link extraInfoToLagent}, for `extra_info` read from Python Lagent's shape. */
export function extraInfoFromLagent(extraInfo: unknown): unknown {
  return rename(extraInfo, PYTHON_KEYS, ['max_turn_reached', 'reasoning_parts']);
}
