/*
 * Listening for an abort, many times over, cheaply. `addEventListener` / `removeEventListener` on an
 * `AbortSignal` cost about a microsecond a pair; a call that waits on its signal for every chunk of a stream
 * (a guardrail check per chunk) or follows its caller's signal pays that each time. Here each signal gets one
 * listener of ours, which runs the callbacks watching it: adding and removing one is a set operation.
 */

/** The callbacks watching each signal. */
const watchers = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `onAbort` once when `signal` aborts (not when it already has: check `signal.aborted` first). */
export function watchAbort(signal: AbortSignal, onAbort: () => void): void {
  let set = watchers.get(signal);
  if (set === undefined) {
    const created = new Set<() => void>();
    set = created;
    watchers.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        watchers.delete(signal);
        for (const watcher of created) {
          try {
            watcher();
          } catch (error) {
            // Every watcher runs; one that throws is reported as a listener's error would be.
            queueMicrotask(() => {
              throw error;
            });
          }
        }
      },
      { once: true },
    );
  }
  set.add(onAbort);
}

/** Stops `onAbort` from watching `signal`. */
export function unwatchAbort(signal: AbortSignal, onAbort: () => void): void {
  watchers.get(signal)?.delete(onAbort);
}
