import { ToolParser, type ToolParserOptions } from './tool-parser';

/** Options of {@link InterpreterParser}: those of `ToolParser`, all optional. */
export type InterpreterParserOptions<A = string> = Partial<ToolParserOptions<A>>;

/**
 * InternLM's code-interpreter call format: `<|action_start|><|interpreter|>\n` code `<|action_end|>\n`,
 * reported as tool type `'interpreter'`.
 *
 * @example
 * new InterpreterParser().parseResponse('Compute.<|action_start|><|interpreter|>\nprint(2)<|action_end|>\n').action; // 'print(2)'
 */
export class InterpreterParser<A = string> extends ToolParser<A> {
  constructor(options: InterpreterParserOptions<A> = {}) {
    super({
      ...options,
      toolType: options.toolType ?? 'interpreter',
      begin: options.begin ?? '<|action_start|><|interpreter|>\n',
      end: options.end ?? '<|action_end|>\n',
    });
  }
}
