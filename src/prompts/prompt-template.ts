import { type CompiledTemplate, compileTemplate, renderTemplate, type TemplateStyle } from './template-text';

/** Options of {@link PromptTemplate}. */
export interface PromptTemplateOptions {
  /**
   * `'json'`: Python `str.format` placeholders (`{topic}`, literal braces doubled as `{{ }}`);
   * `'jinja'`: `{{ topic }}` placeholders. @default 'json'
   */
  format?: TemplateStyle | undefined;
}

/**
 * A prompt with named placeholders. Formatting with a missing variable, or with one the template does not
 * use, throws a `TemplateError` naming it. Templates are immutable: {@link PromptTemplate.partial} returns
 * a new one with some variables filled in, which is how to hand a template to an agent as its `template`
 * (the aggregator formats it with no further variables).
 *
 * @example
 * const prompt = new PromptTemplate('Write about {topic} in {words} words.');
 * prompt.format({ topic: 'AI', words: 100 }); // 'Write about AI in 100 words.'
 * new PromptTemplate('Hi {{ name }}!', { format: 'jinja' }).format({ name: 'Ada' }); // 'Hi Ada!'
 * new Agent({ llm, template: prompt.partial({ topic: 'AI', words: 100 }) });
 */
export class PromptTemplate {
  /** The template text. */
  readonly template: string;
  /** How placeholders are written. */
  readonly formatType: TemplateStyle;
  readonly #compiled: CompiledTemplate;
  #bound: Readonly<Record<string, unknown>>;

  constructor(template: string, options: PromptTemplateOptions = {}) {
    this.template = template;
    this.formatType = options.format ?? 'json';
    this.#compiled = compileTemplate(template, this.formatType, 'PromptTemplate');
    this.#bound = {};
  }

  /** The placeholder names, in order of first use. */
  get variables(): readonly string[] {
    return this.#compiled.variables;
  }

  /** The variables still needed by `format()` (those not filled in by {@link PromptTemplate.partial}). */
  get missingVariables(): string[] {
    return this.#compiled.variables.filter((name) => this.#bound[name] === undefined);
  }

  /** The filled-in text. Throws a `TemplateError` for a missing or unknown variable. */
  format(variables: Readonly<Record<string, unknown>> = {}): string {
    const all = Object.keys(this.#bound).length === 0 ? variables : { ...this.#bound, ...variables };
    return renderTemplate(this.#compiled, all, 'PromptTemplate', { rejectUnknown: true });
  }

  /** A new template with some variables filled in; this one is unchanged. */
  partial(variables: Readonly<Record<string, unknown>>): PromptTemplate {
    const bound = { ...this.#bound, ...variables };
    // Unknown names are reported now rather than at the first format().
    renderTemplate({ parts: [], variables: this.#compiled.variables }, bound, 'PromptTemplate.partial', {
      rejectUnknown: true,
    });
    const copy = new PromptTemplate(this.template, { format: this.formatType });
    copy.#bound = Object.freeze(bound);
    return copy;
  }

  /** The template text. */
  toString(): string {
    return this.template;
  }
}
