/**
 * The messages the sync bridge exchanges with its worker, and how errors cross the thread boundary.
 * Internal to the bridge: only the `sync-bridge*.ts` files use this file.
 */

/**
 * Slot 0 of the shared state counts replies (the blocked thread waits on it); slot 1 is set once the worker
 * thread is gone (by the monitor thread that owns it, or by the bootstrap when the worker could not start).
 */
export const REPLY_COUNTER = 0;
export const WORKER_EXITED = 1;

/** A request from the blocked thread. `release` and `return` are fire-and-forget (no reply). */
export type BridgeRequest =
  | { op: 'create'; id: number; module: string; exportName: string; args: readonly unknown[] }
  | { op: 'call'; id: number; objectId: number; method: string; args: readonly unknown[] }
  | { op: 'iterate'; id: number; objectId: number; method: string; args: readonly unknown[] }
  | { op: 'next'; id: number; iteratorId: number }
  | { op: 'ping'; id: number }
  | { op: 'return'; iteratorId: number }
  | { op: 'release'; objectId: number };

/** The worker's answer to one request, matched by `id`. */
export type BridgeReply =
  | { id: number; ok: true; value: unknown; done?: boolean }
  | { id: number; ok: false; error: SerializedError };

/** What the monitor thread reports when the worker it owns has exited. */
export interface WorkerExitReport {
  exitCode: number;
  /** The worker's 'error' event, when it had one (an uncaught exception, running out of memory, ...). */
  error?: { name: string; message: string; code?: string | undefined } | undefined;
}

/** An error as plain data: its class name, message, stack and own data fields. */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string | undefined;
  fields: Record<string, unknown>;
  cause?: SerializedError | undefined;
}

const SKIPPED_FIELDS = new Set(['name', 'message', 'stack', 'cause']);
const MAX_CAUSE_DEPTH = 4;

function isCloneableField(value: unknown): boolean {
  if (value === null) return true;
  const kind = typeof value;
  if (
    kind === 'string' ||
    kind === 'number' ||
    kind === 'boolean' ||
    kind === 'undefined' ||
    kind === 'bigint'
  )
    return true;
  if (kind !== 'object') return false;
  try {
    structuredClone(value);
    return true;
  } catch {
    return false;
  }
}

/** Runs `read`, or gives `fallback` when it throws (a getter that throws, a Proxy trap, ...). */
function attempt<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/** A short text for any value, even one `String()` refuses (null-prototype objects, symbols in Proxies, ...). */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return `${value}n`;
  const text = attempt(() => String(value), undefined);
  if (text !== undefined && text !== '[object Object]') return text;
  const json = attempt(() => JSON.stringify(value), undefined);
  if (typeof json === 'string') return json.length > 500 ? `${json.slice(0, 500)}...` : json;
  return attempt(() => Object.prototype.toString.call(value), 'a value that cannot be described');
}

function isError(value: unknown): value is Error {
  return attempt(() => value instanceof Error, false);
}

function serializeUnchecked(error: unknown, depth: number): SerializedError {
  if (!isError(error)) {
    return { name: 'Error', message: describeValue(error), fields: {} };
  }
  const fields: Record<string, unknown> = {};
  for (const key of attempt(() => Object.keys(error), [] as string[])) {
    if (SKIPPED_FIELDS.has(key)) continue;
    const value = attempt(() => (error as unknown as Record<string, unknown>)[key], undefined);
    if (isCloneableField(value)) fields[key] = value;
  }
  const name = attempt(() => error.name, 'Error');
  const message = attempt(() => error.message, '');
  const stack = attempt(() => error.stack, undefined);
  const cause = attempt(() => error.cause, undefined);
  return {
    name: typeof name === 'string' ? name : 'Error',
    message: typeof message === 'string' ? message : describeValue(message),
    stack: typeof stack === 'string' ? stack : undefined,
    fields,
    cause: cause !== undefined && depth < MAX_CAUSE_DEPTH ? serializeError(cause, depth + 1) : undefined,
  };
}

/**
 * Turns anything thrown into data that survives `postMessage`, keeping the class name and data fields.
 * Never throws: null-prototype objects, Proxies, throwing getters, cycles and BigInts all give an answer.
 */
export function serializeError(error: unknown, depth = 0): SerializedError {
  try {
    return serializeUnchecked(error, depth);
  } catch {
    return { name: 'Error', message: 'the hosted object threw a value that cannot be described', fields: {} };
  }
}
