import { TimeoutError } from '../schema/errors';

/**
 * The signal of one deadline-bound piece of work (a request attempt, a stream, a tool run): aborted when the
 * caller's signal aborts, or when `timeoutMs` pass without `touch()` (for streams, the time allowed between
 * two events), with a `TimeoutError`. `timedOut` tells the two apart. `Infinity` means no deadline.
 */
export class Deadline {
  readonly #controller = new AbortController();
  readonly #parent: AbortSignal | undefined;
  readonly #timeoutMs: number;
  readonly #what: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #timedOut = false;
  readonly #onParentAbort = () => this.#controller.abort(this.#parent?.reason);

  /** `what` names the work in the timeout's message (`<what> timed out after N ms`). */
  constructor(parent: AbortSignal | undefined, timeoutMs: number, what?: string) {
    this.#parent = parent;
    this.#timeoutMs = timeoutMs;
    this.#what = what;
    if (parent?.aborted) this.#controller.abort(parent.reason);
    else parent?.addEventListener('abort', this.#onParentAbort, { once: true });
    this.touch();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True when the attempt was aborted because it took too long. */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  /** Restarts the timeout (call it whenever data arrives). */
  touch(): void {
    if (this.#controller.signal.aborted || !Number.isFinite(this.#timeoutMs)) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.#controller.abort(
        new TimeoutError({
          message:
            this.#what === undefined
              ? `no response within ${this.#timeoutMs} ms`
              : `${this.#what} timed out after ${this.#timeoutMs} ms`,
          timeoutMs: this.#timeoutMs,
        }),
      );
    }, this.#timeoutMs);
  }

  /** Aborts the attempt (e.g. the consumer left a stream early). */
  abort(): void {
    this.#controller.abort();
    this.dispose();
  }

  /**
   * One attempt of a request: `request` runs with the attempt's signal; an attempt that timed out throws its
   * `TimeoutError`, any other failure goes through `translate`.
   */
  static async run<T>(
    parent: AbortSignal | undefined,
    timeoutMs: number,
    request: (signal: AbortSignal) => Promise<T>,
    translate: (error: unknown) => unknown = (error) => error,
  ): Promise<T> {
    // An attempt that opens and is done at once: its failures are the same, and it ends when its value comes.
    const { stream: value, attempt } = await Deadline.open(parent, timeoutMs, request, translate);
    attempt.dispose();
    return value;
  }

  /**
   * One attempt at opening a stream: resolves with the stream and the attempt that guards it (its owner
   * touches it per event and aborts it when done). An attempt that timed out throws its `TimeoutError`,
   * any other failure goes through `translate`.
   */
  static async open<T>(
    parent: AbortSignal | undefined,
    timeoutMs: number,
    open: (signal: AbortSignal) => Promise<T>,
    translate: (error: unknown) => unknown = (error) => error,
  ): Promise<{ stream: T; attempt: Deadline }> {
    const attempt = new Deadline(parent, timeoutMs);
    try {
      return { stream: await open(attempt.signal), attempt };
    } catch (error) {
      attempt.dispose();
      throw attempt.timedOut ? attempt.signal.reason : translate(error);
    }
  }

  /** Stops the timer and detaches from the caller's signal. */
  dispose(): void {
    clearTimeout(this.#timer);
    this.#parent?.removeEventListener('abort', this.#onParentAbort);
  }
}
