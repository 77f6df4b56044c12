/**
 * How many agents have an event emitter. While none has, agent calls skip looking for observers among the
 * agents they run inside (see `emitEvent` in `lifecycle.ts`).
 */
export const observers = { count: 0 };
