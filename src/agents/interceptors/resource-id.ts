import type { CallFrame } from '../../core/call-context';

/**
 * The `resourceId` a call was given, or the nearest enclosing call's: whom the session belongs to holds for
 * every call made inside (a function-calling agent's model turns, a composite's sub-agents), which are not
 * given the option again. Undefined when no call up the chain has one.
 */
export function enclosingResourceId(frame: CallFrame | undefined): unknown {
  for (let current = frame; current !== undefined; current = current.parent) {
    const id = (current as { options?: { resourceId?: unknown } }).options?.resourceId;
    if (id !== undefined) return id;
  }
  return undefined;
}
