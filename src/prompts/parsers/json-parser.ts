import type { z } from 'zod';
import { ConfigurationError, ParseError } from '../../schema/errors';
import type { ResponseFormat } from '../../schema/response-format';
import { kindOf, toText } from '../../utils/text';
import { describeIssues, type JSONSchemaNode, toJSONSchemaNode, typeNameOf } from '../schema-text';
import { parseLenientJSON } from './json-text';
import { PartialJSONParser, type PartialJSONParserOptions } from './partial-json';
import { StrParser } from './str-parser';

/** Options of {@link JSONParser}. */
export interface JSONParserOptions<S extends z.ZodType> {
  /** The expected output; objects are described field by field in the format instruction. */
  schema: S;
  /**
   * The format instruction; `{format}` is replaced by the schema as commented pseudo-JSON, other
   * placeholders by the extra options.
   * @default 'Reply with a JSON object in this format (lines starting with // are comments):\n```json\n{format}\n```'
   */
  template?: string | undefined;
  /**
   * Whether an agent using this parser as its `outputFormat` appends the format instruction to its system
   * prompt (once: not when the agent's `template` already contains it).
   * @default true
   */
  addsFormatInstruction?: boolean | undefined;
  /**
   * Whether an agent using this parser asks its model for native structured output with the schema
   * (`responseFormat`: OpenAI's strict `json_schema`, Anthropic's `output_config.format`, the AI SDK's
   * `responseFormat`), where the client has it; the format instruction stays in the prompt either way. Only
   * schemas whose root is an object are sent (the strict modes take no other).
   * @default true
   */
  structuredOutput?: boolean | undefined;
  [field: string]: unknown;
}

const DEFAULT_TEMPLATE =
  'Reply with a JSON object in this format (lines starting with // are comments):\n```json\n{format}\n```';

const INDENT = '    ';

/**
 * Structured output: the model's text is read as JSON (a ``` fence, `//` comment lines and trailing
 * commas are tolerated) and validated with a zod schema. Output that is not JSON, or does not fit the
 * schema, throws a `ParseError` saying what is wrong (and keeping the raw text). Used as an agent's
 * `outputFormat`, its format instruction goes at the end of the agent's system prompt.
 *
 * @example
 * const parser = new JSONParser({ schema: z.object({ city: z.string().describe('City name'), days: z.number().int().default(1) }) });
 * parser.formatInstruction(); // '...{\n    // City name\n    "city": "string",  // required\n    "days": "integer"  // default: 1\n}...'
 * parser.parseResponse('```json\n{"city": "Paris"}\n```'); // { city: 'Paris', days: 1 }
 */
export class JSONParser<S extends z.ZodType = z.ZodType> extends StrParser {
  /** What the output must match. */
  readonly schema: S;
  /** See {@link JSONParserOptions.addsFormatInstruction}. */
  readonly addsFormatInstruction: boolean;
  /**
   * What an agent using this parser asks its model for (`{ type: 'json', schema }`), or undefined when
   * `structuredOutput` is off or the schema's root is not an object.
   */
  readonly responseFormat: ResponseFormat | undefined;
  readonly #json: JSONSchemaNode;
  readonly #placeholders: ReadonlyMap<string, string>;

  constructor(options: JSONParserOptions<S>) {
    const {
      schema,
      template = DEFAULT_TEMPLATE,
      addsFormatInstruction = true,
      structuredOutput = true,
      ...rest
    } = options ?? ({} as never);
    if (!schema || typeof (schema as { safeParse?: unknown }).safeParse !== 'function') {
      throw new ConfigurationError({
        message: 'JSONParser needs a zod schema: new JSONParser({ schema: z.object(...) })',
      });
    }
    super({ ...rest, template, format: schema });
    this.schema = schema;
    this.addsFormatInstruction = addsFormatInstruction;
    this.#json = toJSONSchemaNode(schema);
    this.responseFormat =
      structuredOutput && this.#json.type === 'object' ? { type: 'json', schema } : undefined;
    const placeholders = new Map<string, string>();
    for (const [key, node] of Object.entries(this.#json.properties ?? {}))
      placeholders.set(key, typeNameOf(node));
    this.#placeholders = placeholders;
  }

  /** The schema as commented pseudo-JSON, the way Lagent shows a format to the model. */
  formatSchema(): string {
    return renderNode(this.#json, 0).join('\n');
  }

  protected override formatToString(value: unknown): string {
    return value === this.schema ? this.formatSchema() : super.formatToString(value);
  }

  /** The validated value; throws a `ParseError` naming what is wrong. */
  override parseResponse(text: string): z.output<S> {
    if (typeof text !== 'string') {
      throw new ParseError({ text: toText(text), message: `JSONParser expects text, got ${kindOf(text)}` });
    }
    let data: unknown;
    try {
      data = parseLenientJSON(text);
    } catch (error) {
      throw new ParseError({
        text,
        message: `JSONParser: the output is not valid JSON (${(error as Error).message})`,
        cause: error,
      });
    }
    data = this.#dropPlaceholders(data);
    let result = this.schema.safeParse(data);
    if (!result.success) {
      // Strict structured output writes `null` for an optional field it leaves out: read those as absent.
      const absent = withoutStrictNulls(data, result.error.issues);
      if (absent !== data) {
        const retried = this.schema.safeParse(absent);
        if (retried.success) result = retried;
      }
    }
    if (!result.success) {
      throw new ParseError({
        text,
        message: `JSONParser: the output does not match the schema: ${describeIssues(result.error, data)}`,
        cause: result.error,
      });
    }
    return result.data;
  }

  /**
   * An incremental reader of this parser's output as it streams (see {@link PartialJSONParser}): the partial
   * value it gives is a deep-partial of the schema's output, not validated (a partial value of a schema
   * rarely satisfies it); {@link JSONParser.parseResponse} on the whole text gives the validated value.
   * Streaming agents use one per call for their chunks' `formatted`.
   */
  streamParser(options?: PartialJSONParserOptions): PartialJSONParser<z.output<S>> {
    return new PartialJSONParser<z.output<S>>(options);
  }

  /** Renders a parsed value as pretty JSON. */
  override formatResponse(parsed: unknown): string {
    return toText(parsed, { json: 'pretty' });
  }

  /** A field whose value is the type name copied from the instruction (e.g. `"string"`) was not filled in. */
  #dropPlaceholders(data: unknown): unknown {
    if (data === null || typeof data !== 'object' || Array.isArray(data)) return data;
    let copy: Record<string, unknown> | undefined;
    for (const [key, placeholder] of this.#placeholders) {
      if ((data as Record<string, unknown>)[key] === placeholder && placeholder !== 'string') {
        copy ??= { ...(data as Record<string, unknown>) };
        delete copy[key];
      }
    }
    return copy ?? data;
  }
}

/**
 * `data` without the `null` values the issues point at (a copy along their paths), or `data` itself when no
 * issue is about a `null`.
 */
function withoutStrictNulls(data: unknown, issues: readonly z.core.$ZodIssue[]): unknown {
  let copy = data;
  for (const issue of issues) {
    const path = issue.path;
    if (path.length === 0) continue;
    if (valueAt(data, path) !== null) continue;
    copy = deleteAt(copy, path);
  }
  return copy;
}

function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let value = data;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** `data` with the property at `path` removed, copying each container along the way. */
function deleteAt(data: unknown, path: readonly PropertyKey[]): unknown {
  if (data === null || typeof data !== 'object') return data;
  const [key, ...rest] = path;
  if (key === undefined) return data;
  const copy = (Array.isArray(data) ? [...data] : { ...data }) as Record<PropertyKey, unknown>;
  if (rest.length === 0) {
    if (!Array.isArray(data)) delete copy[key];
  } else copy[key] = deleteAt(copy[key], rest);
  return copy;
}

function renderNode(node: JSONSchemaNode, depth: number): string[] {
  if (node.type === 'object' && node.properties) return renderObject(node, depth);
  if (node.type === 'array' && node.items?.type === 'object' && node.items.properties) {
    const inner = renderObject(node.items, depth + 1);
    return ['[', INDENT.repeat(depth + 1) + inner[0], ...inner.slice(1), `${INDENT.repeat(depth)}]`];
  }
  return [JSON.stringify(typeNameOf(node))];
}

function renderObject(node: JSONSchemaNode, depth: number): string[] {
  const pad = INDENT.repeat(depth + 1);
  const required = new Set(node.required ?? []);
  const entries = Object.entries(node.properties ?? {});
  const lines = ['{'];
  entries.forEach(([key, child], index) => {
    const comma = index < entries.length - 1 ? ',' : '';
    if (child.description) lines.push(`${pad}// ${child.description.replace(/\n/g, ' ')}`);
    const value = renderNode(child, depth + 1);
    if (value.length > 1) {
      lines.push(
        `${pad}${JSON.stringify(key)}: ${value[0]}`,
        ...value.slice(1, -1),
        `${value.at(-1)}${comma}`,
      );
      return;
    }
    let note = '  // optional';
    if ('default' in child) note = `  // default: ${JSON.stringify(child.default)}`;
    else if (required.has(key)) note = '  // required';
    lines.push(`${pad}${JSON.stringify(key)}: ${value[0]}${comma}${note}`);
  });
  lines.push(`${INDENT.repeat(depth)}}`);
  return lines;
}
