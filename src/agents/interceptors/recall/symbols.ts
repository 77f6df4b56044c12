/*
 * The keys of the aggregator's recall methods the interceptor and the agent call (internal), in a leaf module:
 * the agent, the aggregator and the interceptor import them without importing one another.
 */

/** Renders recalled messages into the next prompt (set by the recall interceptor around one `aggregate`). */
export const WITH_RECALLED: unique symbol = Symbol('lagent-ts.withRecalled');
/** Where the window over a memory starts, as a position in its whole history. */
export const WINDOW_START: unique symbol = Symbol('lagent-ts.windowStart');
/** Removes a reset session's vectors (see `TokenWindowAggregator.forgetRecalled`). */
export const FORGET_RECALLED: unique symbol = Symbol('lagent-ts.forgetRecalled');
/** The aggregator's semantic recall (its index and search), with `recall`. */
export const RECALL_INDEX: unique symbol = Symbol('lagent-ts.recallIndex');
