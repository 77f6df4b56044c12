import type { z } from 'zod';
import { ConfigurationError, ParseError } from '../../schema/errors';
import { kindOf, toText } from '../../utils/text';
import { describeIssues, type JSONSchemaNode, toJSONSchemaNode } from '../schema-text';
import { StrParser } from './str-parser';

/** Options of {@link CustomFormatParser}. */
export interface CustomFormatParserOptions<S extends z.ZodType, U extends z.ZodType | undefined = undefined> {
  /** The expected output (Lagent's `default_format`): an object schema, one XML tag per field. */
  schema: S;
  /** A second format the model may answer in instead (Lagent's `unknown_format`), e.g. "I do not know". */
  unknownSchema?: U;
  /**
   * The format instruction: `{format}` (or `{default_format}`) is replaced by the schema as XML tags,
   * `{unknown_format}` by the unknown schema's, other placeholders by the extra options.
   * @default an English instruction showing `{format}`, and `{unknown_format}` when there is one
   */
  template?: string | undefined;
  /**
   * Whether an agent using this parser as its `outputFormat` appends the format instruction to its system
   * prompt (once: not when the agent's `template` already contains it).
   * @default true
   */
  addsFormatInstruction?: boolean | undefined;
  [field: string]: unknown;
}

const FORMAT_TEMPLATE =
  'Reply with one XML tag per field, in this format (<!-- --> lines are comments):\n```html\n{format}```';
const UNKNOWN_TEMPLATE =
  '\nIf you cannot answer, reply in this format instead:\n```html\n{unknown_format}```';

/** Lagent shows field types by their Python names. */
const PYTHON_TYPE: Readonly<Record<string, string>> = {
  string: 'str',
  integer: 'int',
  number: 'float',
  boolean: 'bool',
  array: 'list',
  object: 'dict',
  null: 'None',
};

/** Lagent's tag pattern: an optional `<!-- comment -->`, then `<key ...>value</key>` (values may span lines). */
const TAG = /(<!--\s*([\s\S]*?)\s*-->)?\s*<(\w+)[^>]*>([\s\S]*?)<\/\3>/g;

/** Pydantic's words for booleans in lax mode. */
const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);

/**
 * Lagent's XML-tag output parser: the format instruction shows each field of an object schema as
 * `<name type="str">default</name>` (its description as an `<!-- comment -->` above), and the model's reply is
 * read tag by tag (`<name>value</name>`, anywhere in the text, the last of a repeated tag winning). Tag values
 * are text; a field the schema types as a number, boolean, array or object is converted first (`" 30 "` → `30`,
 * `"yes"` → `true`, JSON for arrays and objects), as pydantic does. With `unknownSchema`, a reply that does not
 * fit `schema` is read with it instead. A reply that fits neither throws a `ParseError` naming the fields.
 *
 * @example
 * const parser = new CustomFormatParser({
 *   schema: z.object({ name: z.string().describe("User's full name"), age: z.number().int() }),
 * });
 * parser.formatSchema(); // '<!-- User\'s full name -->\n<name type="str"></name>\n<age type="int"></age>\n'
 * parser.parseResponse('<name type="str">John Doe</name>\n<age type="int">30</age>'); // { name: 'John Doe', age: 30 }
 */
export class CustomFormatParser<
  S extends z.ZodType = z.ZodType,
  U extends z.ZodType | undefined = undefined,
> extends StrParser {
  /** What the output must match. */
  readonly schema: S;
  /** The alternative format, if any. */
  readonly unknownSchema: U;
  /** See {@link CustomFormatParserOptions.addsFormatInstruction}. */
  readonly addsFormatInstruction: boolean;
  readonly #fields: ReadonlyMap<z.ZodType, Record<string, JSONSchemaNode>>;
  readonly #required: ReadonlyMap<z.ZodType, readonly string[]>;

  constructor(options: CustomFormatParserOptions<S, U>) {
    const {
      schema,
      unknownSchema,
      template,
      addsFormatInstruction = true,
      ...rest
    } = options ?? ({} as never);
    const schemas = unknownSchema === undefined ? [schema] : [schema, unknownSchema];
    const fields = new Map<z.ZodType, Record<string, JSONSchemaNode>>();
    const required = new Map<z.ZodType, readonly string[]>();
    for (const [index, each] of schemas.entries()) {
      const option = index === 0 ? 'schema' : 'unknownSchema';
      if (!each || typeof (each as { safeParse?: unknown }).safeParse !== 'function') {
        throw new ConfigurationError({
          message: `CustomFormatParser needs a zod object schema as ${option}: new CustomFormatParser({ ${option}: z.object(...) })`,
        });
      }
      const node = toJSONSchemaNode(each);
      if (node.type !== 'object' || !node.properties) {
        throw new ConfigurationError({
          message: `CustomFormatParser: ${option} must be a zod object schema (one XML tag per field)`,
        });
      }
      fields.set(each, node.properties);
      required.set(each, node.required ?? []);
    }
    const defaultTemplate =
      unknownSchema === undefined ? FORMAT_TEMPLATE : FORMAT_TEMPLATE + UNKNOWN_TEMPLATE;
    super({
      ...rest,
      template: template ?? defaultTemplate,
      format: schema,
      default_format: schema,
      ...(unknownSchema === undefined ? {} : { unknown_format: unknownSchema }),
    });
    this.schema = schema;
    this.unknownSchema = unknownSchema as U;
    this.addsFormatInstruction = addsFormatInstruction;
    this.#fields = fields;
    this.#required = required;
  }

  /** `schema` (or another of this parser's schemas) as Lagent's XML tags, one line per field. */
  formatSchema(schema: z.ZodType = this.schema): string {
    const fields = this.#fields.get(schema);
    if (!fields) return '';
    const required = new Set(this.#required.get(schema));
    let text = '';
    for (const [name, node] of Object.entries(fields)) {
      if (node.description) text += `<!-- ${node.description} -->\n`;
      const value = 'default' in node && !required.has(name) ? defaultText(node.default) : '';
      text += `<${name} type="${pythonTypeName(node)}">${value}</${name}>\n`;
    }
    return text;
  }

  protected override formatToString(value: unknown): string {
    if (this.#fields.has(value as z.ZodType)) return this.formatSchema(value as z.ZodType);
    return super.formatToString(value);
  }

  /** The tags of `text` as the schema's value (or the unknown schema's); throws a `ParseError` naming what is wrong. */
  override parseResponse(text: string): z.output<S> | (U extends z.ZodType ? z.output<U> : never) {
    if (typeof text !== 'string') {
      throw new ParseError({
        text: toText(text),
        message: `CustomFormatParser expects text, got ${kindOf(text)}`,
      });
    }
    const tags: Record<string, string> = {};
    for (const match of text.matchAll(TAG)) tags[match[3]!] = match[4]!;
    const first = this.#validate(this.schema, tags);
    if (first.success) return first.data as z.output<S>;
    if (this.unknownSchema !== undefined) {
      const second = this.#validate(this.unknownSchema, tags);
      if (second.success) return second.data as never;
      throw new ParseError({
        text,
        message: `CustomFormatParser: the output matches neither format: ${describeIssues(first.error, first.input)}; or, for the other format: ${describeIssues(second.error, second.input)}`,
        cause: first.error,
      });
    }
    throw new ParseError({
      text,
      message: `CustomFormatParser: the output does not match the format: ${describeIssues(first.error, first.input)}`,
      cause: first.error,
    });
  }

  /** The inverse of parsing: one `<field>value</field>` line per field (non-text values as JSON). */
  override formatResponse(parsed: unknown): string {
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      return super.formatResponse(parsed);
    return Object.entries(parsed)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => `<${name}>${toText(value)}</${name}>`)
      .join('\n');
  }

  #validate(
    schema: z.ZodType,
    tags: Record<string, string>,
  ): { success: true; data: unknown } | { success: false; error: z.ZodError; input: unknown } {
    const fields = this.#fields.get(schema) ?? {};
    const input: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(tags)) {
      const node = fields[name];
      input[name] = node === undefined ? value : convert(value, node);
    }
    const result = schema.safeParse(input);
    return result.success
      ? { success: true, data: result.data }
      : { success: false, error: result.error, input };
  }
}

/** The JSON Schema types a field accepts (its `type`, or its union members'). */
function typesOf(node: JSONSchemaNode): Set<string> {
  const types = new Set<string>();
  const add = (each: JSONSchemaNode) => {
    if (Array.isArray(each.type)) for (const type of each.type) types.add(type);
    else if (each.type !== undefined) types.add(each.type);
    for (const member of each.anyOf ?? each.oneOf ?? []) add(member);
  };
  add(node);
  return types;
}

/** A tag's text as the value its field takes: text stays text; numbers, booleans and JSON are read leniently. */
function convert(text: string, node: JSONSchemaNode): unknown {
  const types = typesOf(node);
  if (types.size === 0 || types.has('string')) return text;
  const trimmed = text.trim();
  if (
    (types.has('integer') || types.has('number')) &&
    /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(trimmed)
  ) {
    return Number(trimmed);
  }
  if (types.has('boolean')) {
    const word = trimmed.toLowerCase();
    if (TRUE_WORDS.has(word)) return true;
    if (FALSE_WORDS.has(word)) return false;
  }
  if (types.has('null') && (trimmed === '' || trimmed === 'None' || trimmed === 'null')) return null;
  if (types.has('array') || types.has('object')) {
    try {
      return JSON.parse(trimmed);
    } catch {
      return text;
    }
  }
  return text;
}

function pythonTypeName(node: JSONSchemaNode): string {
  const types = [...typesOf(node)];
  if (types.length !== 1) return 'Any';
  return PYTHON_TYPE[types[0]!] ?? 'Any';
}

/** A default as Python's `str()` shows it in Lagent's instruction. */
function defaultText(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null) return 'None';
  return toText(value);
}
