/**
 * The call option of a call made inside the session lane of another call of the same agent (a durable call
 * recovered before the one that found it): it takes no lane of its own (internal).
 */
export const SHARES_LANE: unique symbol = Symbol('lagent-ts.sharesLane');

/** The error of a call left before it finished (a stream its consumer stopped reading). */
export function abandoned(): Error {
  return new Error('the call was abandoned before it finished (its stream was closed)');
}
