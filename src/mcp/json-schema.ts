import { z } from 'zod';
import type { ApiSchemaInfo } from '../actions/describe';
import { describeJSONSchema } from '../actions/describe';
import type { JSONSchemaNode } from '../prompts/schema-text';
import { isPlainObject } from '../utils/is';
import { patternIssues, takePatterns } from './patterns';

/** An MCP tool's arguments as lagent checks and describes them. */
export interface ToolSchema {
  /** Checks the arguments before the call (converted from the tool's JSON Schema). */
  schema: z.ZodObject;
  /** The Lagent description and signature, and the tool's own JSON Schema for OpenAI tools. */
  info: ApiSchemaInfo;
  /** The schema's patterns that are not checked (RE2 cannot express them); the server checks them. */
  uncheckedPatterns: string[];
}

/** A copy of an input schema without `$schema`, always of `type: 'object'` as OpenAI tools require. */
function cleanSchema(inputSchema: unknown): JSONSchemaNode {
  const json = (isPlainObject(inputSchema) ? structuredClone(inputSchema) : {}) as JSONSchemaNode;
  delete json.$schema;
  json.type ??= 'object';
  return json;
}

/**
 * The zod schema of an input JSON Schema (`z.fromJSONSchema`). A schema that does not convert to an object
 * (a top-level `anyOf`, say) checks through a refinement of a loose object; one that zod cannot read at all
 * lets any object through, and the server checks it.
 */
function zodOf(json: JSONSchemaNode): z.ZodObject {
  let converted: z.ZodType;
  try {
    converted = z.fromJSONSchema(json as Parameters<typeof z.fromJSONSchema>[0]) as z.ZodType;
  } catch {
    return z.looseObject({});
  }
  if (converted._zod.def.type === 'object') return converted as unknown as z.ZodObject;
  return z.looseObject({}).superRefine((value, context) => {
    const result = converted.safeParse(value);
    if (!result.success) for (const issue of result.error.issues) context.addIssue({ ...issue } as never);
  });
}

/**
 * Reads an MCP tool's `inputSchema`: a zod schema to check calls with, and Lagent's description shape
 * (parameters, required, signature) read from the JSON Schema itself, which OpenAI tools get unchanged.
 * The zod schema runs none of the server's `pattern`s itself: they are checked in linear time by RE2
 * (see `patterns.ts`), and those RE2 cannot express are listed in `uncheckedPatterns`.
 */
export function toolSchema(apiName: string, description: string, inputSchema: unknown): ToolSchema {
  const jsonSchema = cleanSchema(inputSchema);
  const withoutPatterns = structuredClone(jsonSchema);
  const patterns = takePatterns(withoutPatterns as Record<string, unknown>);
  let schema = zodOf(withoutPatterns);
  if (patterns.size > 0) {
    schema = schema.superRefine((value, context) => {
      for (const issue of patternIssues(jsonSchema, value, patterns)) {
        context.addIssue({ code: 'custom', path: issue.path, message: issue.message, input: value });
      }
    });
  }
  const uncheckedPatterns = [...patterns].filter(([, re2]) => re2 === undefined).map(([pattern]) => pattern);
  return { schema, info: describeJSONSchema(apiName, description, jsonSchema), uncheckedPatterns };
}
