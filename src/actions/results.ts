import { type ActionResultItem, ActionReturn } from '../schema/action-return';
import { ActionStatusCode } from '../schema/status';
import { isPlainObject } from '../utils/is';
import { toText, UNREADABLE } from '../utils/text';

function isResultItems(value: unknown): value is ActionResultItem[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (item) => isPlainObject(item) && typeof item.type === 'string' && typeof item.content === 'string',
    )
  );
}

/** A tool's output as text: strings as they are (every character kept), other values as JSON; never throws. */
export function outputText(output: unknown): string {
  return toText(output);
}

/**
 * The `ActionReturn` a tool returned, with `args` and `type` filled in when it left them empty (as
 * Lagent does). It is completed in place, unless it is frozen or will not take the values: then a copy is.
 */
function completeReturn(output: ActionReturn, args: Record<string, unknown>, type: string): ActionReturn {
  const missingArgs = !output.args || (isPlainObject(output.args) && Object.keys(output.args).length === 0);
  const missingType = !output.type;
  if (!Object.isFrozen(output)) {
    if (
      (!missingArgs || Reflect.set(output, 'args', args)) &&
      (!missingType || Reflect.set(output, 'type', type))
    )
      return output;
  }
  return new ActionReturn({
    args: missingArgs ? args : output.args,
    url: output.url,
    type: missingType ? type : output.type,
    result: output.result,
    errmsg: output.errmsg,
    state: output.state,
    thought: output.thought,
    valid: output.valid,
  });
}

/**
 * A tool's output as an {@link ActionReturn}: one it returned is completed with `args` and `type`; a list
 * of `{ type, content }` items is kept as the result; anything else becomes one text item (see
 * {@link outputText}). Never throws: an output that cannot be read at all (a Proxy whose traps throw) is
 * an `API_ERROR` saying so.
 */
export function toActionReturn(
  output: unknown,
  args: Record<string, unknown>,
  type: string,
  label = type,
): ActionReturn {
  try {
    if (output instanceof ActionReturn) return completeReturn(output, args, type);
    if (isResultItems(output)) {
      return new ActionReturn({
        args,
        type,
        result: output.map((item) => ({ type: item.type, content: item.content })),
      });
    }
  } catch {
    return unreadable(args, type, label);
  }
  const text = outputText(output);
  if (text === JSON.stringify(UNREADABLE) && typeof output !== 'string') return unreadable(args, type, label);
  return new ActionReturn({ args, type, result: [{ type: 'text', content: text }] });
}

function unreadable(args: Record<string, unknown>, type: string, label: string): ActionReturn {
  return new ActionReturn({
    args,
    type,
    errmsg: `the tool ${label} returned a value that cannot be read`,
    state: ActionStatusCode.API_ERROR,
  });
}
