import type { RE2JS } from 're2js';
import { ConfigurationError, missingPeer } from '../schema/errors';
import { isPlainObject } from '../utils/is';
import { shorten } from '../utils/text';

/**
 * JSON Schema `pattern`s of an MCP server, checked in linear time.
 *
 * A server's `pattern` is untrusted: run by the backtracking `RegExp` engine, `^(a+)+$` against 28
 * characters blocks the event loop for seconds. Patterns are therefore compiled for RE2 (`re2js`), whose
 * matching time is linear in the input, and never handed to `RegExp`. A pattern RE2 cannot express
 * (lookaround, backreferences, repeat counts over 1000) is not checked at all: the server still checks its
 * own arguments, so skipping the client-side check only costs a round trip, while running it with the
 * backtracking engine could stall every session of the process.
 */

let engine: typeof RE2JS | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads `re2js`, an optional peer of `lagent-ts/mcp`, with dynamic `import()` (the client loads it with the
 * SDK); a missing package is a `ConfigurationError` saying what to install.
 */
export function loadRE2(feature = 'MCPToolkit'): Promise<void> {
  loading ??= import('re2js').then((module) => {
    engine = module.RE2JS;
  });
  return loading.catch((error: unknown) => {
    loading = undefined;
    throw missingPeer(['re2js'], feature, error);
  });
}

/** JavaScript's `\s` as the body of an RE2 character class. */
const SPACE =
  '\\x{9}\\x{a}\\x{b}\\x{c}\\x{d}\\x{20}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
/** JavaScript's `.` without the `s` flag: anything but a line terminator. */
const DOT = '[^\\x{a}\\x{d}\\x{2028}\\x{2029}]';

/**
 * An ECMAScript pattern in RE2's syntax: `\uXXXX`, `\u{X}` and `\cX` become `\x{...}`, and `\s`, `\S` and `.`
 * get JavaScript's meaning. Undefined for what has no RE2 form here (`[]`, `[^]`, a broken escape).
 */
export function toRE2Syntax(pattern: string): string | undefined {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '\\') {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      if (next === 'u') {
        const braced = /^\{([0-9A-Fa-f]{1,6})\}/.exec(pattern.slice(i + 2, i + 10));
        const hex = braced ? braced[1] : /^[0-9A-Fa-f]{4}/.exec(pattern.slice(i + 2, i + 6))?.[0];
        if (hex === undefined) return undefined;
        out += `\\x{${hex}}`;
        i += 1 + (braced ? braced[0].length : 4);
        continue;
      }
      if (next === 'c' && /^[A-Za-z]$/.test(pattern[i + 2] ?? '')) {
        out += `\\x{${(pattern.charCodeAt(i + 2) % 32).toString(16)}}`;
        i += 2;
        continue;
      }
      if (next === 's') out += inClass ? SPACE : `[${SPACE}]`;
      else if (next === 'S' && !inClass) out += `[^${SPACE}]`;
      else out += char + next;
      i++;
      continue;
    }
    if (inClass) {
      if (char === ']') inClass = false;
      out += char;
      continue;
    }
    if (char === '[') {
      inClass = true;
      out += char;
      if (pattern[i + 1] === '^') out += pattern[++i];
      if (pattern[i + 1] === ']') return undefined;
      continue;
    }
    out += char === '.' ? DOT : char;
  }
  return out;
}

/** A pattern compiled for RE2; undefined when JavaScript does not read it or RE2 cannot express it. */
export function compilePattern(pattern: string): RE2JS | undefined {
  if (engine === undefined) {
    throw new ConfigurationError({ message: 'compilePattern: re2js is not loaded (await loadRE2() first)' });
  }
  const RE2 = engine;
  try {
    // Compiling (not running) tells whether the pattern is valid ECMAScript at all; it does not backtrack.
    new RegExp(pattern);
    const re2 = toRE2Syntax(pattern);
    return re2 === undefined ? undefined : RE2.compile(re2);
  } catch {
    return undefined;
  }
}

/** The patterns a schema holds, compiled; `undefined` for those that cannot be checked. */
export type CompiledPatterns = Map<string, RE2JS | undefined>;

const SUBSCHEMA = [
  'items',
  'additionalItems',
  'additionalProperties',
  'propertyNames',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
] as const;
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'] as const;
const SUBSCHEMA_MAPS = [
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
  'dependencies',
];

/** Calls `visit` on every schema object found at a schema position under `node` (itself included). */
function eachSchema(node: unknown, visit: (schema: Record<string, unknown>) => void): void {
  if (!isPlainObject(node)) return;
  visit(node);
  for (const key of SUBSCHEMA) eachSchema(node[key], visit);
  for (const key of SUBSCHEMA_LISTS) {
    const list = node[key];
    if (Array.isArray(list)) for (const item of list) eachSchema(item, visit);
  }
  for (const key of SUBSCHEMA_MAPS) {
    const map = node[key];
    if (isPlainObject(map)) for (const value of Object.values(map)) eachSchema(value, visit);
  }
}

/**
 * Takes the patterns out of a schema (in place) so that the zod schema built from it runs none of them:
 * `pattern` is removed, and `patternProperties` with `additionalProperties` (which depends on which keys
 * the patterns match). Returns every pattern the schema held, compiled. {@link patternIssues} checks them.
 */
export function takePatterns(schema: Record<string, unknown>): CompiledPatterns {
  const patterns: CompiledPatterns = new Map();
  const add = (pattern: unknown) => {
    if (typeof pattern === 'string' && !patterns.has(pattern)) patterns.set(pattern, compilePattern(pattern));
  };
  const found: Record<string, unknown>[] = [];
  eachSchema(schema, (node) => found.push(node));
  for (const node of found) {
    add(node.pattern);
    delete node.pattern;
    if (isPlainObject(node.patternProperties)) {
      for (const key of Object.keys(node.patternProperties)) add(key);
      delete node.patternProperties;
      delete node.additionalProperties;
    }
  }
  return patterns;
}

/** One value that does not match a pattern. */
export interface PatternIssue {
  path: PropertyKey[];
  message: string;
}

/** Bounds on one check: nesting of schemas followed, and schema nodes visited in all. */
const MAX_DEPTH = 128;
const MAX_STEPS = 50_000;

/** The schema a local `$ref` (`#`, `#/$defs/name`) points at; undefined for any other reference. */
function resolveRef(root: unknown, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isPlainObject(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/**
 * What in `value` fails a pattern of `schema` (the schema as the server sent it, patterns included), going
 * where the value goes: `properties`, `patternProperties`, `additionalProperties`, `propertyNames`, `items`,
 * `prefixItems`, `allOf`, local `$ref`s; a value passes `anyOf` / `oneOf` when one branch has no issue.
 * Everything else is left to zod and to the server. A check that would go deeper or longer than its bounds
 * stops there and lets the rest pass.
 */
export function patternIssues(schema: unknown, value: unknown, patterns: CompiledPatterns): PatternIssue[] {
  const issues: PatternIssue[] = [];
  let steps = 0;
  const matches = (pattern: string, text: string): boolean | undefined => {
    const re2 = patterns.get(pattern);
    return re2 === undefined ? undefined : re2.test(text);
  };
  const check = (node: unknown, data: unknown, path: PropertyKey[], depth: number, out: PatternIssue[]) => {
    if (!isPlainObject(node) || depth > MAX_DEPTH || ++steps > MAX_STEPS) return;
    if (typeof node.$ref === 'string') check(resolveRef(schema, node.$ref), data, path, depth + 1, out);
    if (
      typeof data === 'string' &&
      typeof node.pattern === 'string' &&
      matches(node.pattern, data) === false
    ) {
      out.push({ path, message: `must match the pattern /${shorten(node.pattern, 100)}/` });
    }
    if (Array.isArray(node.allOf)) for (const branch of node.allOf) check(branch, data, path, depth + 1, out);
    for (const key of ['anyOf', 'oneOf'] as const) {
      const branches = node[key];
      if (!Array.isArray(branches) || branches.length === 0) continue;
      let first: PatternIssue[] | undefined;
      for (const branch of branches) {
        const found: PatternIssue[] = [];
        check(branch, data, path, depth + 1, found);
        if (found.length === 0) {
          first = undefined;
          break;
        }
        first ??= found;
      }
      if (first) out.push(...first);
    }
    if (Array.isArray(data)) {
      const prefix = Array.isArray(node.prefixItems)
        ? node.prefixItems
        : Array.isArray(node.items)
          ? node.items
          : [];
      const rest = Array.isArray(node.items) ? node.additionalItems : node.items;
      for (let index = 0; index < data.length; index++) {
        check(index < prefix.length ? prefix[index] : rest, data[index], [...path, index], depth + 1, out);
      }
      return;
    }
    if (!isPlainObject(data)) return;
    const properties = isPlainObject(node.properties) ? node.properties : {};
    const patternProperties = isPlainObject(node.patternProperties) ? node.patternProperties : {};
    for (const [key, item] of Object.entries(data)) {
      const where = [...path, key];
      if (isPlainObject(node.propertyNames)) check(node.propertyNames, key, where, depth + 1, out);
      let covered = Object.hasOwn(properties, key);
      if (covered) check(properties[key], item, where, depth + 1, out);
      for (const [pattern, itemSchema] of Object.entries(patternProperties)) {
        const matched = matches(pattern, key);
        // A key whose pattern cannot be checked might be covered by it: additionalProperties is not applied.
        if (matched !== false) covered = true;
        if (matched) check(itemSchema, item, where, depth + 1, out);
      }
      if (covered) continue;
      if (node.additionalProperties === false && Object.keys(patternProperties).length > 0) {
        out.push({ path: where, message: `unknown property "${shorten(key, 100)}"` });
      } else {
        check(node.additionalProperties, item, where, depth + 1, out);
      }
    }
  };
  check(schema, value, [], 0, issues);
  return issues;
}
