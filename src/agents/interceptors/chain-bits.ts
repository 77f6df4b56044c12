/** Bits of `BuiltinConcern.static` / `perCall`: which hooks of a concern apply to a call. */
export const AGENT = 1;
export const MODEL = 2;
/** Its tool hooks: for the tool calls made inside the call and inside the calls made in it. */
export const TOOL = 4;
/** Of `static` only: the answer depends on more than the agent, so `perCall` is asked on every call. */
export const PER_CALL = 8;
