import { ConfigurationError } from '../../../schema/errors';
import type { SessionStore } from '../../../stores/types';

/* The `durable` option of agents and calls (the journal itself: journal.ts). */

/** The `durable` option of agents and calls. */
export interface DurableOptions {
  /** Where journals are kept: `MemoryStore`, or a store of `lagent-ts/stores`. */
  store: SessionStore;
  /** The namespace of the journals in the store. @default the agent's name */
  namespace?: string | undefined;
  /**
   * How long a finished call's journal is kept, in ms: within it, the same `callId` gets the call's reply back
   * (a call that failed: is continued from what it did) without anything running again. @default 86400000 (24 h)
   */
  retainMs?: number | undefined;
  /**
   * The lease a call takes on its session in the store when the agent has no `memory: { store }` on the same
   * store and namespace (whose lease it holds then), in ms: see `memory.leaseMs`. @default 10000
   */
  leaseMs?: number | undefined;
}

/** How long a finished call's journal is kept by default: 24 hours, as is common for idempotency keys. */
export const DEFAULT_RETAIN_MS = 86_400_000;

/** Where an agent keeps its `durable` option (internal). */
export const DURABLE: unique symbol = Symbol('lagent-ts.durable');

/** Checks a `durable` option. */
export function checkDurable(owner: string, value: unknown): DurableOptions | undefined {
  if (value === undefined) return undefined;
  const store = (value as { store?: SessionStore } | null)?.store;
  if (store === null || typeof store !== 'object' || typeof store.appendJournal !== 'function') {
    throw new ConfigurationError({
      message: `${owner}: durable must be { store } with a store (MemoryStore, or one of lagent-ts/stores)`,
    });
  }
  const { retainMs, leaseMs } = value as DurableOptions;
  if (retainMs !== undefined && !(Number.isSafeInteger(retainMs) && retainMs >= 0)) {
    throw new ConfigurationError({
      message: `${owner}: durable.retainMs must be a whole number of ms, got ${retainMs}`,
    });
  }
  if (leaseMs !== undefined && !(Number.isSafeInteger(leaseMs) && leaseMs > 0)) {
    throw new ConfigurationError({
      message: `${owner}: durable.leaseMs must be a positive integer (ms), got ${leaseMs}`,
    });
  }
  return value as DurableOptions;
}

/** The `durable` option that applies to an outermost call of `agent`: the call's own, or the agent's. */
export function durableOf(agent: object, options: object): DurableOptions | undefined {
  const own = (options as { durable?: unknown }).durable;
  const name = (agent as { name?: string }).name ?? 'agent';
  if (own !== undefined) return checkDurable(name, own);
  return (agent as { [DURABLE]?: DurableOptions })[DURABLE];
}
