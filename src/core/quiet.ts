/**
 * Marks an error that ends a call without the call failing (a recovery that turned out not to be needed): it
 * is passed on, but reported to nobody as a failure (internal).
 */
export const QUIET: unique symbol = Symbol('lagent-ts.quiet');

/** True for an error marked {@link QUIET}. */
export function isQuiet(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { [QUIET]?: unknown })[QUIET] === true;
}
