import { TemplateError } from '../../schema/errors';
import type { OutputParser } from '../output-parser';
import { type CompiledTemplate, compileTemplate, renderTemplate, templateValue } from '../template-text';

/** Options of {@link StrParser}: a `template` and the fields its `{placeholders}` name. */
export interface StrParserOptions {
  /** The format instruction, with Python `str.format` placeholders filled from the other fields. @default '' */
  template?: string | undefined;
  [field: string]: unknown;
}

/**
 * The plain parser: the model's text is the result. Its `template` (Python `str.format` style: `{field}`,
 * literal braces doubled) is rendered with the other options into the format instruction; every
 * placeholder must have a field, checked when the parser is built.
 *
 * @example
 * const parser = new StrParser({ template: 'Answer in {language}.', language: 'French' });
 * parser.formatInstruction(); // 'Answer in French.'
 * parser.parseResponse('Bonjour'); // 'Bonjour'
 */
export class StrParser implements OutputParser<unknown> {
  /** The format instruction template. */
  readonly template: string;
  /** The values of the template's fields (frozen). */
  readonly fields: Readonly<Record<string, unknown>>;
  readonly #compiled: CompiledTemplate;

  constructor(options: StrParserOptions = {}) {
    const { template = '', ...fields } = options;
    const owner = new.target.name;
    this.#compiled = compileTemplate(template, 'json', owner);
    for (const variable of this.#compiled.variables) {
      if (fields[variable] === undefined) {
        throw new TemplateError({
          variable,
          message: `${owner}: the template uses "{${variable}}" but no "${variable}" option was given`,
        });
      }
    }
    this.template = template;
    this.fields = Object.freeze(fields);
  }

  /** The template with every field rendered by {@link StrParser.formatToString}. */
  formatInstruction(): string {
    const values: Record<string, string> = {};
    for (const variable of this.#compiled.variables)
      values[variable] = this.formatToString(this.fields[variable]);
    return renderTemplate(this.#compiled, values, this.constructor.name);
  }

  /** How a field's value appears in the instruction; subclasses render e.g. schemas. */
  protected formatToString(value: unknown): string {
    return templateValue(value);
  }

  /** The text itself. */
  parseResponse(text: string): unknown {
    return text;
  }

  /** The inverse of {@link StrParser.parseResponse}: strings as they are, other values as JSON. */
  formatResponse(parsed: unknown): string {
    return templateValue(parsed ?? '');
  }
}
