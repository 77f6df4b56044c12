import { z } from 'zod';

/** A JSON Schema node as zod's `toJSONSchema` emits it (only the keys read here). */
export interface JSONSchemaNode {
  type?: string | string[] | undefined;
  description?: string | undefined;
  default?: unknown | undefined;
  enum?: unknown[] | undefined;
  const?: unknown | undefined;
  anyOf?: JSONSchemaNode[] | undefined;
  oneOf?: JSONSchemaNode[] | undefined;
  items?: JSONSchemaNode | undefined;
  properties?: Record<string, JSONSchemaNode> | undefined;
  required?: string[] | undefined;
  [key: string]: unknown;
}

/** A zod schema as JSON Schema describing its input (fields with defaults optional); never throws. */
export function toJSONSchemaNode(schema: z.ZodType): JSONSchemaNode {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JSONSchemaNode;
  delete json.$schema;
  return withoutSafeIntegerBounds(json);
}

/** Drops the ±2^53 bounds zod adds to every integer: noise to a model, and not a real constraint. */
function withoutSafeIntegerBounds(node: JSONSchemaNode): JSONSchemaNode {
  if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
  if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) {
      for (const item of value)
        if (item && typeof item === 'object') withoutSafeIntegerBounds(item as JSONSchemaNode);
    } else if (value && typeof value === 'object') withoutSafeIntegerBounds(value as JSONSchemaNode);
  }
  return node;
}

/** A short type name for a JSON Schema node: `string`, `integer`, `string[]`, `"a" | "b"`, ... */
export function typeNameOf(node: JSONSchemaNode | undefined): string {
  if (!node) return 'any';
  if (node.enum) return node.enum.map((value) => JSON.stringify(value)).join(' | ');
  if ('const' in node) return JSON.stringify(node.const);
  const union = node.anyOf ?? node.oneOf;
  if (union) return union.map(typeNameOf).join(' | ');
  if (Array.isArray(node.type)) return node.type.join(' | ');
  if (node.type === 'array') return node.items ? `${wrap(typeNameOf(node.items))}[]` : 'array';
  return node.type ?? 'any';
}

function wrap(name: string): string {
  return name.includes(' | ') ? `(${name})` : name;
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let value = data;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** A dotted path for a zod issue path (`addr.city`, `items.0`). */
export function pathText(path: readonly PropertyKey[]): string {
  return path.map(String).join('.');
}

/**
 * One sentence for a zod issue, naming the field: `missing required field "name" (string)`,
 * `unknown field "zz"`, `field "age": expected number, received string`. `noun` is e.g. `argument`.
 */
export function describeIssue(issue: z.core.$ZodIssue, data: unknown, noun = 'field'): string {
  const field = pathText(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const where = field ? ` in "${field}"` : '';
    const keys = issue.keys.map((key) => `"${key}"`).join(', ');
    return `unknown ${noun}${issue.keys.length > 1 ? 's' : ''} ${keys}${where}`;
  }
  if (issue.code === 'invalid_type' && field && valueAt(data, issue.path) === undefined) {
    return `missing required ${noun} "${field}" (${issue.expected})`;
  }
  const message = issue.message.replace(/^Invalid input: /, '');
  return field ? `${noun} "${field}": ${message}` : message;
}

/** Every issue of a zod error as one sentence, fields named. */
export function describeIssues(error: z.ZodError, data: unknown, noun = 'field'): string {
  return error.issues.map((issue) => describeIssue(issue, data, noun)).join('; ');
}
