import type { z } from 'zod';
import { type JSONSchemaNode, toJSONSchemaNode, typeNameOf } from '../prompts/schema-text';
import { isPlainObject } from '../utils/is';
import type { ActionParameter, ActionParameterType, ApiDescription } from './types';

/** Lagent's sentence telling the model how to pass arguments. */
export const JSON_PARAMETER_DESCRIPTION =
  'If you call this tool, you must pass arguments in the JSON format {key: value}, where the key is the parameter name.';

const TYPES: Record<string, ActionParameterType> = {
  string: 'STRING',
  integer: 'NUMBER',
  number: 'FLOAT',
  boolean: 'BOOLEAN',
  array: 'Array',
  object: 'Object',
};

/** The Lagent type of a JSON Schema node: the first non-null type of a union, strings for enums. */
export function lagentTypeOf(node: JSONSchemaNode | undefined): ActionParameterType {
  if (!node) return 'STRING';
  const union = node.anyOf ?? node.oneOf;
  if (union) return lagentTypeOf(union.find((member) => member.type !== 'null') ?? union[0]);
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== 'null') : node.type;
  if (type && TYPES[type]) return TYPES[type];
  if (node.enum?.every((value) => typeof value === 'number')) return 'FLOAT';
  return 'STRING';
}

/** What is derived once from an API's schema. */
export interface ApiSchemaInfo {
  description: ApiDescription;
  /** The JSON Schema of the arguments, for OpenAI tools. */
  jsonSchema: JSONSchemaNode;
  /** `a: integer, b?: string`, for error messages. */
  signature: string;
}

/** Describes one API from its zod schema. */
export function describeApi(name: string, description: string, schema: z.ZodObject): ApiSchemaInfo {
  return describeJSONSchema(name, description, toJSONSchemaNode(schema));
}

/**
 * Describes one API from the JSON Schema of its arguments (a zod schema's, or one an MCP server sent):
 * Lagent's parameters and required list, and the signature. Malformed parts (`required` that is not a
 * list, `properties` that is not an object) describe nothing rather than throw.
 */
export function describeJSONSchema(
  name: string,
  description: string,
  jsonSchema: JSONSchemaNode,
): ApiSchemaInfo {
  const required = new Set(Array.isArray(jsonSchema.required) ? jsonSchema.required : []);
  const properties = isPlainObject(jsonSchema.properties)
    ? (jsonSchema.properties as Record<string, JSONSchemaNode>)
    : {};
  const parameters: ActionParameter[] = [];
  const signature: string[] = [];
  for (const [key, node] of Object.entries(properties)) {
    const text = typeof node?.description === 'string' ? node.description : '';
    parameters.push({ name: key, type: lagentTypeOf(node), description: text });
    signature.push(`${key}${required.has(key) ? '' : '?'}: ${typeNameOf(node)}`);
  }
  return {
    description: {
      name,
      description,
      parameters,
      required: parameters.map((p) => p.name).filter((key) => required.has(key)),
      parameter_description: JSON_PARAMETER_DESCRIPTION,
    },
    jsonSchema,
    signature: signature.length === 0 ? 'no arguments' : signature.join(', '),
  };
}

/** Deep-freezes a plain description so that no caller can change a tool's description in place. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** A mutable deep copy of a (frozen) description. */
export function copyDescription<T>(value: T): T {
  return structuredClone(value);
}
