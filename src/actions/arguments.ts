import type { z } from 'zod';
import { parseLenientJSON } from '../prompts/parsers/json-text';
import { describeIssues } from '../prompts/schema-text';
import { isPlainObject } from '../utils/is';

/** An API as the argument checker needs it. */
export interface ArgumentRules {
  readonly schema: z.ZodObject;
  readonly signature: string;
  readonly fromText?: ((text: string) => Record<string, unknown>) | undefined;
}

/** Checked arguments, or a sentence for the model saying what is wrong with them. */
export type CheckedArguments =
  | { ok: true; args: Record<string, unknown> }
  | { ok: false; args: Record<string, unknown>; errmsg: string };

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

function shorten(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function fail(
  label: string,
  rules: ArgumentRules,
  args: Record<string, unknown>,
  problem: string,
): CheckedArguments {
  return {
    ok: false,
    args,
    errmsg: `Invalid arguments for ${label}: ${problem}. It takes ${rules.signature}.`,
  };
}

/**
 * Turns what the model passed into validated arguments: a JSON string is parsed first (a ```json fence is
 * fine), `null` means no arguments, and the result is checked against the zod schema. Failures name the field.
 */
export function checkArguments(rules: ArgumentRules, raw: unknown, label: string): CheckedArguments {
  let input: unknown = raw;
  if (input === undefined || input === null) input = EMPTY;
  else if (typeof input === 'string') {
    const text = input.trim();
    if (text === '') input = EMPTY;
    else {
      try {
        input = parseLenientJSON(text);
      } catch (error) {
        if (rules.fromText) input = rules.fromText(input as string);
        else {
          return fail(
            label,
            rules,
            { inputs: raw },
            `the arguments must be a JSON object, but ${JSON.stringify(shorten(text))} is not valid JSON (${(error as Error).message})`,
          );
        }
      }
    }
  }
  if (typeof input === 'string' && rules.fromText) input = rules.fromText(input);
  if (!isPlainObject(input)) {
    const what = Array.isArray(input) ? 'an array' : typeof input;
    return fail(label, rules, { inputs: raw }, `the arguments must be a JSON object, got ${what}`);
  }
  const result = rules.schema.safeParse(input);
  if (result.success) return { ok: true, args: result.data as Record<string, unknown> };
  return fail(label, rules, input, describeIssues(result.error, input, 'argument'));
}
