import { createHash } from 'node:crypto';

/*
 * What the fake model servers check of a request the way the real APIs do, so a client that sends what a
 * provider refuses fails against the fake too: strict JSON schemas, content parts, and signatures of the
 * opaque things a server hands out and wants back unchanged (Claude's thinking signatures, OpenAI's encrypted
 * reasoning items).
 */

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Why a JSON schema is not valid for a strict structured-output mode (every object lists all its properties
 * in `required` and has `additionalProperties: false`), or undefined when it is. `where` names the place as
 * OpenAI's messages do (`context=('properties', 'city')`).
 */
export function strictSchemaProblem(
  schema: unknown,
  path: string[] = [],
  requireAll = true,
): string | undefined {
  if (!isRecord(schema)) return undefined;
  const where = `In context=(${path.map((key) => `'${key}'`).join(', ')})`;
  const isObject = schema.type === 'object' || isRecord(schema.properties);
  if (isObject) {
    if (schema.additionalProperties !== false) {
      return `${where}, 'additionalProperties' is required to be supplied and to be false.`;
    }
    const properties = isRecord(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required : [];
    for (const key of requireAll ? Object.keys(properties) : []) {
      if (!required.includes(key)) {
        return `${where}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${key}'.`;
      }
    }
    for (const [key, child] of Object.entries(properties)) {
      const problem = strictSchemaProblem(child, [...path, 'properties', key], requireAll);
      if (problem !== undefined) return problem;
    }
  }
  if ('default' in schema) return `${where}, 'default' is not permitted.`;
  for (const key of ['items', 'not'] as const) {
    const problem = strictSchemaProblem(schema[key], [...path, key], requireAll);
    if (problem !== undefined) return problem;
  }
  for (const key of ['anyOf', 'allOf', 'prefixItems'] as const) {
    const list = schema[key];
    if (!Array.isArray(list)) continue;
    for (const [index, child] of list.entries()) {
      const problem = strictSchemaProblem(child, [...path, key, String(index)], requireAll);
      if (problem !== undefined) return problem;
    }
  }
  if (Array.isArray(schema.oneOf)) return `${where}, 'oneOf' is not permitted.`;
  for (const key of ['$defs', 'definitions'] as const) {
    const defs = schema[key];
    if (!isRecord(defs)) continue;
    for (const [name, child] of Object.entries(defs)) {
      const problem = strictSchemaProblem(child, [...path, key, name], requireAll);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

const SECRET = 'lagent-ts fake server';

/** A signature the fake server hands out for `text` and checks when it comes back. */
export function fakeSignature(kind: string, text: string): string {
  return createHash('sha256').update(`${SECRET}\u0000${kind}\u0000${text}`).digest('base64');
}

const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+);base64,[A-Za-z0-9+/=]*$/i;

/** The media type of a base64 `data:` URL, or undefined when `url` is not one. */
export function dataURLType(url: unknown): string | undefined {
  if (typeof url !== 'string') return undefined;
  return DATA_URL.exec(url)?.[1]?.toLowerCase();
}

/** The image types the providers take. */
export const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
