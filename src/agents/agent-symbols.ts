/** Where an agent keeps its event emitter (created on first use of `agent.events`). Internal. */
export const EMITTER: unique symbol = Symbol('lagent-ts.emitter');

/** Where an agent keeps the lanes of its sessions (one call per session at a time). Internal. */
export const LANES: unique symbol = Symbol('lagent-ts.lanes');

/** Where an agent keeps what the built-in concerns answered for its calls (`interceptors/chain.ts`). Internal. */
export const CHAIN: unique symbol = Symbol('lagent-ts.chain');
