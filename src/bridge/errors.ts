import * as errors from '../schema/errors';
import type { SerializedError } from './protocol';

type ErrorClass = new (options: any) => Error;

/**
 * lagent-ts errors are rebuilt with their own class so `instanceof` and `name` keep working. Every error class
 * in `schema/errors` takes one options object whose keys match its fields, which is what makes this generic.
 */
let lagentErrors: Map<string, ErrorClass> | undefined;

function lagentErrorClass(name: string): ErrorClass | undefined {
  if (lagentErrors === undefined) {
    lagentErrors = new Map();
    for (const value of Object.values(errors)) {
      if (typeof value !== 'function') continue;
      if (value !== errors.LagentError && !(value.prototype instanceof errors.LagentError)) continue;
      const errorClass = value as unknown as ErrorClass;
      let errorName = value.name;
      try {
        errorName = new errorClass({ message: '' }).name;
      } catch {
        // A constructor that insists on its fields: its class name is its error name by convention.
      }
      lagentErrors.set(errorName, errorClass);
    }
  }
  return lagentErrors.get(name);
}

const STANDARD_ERRORS = new Map<string, new (message: string) => Error>([
  ['Error', Error],
  ['TypeError', TypeError],
  ['RangeError', RangeError],
  ['SyntaxError', SyntaxError],
  ['ReferenceError', ReferenceError],
  ['EvalError', EvalError],
  ['URIError', URIError],
]);

const DOM_EXCEPTIONS = new Set(['AbortError', 'TimeoutError', 'DataCloneError']);

/**
 * Rebuilds an error that crossed the bridge: lagent-ts errors and standard errors get their class back;
 * other classes become an `Error` whose `name` is the original class name. Data fields (`status`,
 * `attempts`, `code`, ...) are copied over, and the stack says it came from the bridge worker.
 */
export function deserializeError(data: SerializedError): Error {
  const cause = data.cause === undefined ? undefined : deserializeError(data.cause);
  let error: Error;
  const lagentClass = lagentErrorClass(data.name);
  if (lagentClass !== undefined) {
    error = new lagentClass({ ...data.fields, message: data.message, cause });
  } else if (DOM_EXCEPTIONS.has(data.name) && data.fields.code === undefined) {
    error = new DOMException(data.message, data.name);
  } else {
    const standard = STANDARD_ERRORS.get(data.name) ?? Error;
    error = new standard(data.message);
    if (cause !== undefined)
      Object.defineProperty(error, 'cause', { value: cause, configurable: true, writable: true });
    if (error.name !== data.name) {
      Object.defineProperty(error, 'name', { value: data.name, configurable: true, writable: true });
    }
  }
  for (const [key, value] of Object.entries(data.fields)) {
    if (!(key in error)) (error as unknown as Record<string, unknown>)[key] = value;
  }
  if (data.stack !== undefined) {
    Object.defineProperty(error, 'stack', {
      value: `${data.stack}\n    (in the sync bridge worker)`,
      configurable: true,
      writable: true,
    });
  }
  return error;
}
