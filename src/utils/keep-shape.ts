/** The instances {@link keepShape} keeps, for the life of the process. */
const KEPT: object[] = [];

/**
 * Keeps one instance of a class alive for the life of the process, so the hidden class V8 gave its
 * instances lives as long.
 *
 * V8 holds that hidden class (its "map") only through the instances and, weakly, through the optimised
 * code that uses it. A class whose instances can all die at once (one per call, per session or per
 * agent) loses its map at the first full collection after they do: between two bursts of calls, or when
 * an app makes an agent per request. Every optimised function that embedded the map is then thrown away
 * ("weak objects" deoptimisation), and the next burst runs unoptimised until it is compiled again; in
 * the 10,000-session benchmark that was a third of each round.
 *
 * Pass an instance made the way the hot path makes them (same constructor, same fields in the same
 * order), so it has the same map. Returns it.
 */
export function keepShape<T extends object>(instance: T): T {
  KEPT.push(instance);
  return instance;
}
