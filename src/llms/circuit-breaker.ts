import { ConfigurationError } from '../schema/errors';

/** Options of a {@link CircuitBreaker}. */
export interface CircuitBreakerOptions {
  /**
   * Milliseconds a member that failed is skipped before it is tried again; 0 never skips (every call asks
   * every member in order). @default 30000
   */
  coolDownMs?: number | undefined;
  /** The clock, in ms (tests pass their own). @default Date.now */
  now?: (() => number) | undefined;
}

/** One member's circuit: when it may be asked again, and whether a trial call of it is under way. */
interface Circuit {
  /** Skipped until then (ms of the clock); 0: closed. */
  openUntil: number;
  /** A call is trying it after its cool-down: other calls keep skipping it until that one settles. */
  probing: boolean;
}

/**
 * Remembers which members of a chain (the models of a fallback chain) failed recently, so that calls stop
 * paying for a member that is down. A member that fails is *open* for `coolDownMs`: {@link plan} leaves it
 * out. Once the cool-down is over, one call at a time tries it (*half-open*): a success closes it, a failure
 * opens it for another cool-down. A plan is never empty: when every member is open, the one whose cool-down
 * ends first is tried.
 *
 * State only, no I/O and no timers: the owner reports each outcome ({@link succeeded}, {@link failed},
 * {@link released}), and time comes from the `now` clock.
 *
 * @example
 * const breaker = new CircuitBreaker(2, { coolDownMs: 30_000 });
 * breaker.failed(0);
 * breaker.plan(); // [1]: the first member is skipped for 30 s
 */
export class CircuitBreaker {
  /** Milliseconds a failed member is skipped. */
  readonly coolDownMs: number;
  readonly #now: () => number;
  readonly #circuits: Circuit[];

  constructor(size: number, options: CircuitBreakerOptions = {}) {
    const coolDownMs = options.coolDownMs ?? 30_000;
    if (typeof coolDownMs !== 'number' || !(coolDownMs >= 0) || coolDownMs === Number.POSITIVE_INFINITY) {
      throw new ConfigurationError({
        message: `coolDownMs must be a finite number of ms (0 or more), got ${String(coolDownMs)}`,
      });
    }
    if (options.now !== undefined && typeof options.now !== 'function') {
      throw new ConfigurationError({ message: 'now must be a function returning milliseconds' });
    }
    this.coolDownMs = coolDownMs;
    this.#now = options.now ?? Date.now;
    this.#circuits = Array.from({ length: size }, () => ({ openUntil: 0, probing: false }));
  }

  /**
   * The members to ask, in chain order: the closed ones, and an open one whose cool-down is over when no
   * other call is trying it (that call takes the trial: report how it went). When every member is left out,
   * the one that reopens first.
   */
  plan(): number[] {
    const order: number[] = [];
    const now = this.#now();
    let soonest = 0;
    for (let index = 0; index < this.#circuits.length; index++) {
      const circuit = this.#circuits[index]!;
      if (circuit.openUntil === 0) order.push(index);
      else if (!circuit.probing && circuit.openUntil <= now) {
        circuit.probing = true;
        order.push(index);
      }
      if (circuit.openUntil < this.#circuits[soonest]!.openUntil) soonest = index;
    }
    if (order.length === 0) {
      this.#circuits[soonest]!.probing = true;
      order.push(soonest);
    }
    return order;
  }

  /** Whether member `index` is skipped now (failed less than `coolDownMs` ago). */
  isOpen(index: number): boolean {
    const circuit = this.#circuits[index];
    return circuit !== undefined && circuit.openUntil > this.#now();
  }

  /** Member `index` answered: it is closed. */
  succeeded(index: number): void {
    const circuit = this.#circuits[index];
    if (circuit === undefined) return;
    circuit.openUntil = 0;
    circuit.probing = false;
  }

  /** Member `index` failed: it is skipped for `coolDownMs` (not at all with 0). */
  failed(index: number): void {
    const circuit = this.#circuits[index];
    if (circuit === undefined) return;
    circuit.probing = false;
    circuit.openUntil = this.coolDownMs === 0 ? 0 : this.#now() + this.coolDownMs;
  }

  /** Member `index` was planned but its call ended without telling (aborted, or not asked): it stays as it was. */
  released(index: number): void {
    const circuit = this.#circuits[index];
    if (circuit !== undefined) circuit.probing = false;
  }
}
