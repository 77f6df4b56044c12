import { deepClone } from '../utils/clone';
import { isPlainObject } from '../utils/is';
import { keepShape } from '../utils/keep-shape';
import { toText } from '../utils/text';
import { ValidationError } from './errors';
import { ActionStatusCode, ActionValidCode } from './status';

/** One item of a tool's result: `type` is 'text' for plain text, else e.g. 'image' with a path or URL. */
export interface ActionResultItem {
  type: string;
  content: string;
}

/** A tool invocation as the model asks for it: a tool name and its arguments (an object or a JSON string). */
export interface FunctionCall {
  name: string;
  parameters: Record<string, unknown> | string;
}

/** What {@link ActionReturn}'s constructor takes; every field is optional. */
export interface ActionReturnInit {
  args?: Record<string, unknown> | null | undefined;
  url?: string | null | undefined;
  type?: string | null | undefined;
  result?: ActionResultItem[] | null | undefined;
  errmsg?: string | null | undefined;
  state?: ActionStatusCode | undefined;
  thought?: string | null | undefined;
  valid?: ActionValidCode | undefined;
}

/** An ActionReturn's JSON form (see {@link ActionReturn.toJSON}): Lagent's fields, `valid` only when not `OPEN`. */
export type ActionReturnJSON = Required<{
  [K in Exclude<keyof ActionReturnInit, 'valid'>]: ActionReturnInit[K] | null;
}> & { valid?: ActionValidCode | null };

/** The outcome of one tool call: its result items or its error, in Lagent's shape. */
export class ActionReturn {
  args: Record<string, unknown> | null;
  url: string | null;
  type: string | null;
  result: ActionResultItem[] | null;
  errmsg: string | null;
  state: ActionStatusCode;
  thought: string | null;
  valid: ActionValidCode;

  constructor(init: ActionReturnInit = {}) {
    this.args = init.args ?? null;
    this.url = init.url ?? null;
    this.type = init.type ?? null;
    this.result = init.result ?? null;
    this.errmsg = init.errmsg ?? null;
    this.state = init.state ?? ActionStatusCode.SUCCESS;
    this.thought = init.thought ?? null;
    this.valid = init.valid ?? ActionValidCode.OPEN;
  }

  /** The result as text: 'text' items as they are, others as `[type](content)`, one per line. */
  formatResult(): string {
    const result = this.result;
    if (!result) return '';
    if (!Array.isArray(result)) return toText(result);
    const lines: string[] = [];
    for (const item of result) {
      if (item === null || item === undefined) continue;
      const content = toText(item.content);
      lines.push(item.type === 'text' ? content : `[${toText(item.type)}](${content})`);
    }
    return lines.join('\n');
  }

  /**
   * The text the model sees for this call: the result text when the call succeeded, otherwise the error
   * message (or, when there is none, whatever result there is, or a sentence naming the state).
   *
   * @example
   * new ActionReturn({ result: [{ type: 'text', content: '42' }] }).toText(); // '42'
   * new ActionReturn({ errmsg: 'city not found', state: ActionStatusCode.API_ERROR }).toText(); // 'city not found'
   */
  toText(): string {
    if (this.state === ActionStatusCode.SUCCESS) return this.formatResult();
    if (typeof this.errmsg === 'string' && this.errmsg !== '') return this.errmsg;
    return this.formatResult() || `The tool call failed (state ${this.state}).`;
  }

  clone(): ActionReturn {
    return new ActionReturn({
      args: deepClone(this.args),
      url: this.url,
      type: this.type,
      result: deepClone(this.result),
      errmsg: this.errmsg,
      state: this.state,
      thought: this.thought,
      valid: this.valid,
    });
  }

  /**
   * Lagent's JSON form of the result. `valid`, the executors' own bookkeeping, is written only when it says
   * something (not `OPEN`, its default), so chunks, state dicts and pages show what the tool returned;
   * Lagent and {@link ActionReturn.from} read a missing `valid` as `OPEN`.
   */
  toJSON(): ActionReturnJSON {
    const json: ActionReturnJSON = {
      args: deepClone(this.args),
      url: this.url,
      type: this.type,
      result: deepClone(this.result),
      errmsg: this.errmsg,
      state: this.state,
      thought: this.thought,
    };
    if (this.valid !== ActionValidCode.OPEN) json.valid = this.valid;
    return json;
  }

  /**
   * True when `value` is an ActionReturn's JSON form — what {@link ActionReturn.toJSON} writes and what
   * Lagent dumps: a plain object with exactly the eight fields (or the seven without `valid`), an integer
   * `state`, an integer or null `valid`, and every other field of its type or null. Messages loaded from
   * JSON get such content back as an `ActionReturn`.
   */
  static isJSON(value: unknown): value is ActionReturnJSON {
    if (!isPlainObject(value)) return false;
    const keys = Object.keys(value);
    const expected = Object.hasOwn(value, 'valid') ? FIELDS.length : FIELDS.length - 1;
    if (keys.length !== expected || !REQUIRED_FIELDS.every((field) => Object.hasOwn(value, field)))
      return false;
    return fieldProblem(value) === null;
  }

  /**
   * An ActionReturn from its JSON form (Lagent's dump, or a subset of its fields; missing ones take their
   * defaults). An ActionReturn is copied. Throws a {@link ValidationError} naming the field that does not fit.
   */
  static from(json: unknown): ActionReturn {
    if (json instanceof ActionReturn) return json.clone();
    if (!isPlainObject(json)) {
      throw new ValidationError({ field: '(root)', message: 'ActionReturn.from expects an object' });
    }
    const unknown = Object.keys(json).find((key) => !(FIELDS as readonly string[]).includes(key));
    if (unknown !== undefined) {
      throw new ValidationError({
        field: unknown,
        message: `ActionReturn.from: unknown field "${unknown}" (fields: ${FIELDS.join(', ')})`,
      });
    }
    const problem = fieldProblem(json);
    if (problem) {
      throw new ValidationError({
        field: problem[0],
        message: `ActionReturn.from: "${problem[0]}" must be ${problem[1]}`,
      });
    }
    const init = json as ActionReturnInit;
    return new ActionReturn({
      args: deepClone(init.args),
      url: init.url,
      type: init.type,
      result: init.result?.map((item) => ({ ...item })) ?? null,
      errmsg: init.errmsg,
      state: init.state,
      thought: init.thought,
      valid: init.valid,
    });
  }
}

// One per tool call, and dropped with the turn's messages: see keepShape.
keepShape(new ActionReturn());

const FIELDS = ['args', 'url', 'type', 'result', 'errmsg', 'state', 'thought', 'valid'] as const;
/** The fields every JSON form has (`valid` is left out at its default). */
const REQUIRED_FIELDS = FIELDS.filter((field) => field !== 'valid');

/** The first field of an ActionReturn's JSON form whose value has the wrong type, with what it must be. */
function fieldProblem(json: Record<string, unknown>): [string, string] | null {
  for (const field of ['url', 'type', 'errmsg', 'thought'] as const) {
    const value = json[field];
    if (value !== undefined && value !== null && typeof value !== 'string')
      return [field, 'a string or null'];
  }
  if (json.args !== undefined && json.args !== null && !isPlainObject(json.args)) {
    return ['args', 'an object or null'];
  }
  const result = json.result;
  if (
    result !== undefined &&
    result !== null &&
    !(
      Array.isArray(result) &&
      result.every(
        (item) => isPlainObject(item) && typeof item.type === 'string' && typeof item.content === 'string',
      )
    )
  ) {
    return ['result', 'a list of { type, content } strings, or null'];
  }
  if (json.state !== undefined && !Number.isInteger(json.state)) return ['state', 'an integer'];
  if (json.valid !== undefined && json.valid !== null && !Number.isInteger(json.valid)) {
    return ['valid', 'an integer or null'];
  }
  return null;
}
