import { type ActionResultItem, ActionReturn } from '../schema/action-return';
import { isPlainObject } from '../utils/is';

function isResultItems(value: unknown): value is ActionResultItem[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (item) => isPlainObject(item) && typeof item.type === 'string' && typeof item.content === 'string',
    )
  );
}

function bigintsAsText(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/** A tool's output as text: strings as they are (every character kept), other values as JSON. */
export function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (output === undefined) return '';
  if (typeof output !== 'object' || output === null) return String(output);
  try {
    return JSON.stringify(output, bigintsAsText) ?? String(output);
  } catch {
    return String(output);
  }
}

/**
 * A tool's output as an {@link ActionReturn}: one it returned is completed with `args` and `type`; a list
 * of `{ type, content }` items is kept as the result; anything else becomes one text item.
 */
export function toActionReturn(output: unknown, args: Record<string, unknown>, type: string): ActionReturn {
  if (output instanceof ActionReturn) {
    output.args ??= args;
    output.type ??= type;
    return output;
  }
  const result = isResultItems(output)
    ? output.map((item) => ({ type: item.type, content: item.content }))
    : [{ type: 'text', content: outputText(output) }];
  return new ActionReturn({ args, type, result });
}
