/**
 * The messages the sync bridge exchanges with its worker, and how errors cross the thread boundary.
 * Internal to the bridge: only `sync-bridge.ts` and `sync-bridge-worker.ts` use this file.
 */

/** Slot 0 of the shared state counts replies; slot 1 is set when the worker thread exits. */
export const REPLY_COUNTER = 0;
export const WORKER_EXITED = 1;

/** A request from the blocked thread. `release` and `return` are fire-and-forget (no reply). */
export type BridgeRequest =
  | { op: 'create'; id: number; module: string; exportName: string; args: readonly unknown[] }
  | { op: 'call'; id: number; objectId: number; method: string; args: readonly unknown[] }
  | { op: 'iterate'; id: number; objectId: number; method: string; args: readonly unknown[] }
  | { op: 'next'; id: number; iteratorId: number }
  | { op: 'return'; iteratorId: number }
  | { op: 'release'; objectId: number };

/** The worker's answer to one request, matched by `id`. */
export type BridgeReply =
  | { id: number; ok: true; value: unknown; done?: boolean }
  | { id: number; ok: false; error: SerializedError };

/** An error as plain data: its class name, message, stack and own data fields. */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string | undefined;
  fields: Record<string, unknown>;
  cause?: SerializedError | undefined;
}

const SKIPPED_FIELDS = new Set(['name', 'message', 'stack', 'cause']);

function isCloneableField(value: unknown): boolean {
  if (value === null) return true;
  const kind = typeof value;
  if (kind === 'string' || kind === 'number' || kind === 'boolean' || kind === 'undefined') return true;
  if (kind !== 'object') return false;
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
}

/** Turns anything thrown into data that survives `postMessage`, keeping the class name and data fields. */
export function serializeError(error: unknown, depth = 0): SerializedError {
  if (!(error instanceof Error)) {
    return { name: 'Error', message: typeof error === 'string' ? error : String(error), fields: {} };
  }
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(error)) {
    const value = (error as unknown as Record<string, unknown>)[key];
    if (!SKIPPED_FIELDS.has(key) && isCloneableField(value)) fields[key] = value;
  }
  return {
    name: error.name,
    message: error.message,
    stack: error.stack,
    fields,
    cause: error.cause !== undefined && depth < 4 ? serializeError(error.cause, depth + 1) : undefined,
  };
}
