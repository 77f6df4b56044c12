import { ConfigurationError, ParseError } from '../../schema/errors';
import { ToolStatusCode } from '../../schema/status';
import { actionText, asToolResponse, type ToolResponse } from '../../schema/tool-response';
import { kindOf, toText } from '../../utils/text';
import { StrParser } from './str-parser';

/** Options of {@link ToolParser}; `A` is what `validate` makes of a call's text. */
export interface ToolParserOptions<A = string> {
  /** The tool type a call is reported as, e.g. `'code interpreter'`. */
  toolType: string;
  /** The format instruction; may use `{begin}`, `{end}` and any extra option. @default '' */
  template?: string | undefined;
  /** Text that opens a tool call. @default '<tool>\n' */
  begin?: string | undefined;
  /** Text that closes a tool call; a call without it runs to the end of the response. @default '</tool>\n' */
  end?: string | undefined;
  /**
   * Checks or converts the call's text (e.g. `JSON.parse`). If it throws, the status is `PARSING_ERROR`
   * and `action` keeps the raw text.
   */
  validate?: (action: string) => A;
  [field: string]: unknown;
}

/**
 * Finds one tool call between `begin` and `end` in a model response: the text before it is the
 * `thought`. `end` is optional in the response, since a stop word usually cuts it off. Never throws on
 * model output. The result is a `ToolResponse<A | string>`: `A` is what `validate` returns (a call it
 * refuses keeps its raw text), `string` without a `validate`.
 *
 * @example
 * const parser = new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' });
 * parser.parseResponse('Let me compute.\n```python\nprint(1 + 1)');
 * // { toolType: 'code interpreter', thought: 'Let me compute.\n', action: 'print(1 + 1)', status: 1 }
 */
export class ToolParser<A = string> extends StrParser {
  /** Reported as `toolType` when a response calls the tool. */
  readonly toolType: string;
  /** Opens a call. */
  readonly begin: string;
  /** Closes a call (optional in responses). */
  readonly end: string;
  /** Checks or converts a call's text; a throw means `PARSING_ERROR`. */
  readonly validate: ((action: string) => A) | undefined;

  constructor(options: ToolParserOptions<A>) {
    const { toolType, begin = '<tool>\n', end = '</tool>\n', validate, ...rest } = options ?? ({} as never);
    super({ ...rest, begin, end });
    if (typeof toolType !== 'string' || toolType === '') {
      throw new ConfigurationError({ message: `${new.target.name} needs a toolType, e.g. 'interpreter'` });
    }
    if (typeof begin !== 'string' || begin === '' || typeof end !== 'string') {
      throw new ConfigurationError({
        message: `${new.target.name}: begin must be a non-empty string and end a string`,
      });
    }
    if (validate !== undefined && typeof validate !== 'function') {
      throw new ConfigurationError({ message: `${new.target.name}: validate must be a function` });
    }
    this.toolType = toolType;
    this.begin = begin;
    this.end = end;
    this.validate = validate;
  }

  override parseResponse(text: string): ToolResponse<A | string> {
    if (typeof text !== 'string') {
      throw new ParseError({
        text: toText(text),
        message: `${this.constructor.name} expects text, got ${kindOf(text)}`,
      });
    }
    const { begin, end } = this;
    const start = text.indexOf(begin);
    if (start === -1) return { toolType: null, thought: text, action: null, status: ToolStatusCode.NO_TOOL };
    const from = start + begin.length;
    // The call stops at `end`, or at a second `begin` when `end` is missing (as Lagent splits on both).
    let stop = end === '' ? -1 : text.indexOf(end, from);
    const again = text.indexOf(begin, from);
    if (stop === -1 || (again !== -1 && again < stop)) stop = again;
    const raw = stop === -1 ? text.slice(from) : text.slice(from, stop);
    let action: A | string = raw;
    let status: ToolStatusCode = ToolStatusCode.VALID_TOOL;
    if (this.validate) {
      try {
        action = this.validate(raw);
      } catch {
        action = raw;
        status = ToolStatusCode.PARSING_ERROR;
      }
    }
    return { toolType: this.toolType, thought: text.slice(0, start), action, status };
  }

  /** Renders a parsed response back to model text: the thought, then the call between `begin` and `end`. */
  override formatResponse(parsed: ToolResponse): string {
    const response = asToolResponse(parsed);
    if (!response) return actionText(parsed ?? '');
    if (response.action === null || response.action === undefined) return response.thought;
    return response.thought + this.begin + actionText(response.action) + this.end;
  }
}
