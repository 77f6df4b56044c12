import type { z } from 'zod';
import { parseLenientJSON } from '../prompts/parsers/json-text';
import { describeIssues } from '../prompts/schema-text';
import { deepClone } from '../utils/clone';
import { isPlainObject } from '../utils/is';
import { kindOf, shorten, thrownText } from '../utils/text';

/** An API as the argument checker needs it. */
export interface ArgumentRules {
  readonly schema: z.ZodObject;
  readonly signature: string;
  readonly fromText?: ((text: string) => Record<string, unknown>) | undefined;
}

/**
 * Checked arguments, or a sentence for the model saying what is wrong with them. `args` is what the tool
 * runs with (zod's output, defaults filled in); `input` is what the model sent, as an object (a JSON
 * string parsed), for `ActionReturn.args`.
 */
export type CheckedArguments =
  | { ok: true; args: Record<string, unknown>; input: Record<string, unknown> }
  | { ok: false; errmsg: string };

function fail(label: string, rules: ArgumentRules, problem: string): CheckedArguments {
  return { ok: false, errmsg: `Invalid arguments for ${label}: ${problem}. It takes ${rules.signature}.` };
}

/** Whether the schema keeps keys it does not declare (`z.looseObject`, `.catchall()`), and how to check them. */
function catchallOf(schema: z.ZodObject): z.ZodType | undefined {
  const catchall = schema._zod.def.catchall as z.ZodType | undefined;
  return catchall && catchall._zod.def.type !== 'never' ? catchall : undefined;
}

const PROTO_KEY = '__proto__';

/**
 * zod leaves a `"__proto__"` key out of its output (so that it never becomes a prototype). A schema that
 * keeps unknown keys keeps this one too, as an own data property like any other key.
 */
function keepProtoKey(
  rules: ArgumentRules,
  input: Record<string, unknown>,
  data: Record<string, unknown>,
): string | undefined {
  if (!Object.hasOwn(input, '__proto__') || Object.hasOwn(data, '__proto__')) return undefined;
  const catchall = catchallOf(rules.schema);
  if (!catchall) return undefined;
  // An own data property: reading it by key gives the value, not the prototype.
  const value = input[PROTO_KEY];
  const checked = catchall.safeParse(value);
  if (!checked.success) return `argument "__proto__": ${describeIssues(checked.error, value, 'field')}`;
  Object.defineProperty(data, '__proto__', {
    value: checked.data,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return undefined;
}

/**
 * Turns what the model passed into validated arguments: a JSON string is parsed first (a ```json fence is
 * fine), `null` means no arguments, and the result is checked against the zod schema. Failures name the field.
 */
export function checkArguments(rules: ArgumentRules, raw: unknown, label: string): CheckedArguments {
  let input: unknown = raw;
  if (input === undefined || input === null) input = {};
  else if (typeof input === 'string') {
    const text = input.trim();
    if (text === '') input = {};
    else {
      try {
        input = parseLenientJSON(text);
      } catch (error) {
        if (rules.fromText) input = rules.fromText(input as string);
        else {
          return fail(
            label,
            rules,
            `the arguments must be a JSON object, but ${JSON.stringify(shorten(text))} is not valid JSON (${thrownText(error, 'parsing')})`,
          );
        }
      }
    }
  }
  if (typeof input === 'string' && rules.fromText) input = rules.fromText(input);
  if (!isPlainObject(input)) {
    return fail(label, rules, `the arguments must be a JSON object, got ${kindOf(input)}`);
  }
  const result = rules.schema.safeParse(input);
  if (!result.success) return fail(label, rules, describeIssues(result.error, input, 'argument'));
  const args = result.data as Record<string, unknown>;
  const problem = keepProtoKey(rules, input, args);
  if (problem) return fail(label, rules, problem);
  // What the model sent is kept for ActionReturn.args; an object the caller passed in is copied.
  return { ok: true, args, input: input === raw ? deepClone(input) : input };
}
