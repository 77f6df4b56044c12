import { z } from 'zod';
import { ConfigurationError } from './errors';

/**
 * The `responseFormat` call option: ask for a JSON reply that fits `schema` (a zod schema or JSON Schema).
 * Clients whose API constrains the output to a schema use it (OpenAI's strict `json_schema` response format,
 * the Responses API's `text.format`, Anthropic's `output_config.format`, the AI SDK's `responseFormat`); the
 * others ignore it, and the instruction in the prompt (a `JSONParser`'s) does the asking.
 *
 * @example
 * await llm.generate(messages, { responseFormat: { type: 'json', schema: z.object({ city: z.string() }) } });
 */
export interface ResponseFormat {
  type: 'json';
  /** The reply's shape; without one, any JSON object (OpenAI's `json_object` mode). */
  schema?: z.ZodType | Record<string, unknown> | undefined;
  /** The schema's name, where the API takes one. @default 'response' */
  name?: string | undefined;
  /** What the reply is, where the API takes it. */
  description?: string | undefined;
}

/**
 * A schema as the strict structured-output modes take it: the JSON Schema of a zod schema (its input side: what
 * the model writes and the parser reads), with the rules OpenAI's `strict: true` and Anthropic's constrained
 * decoding share applied.
 */
export interface StrictJSONSchema {
  name: string;
  description?: string | undefined;
  schema: Record<string, unknown>;
  /**
   * False when the schema cannot be made strict (an object with open-ended keys, such as `z.record`): it is then
   * sent without `strict` and the reply is only validated.
   */
  strict: boolean;
}

/**
 * Keywords the strict modes refuse or ignore. They are moved into the node's description (the reply is still
 * validated against the full schema when it is parsed).
 */
const CONSTRAINTS = [
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
] as const;

/** Bounds zod gives every `z.number().int()`: not worth a word to the model. */
const SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

const converted = new WeakMap<object, StrictJSONSchema>();

/**
 * The strict JSON Schema of a response format's schema (cached per schema object):
 * - every object lists all its properties in `required` and has `additionalProperties: false`;
 * - a property that was optional becomes nullable (the model writes `null` for "absent";
 *   `JSONParser` reads such a `null` as absent again);
 * - `oneOf` becomes `anyOf`; `default` and `$schema` are dropped; length, range, pattern and format constraints
 *   are moved into the description.
 *
 * Undefined when the format has no schema. Throws a `ConfigurationError` for a schema zod cannot express as
 * JSON Schema.
 */
export function strictJSONSchema(format: ResponseFormat): StrictJSONSchema | undefined {
  const source = format.schema;
  if (source === undefined || source === null) return undefined;
  let result = converted.get(source);
  if (result !== undefined) {
    return format.name === undefined && format.description === undefined ? result : withNames(result, format);
  }
  let json: Record<string, unknown>;
  if (isZodSchema(source)) {
    try {
      json = z.toJSONSchema(source, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    } catch (error) {
      throw new ConfigurationError({
        message: `responseFormat: the zod schema cannot be written as JSON Schema: ${(error as Error).message}`,
        cause: error,
      });
    }
  } else if (typeof source === 'object' && !Array.isArray(source)) json = source;
  else {
    throw new ConfigurationError({
      message: 'responseFormat.schema must be a zod schema or a JSON Schema object',
    });
  }
  const state = { strict: true };
  const schema = strictNode(json, state) as Record<string, unknown>;
  delete schema.$schema;
  result = { name: 'response', schema, strict: state.strict };
  converted.set(source, result);
  return format.name === undefined && format.description === undefined ? result : withNames(result, format);
}

function withNames(result: StrictJSONSchema, format: ResponseFormat): StrictJSONSchema {
  const named: StrictJSONSchema = { ...result, name: format.name ?? result.name };
  if (format.description !== undefined) named.description = format.description;
  return named;
}

function isZodSchema(value: unknown): value is z.ZodType {
  return (
    value !== null &&
    typeof value === 'object' &&
    '_zod' in value &&
    typeof (value as { safeParse?: unknown }).safeParse === 'function'
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** One node made strict (a fresh object; the input is not changed). */
function strictNode(node: unknown, state: { strict: boolean }): unknown {
  if (!isRecord(node)) return node;
  const out: Record<string, unknown> = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'default' || key === '$schema') continue;
    if ((CONSTRAINTS as readonly string[]).includes(key)) {
      if ((key === 'minimum' || key === 'maximum') && Math.abs(Number(value)) >= SAFE_INTEGER) continue;
      notes.push(`${key}: ${JSON.stringify(value)}`);
      continue;
    }
    if (key === 'properties' && isRecord(value)) {
      const properties: Record<string, unknown> = {};
      for (const [name, child] of Object.entries(value)) properties[name] = strictNode(child, state);
      out.properties = properties;
    } else if ((key === 'anyOf' || key === 'oneOf' || key === 'allOf') && Array.isArray(value)) {
      out[key === 'oneOf' ? 'anyOf' : key] = value.map((child) => strictNode(child, state));
    } else if ((key === 'items' || key === 'not') && isRecord(value)) {
      out[key] = strictNode(value, state);
    } else if (key === 'prefixItems' && Array.isArray(value)) {
      out[key] = value.map((child) => strictNode(child, state));
    } else if ((key === '$defs' || key === 'definitions') && isRecord(value)) {
      const defs: Record<string, unknown> = {};
      for (const [name, child] of Object.entries(value)) defs[name] = strictNode(child, state);
      out[key] = defs;
    } else out[key] = value;
  }
  if (notes.length > 0) {
    const description = typeof out.description === 'string' ? `${out.description} ` : '';
    out.description = `${description}(${notes.join(', ')})`;
  }
  const isObject = out.type === 'object' || isRecord(out.properties);
  if (isObject) {
    const extra = out.additionalProperties;
    if (isRecord(extra) || (extra === true && !isRecord(out.properties))) {
      // Open-ended keys (a record): strict modes cannot express them.
      state.strict = false;
      delete out.propertyNames;
      return out;
    }
    const properties = isRecord(out.properties) ? out.properties : {};
    out.properties = properties;
    const required = new Set(Array.isArray(out.required) ? (out.required as string[]) : []);
    for (const name of Object.keys(properties)) {
      if (!required.has(name)) properties[name] = nullable(properties[name]);
    }
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  return out;
}

const PRIMITIVE = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** A node that also accepts `null`. */
function nullable(node: unknown): unknown {
  if (!isRecord(node)) return { anyOf: [node, { type: 'null' }] };
  const type = node.type;
  if (Array.isArray(node.enum)) {
    const values = node.enum.includes(null) ? node.enum : [...node.enum, null];
    const copy: Record<string, unknown> = { ...node, enum: values };
    if (typeof type === 'string') copy.type = [type, 'null'];
    return copy;
  }
  if (type === 'null') return node;
  // Primitive types take `null` in their type list; objects and arrays become an `anyOf`.
  if (typeof type === 'string' && PRIMITIVE.has(type) && node.const === undefined) {
    return { ...node, type: [type, 'null'] };
  }
  if (Array.isArray(type) && node.const === undefined && type.every((name) => PRIMITIVE.has(name))) {
    return type.includes('null') ? node : { ...node, type: [...type, 'null'] };
  }
  if (Array.isArray(node.anyOf)) {
    const hasNull = node.anyOf.some((option) => isRecord(option) && option.type === 'null');
    return hasNull ? node : { ...node, anyOf: [...node.anyOf, { type: 'null' }] };
  }
  return { anyOf: [node, { type: 'null' }] };
}
