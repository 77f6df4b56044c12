import { TemplateError } from '../schema/errors';
import { toText } from '../utils/text';

/**
 * How placeholders are written: `'json'` is Python's `str.format` (`{name}`, with `{{` / `}}` for literal
 * braces, so JSON examples must double their braces); `'jinja'` is `{{ name }}` (dotted paths allowed,
 * no control blocks or filters).
 */
export type TemplateStyle = 'json' | 'jinja';

type Part = string | { readonly variable: string };

/** A template split once into literal text and placeholders, ready to be rendered many times. */
export interface CompiledTemplate {
  readonly parts: readonly Part[];
  /** The placeholder names, each once, in order of first use. */
  readonly variables: readonly string[];
}

const JINJA_NAME = /^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/;

function malformed(owner: string, message: string): TemplateError {
  return new TemplateError({ variable: '', message: `${owner}: ${message}` });
}

function compileJson(template: string, owner: string, parts: Part[]): void {
  let text = '';
  let i = 0;
  while (i < template.length) {
    const char = template[i]!;
    const next = template[i + 1];
    if (char === '{' && next === '{') {
      text += '{';
      i += 2;
    } else if (char === '}' && next === '}') {
      text += '}';
      i += 2;
    } else if (char === '{') {
      const close = template.indexOf('}', i + 1);
      const open = template.indexOf('{', i + 1);
      if (close === -1 || (open !== -1 && open < close)) {
        throw malformed(
          owner,
          `unclosed "{" at offset ${i}; write "{{" for a literal brace (the template uses {name} placeholders)`,
        );
      }
      // Python's format spec and conversion (`{x:>4}`, `{x!r}`) are accepted and ignored.
      const variable = template
        .slice(i + 1, close)
        .split(/[!:]/)[0]!
        .trim();
      if (variable === '') {
        throw malformed(
          owner,
          `empty placeholder "{}" at offset ${i}; name it, or write "{{}}" for literal braces`,
        );
      }
      if (text) parts.push(text);
      text = '';
      parts.push({ variable });
      i = close + 1;
    } else if (char === '}') {
      throw malformed(owner, `single "}" at offset ${i}; write "}}" for a literal brace`);
    } else {
      text += char;
      i += 1;
    }
  }
  if (text) parts.push(text);
}

function compileJinja(template: string, owner: string, parts: Part[]): void {
  const blockAt = template.search(/\{%|\{#/);
  if (blockAt !== -1) {
    throw malformed(
      owner,
      `jinja blocks and comments are not supported (offset ${blockAt}); only {{ name }}`,
    );
  }
  let last = 0;
  for (const match of template.matchAll(/\{\{(.*?)\}\}/gs)) {
    const variable = match[1]!.trim();
    if (!JINJA_NAME.test(variable)) {
      throw malformed(owner, `unsupported expression "{{${match[1]}}}"; only {{ name }} or {{ name.field }}`);
    }
    if (match.index > last) parts.push(template.slice(last, match.index));
    parts.push({ variable });
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push(template.slice(last));
}

/** Splits a template into text and placeholders, throwing a {@link TemplateError} if it is malformed. */
export function compileTemplate(template: string, style: TemplateStyle, owner: string): CompiledTemplate {
  if (typeof template !== 'string') {
    throw malformed(owner, `the template must be a string, got ${typeof template}`);
  }
  const parts: Part[] = [];
  if (style === 'jinja') compileJinja(template, owner, parts);
  else if (style === 'json') compileJson(template, owner, parts);
  else throw malformed(owner, `unknown template format "${String(style)}"; use 'json' or 'jinja'`);
  const variables: string[] = [];
  for (const part of parts) {
    if (typeof part !== 'string' && !variables.includes(part.variable)) variables.push(part.variable);
  }
  return { parts, variables };
}

/** A value as template text: strings as they are, other values as JSON (see `toText`); never throws. */
export function templateValue(value: unknown): string {
  return toText(value);
}

function lookup(variables: Readonly<Record<string, unknown>>, name: string): unknown {
  if (Object.hasOwn(variables, name)) return variables[name];
  if (!name.includes('.')) return undefined;
  let value: unknown = variables;
  for (const key of name.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** What {@link renderTemplate} checks besides missing variables. */
export interface RenderOptions {
  /** Throw when a variable is given that the template does not use. */
  rejectUnknown?: boolean | undefined;
}

/**
 * Fills a compiled template. A placeholder whose variable is missing (or `undefined`) throws a
 * {@link TemplateError} naming it; with `rejectUnknown`, so does a variable the template does not use.
 */
export function renderTemplate(
  compiled: CompiledTemplate,
  variables: Readonly<Record<string, unknown>>,
  owner: string,
  options: RenderOptions = {},
): string {
  if (options.rejectUnknown) {
    for (const key of Object.keys(variables)) {
      if (
        variables[key] !== undefined &&
        !compiled.variables.some((v) => v === key || v.startsWith(`${key}.`))
      ) {
        throw new TemplateError({
          variable: key,
          message: `${owner}: unknown variable "${key}"; the template uses ${listOf(compiled.variables)}`,
        });
      }
    }
  }
  let out = '';
  for (const part of compiled.parts) {
    if (typeof part === 'string') {
      out += part;
      continue;
    }
    const value = lookup(variables, part.variable);
    if (value === undefined) {
      throw new TemplateError({
        variable: part.variable,
        message: `${owner}: missing variable "${part.variable}" (the template uses ${listOf(compiled.variables)})`,
      });
    }
    out += templateValue(value);
  }
  return out;
}

function listOf(names: readonly string[]): string {
  return names.length === 0 ? 'no variables' : names.map((name) => `"${name}"`).join(', ');
}
