import type { ChatMessage } from '../../schema/chat-message';
import { ConfigurationError, ParseError } from '../../schema/errors';
import { ToolStatusCode } from '../../schema/status';
import { actionText, asToolResponse, type ToolResponse } from '../../schema/tool-response';
import { kindOf, toText } from '../../utils/text';
import type { OutputParser } from '../output-parser';
import { StrParser } from './str-parser';
import type { ToolParser } from './tool-parser';

/** Options of {@link MixedToolParser}; `P` is the kind of its tool parsers. */
export interface MixedToolParserOptions<P extends ToolParser<unknown> = ToolParser<unknown>> {
  /** The `name` of the shared instruction message. */
  toolType?: string | null | undefined;
  /** A shared instruction shown before the parsers' own (fields as in `StrParser`). @default '' */
  template?: string | undefined;
  /** One parser per tool type. */
  parsers: readonly P[];
  [field: string]: unknown;
}

/** What the parsers of kind `P` return, one `ToolResponse` type per parser type. */
type ParsedBy<P extends ToolParser<unknown>> =
  P extends ToolParser<unknown> ? ReturnType<P['parseResponse']> : never;

/**
 * Several tool formats at once (InternLM's plugins and interpreter): a response is parsed by the parser
 * whose `begin` marker comes first in it. The format instruction is a list of system messages, each named
 * after its tool type, as InternLM's chat template expects. The result is what one of the `parsers` returns.
 *
 * @example
 * const parser = new MixedToolParser({ template: 'Use tools when needed.', parsers: [new PluginParser(), new InterpreterParser()] });
 * parser.parseResponse('<|action_start|><|interpreter|>\nprint(1)<|action_end|>\n').toolType; // 'interpreter'
 */
export class MixedToolParser<P extends ToolParser<unknown> = ToolParser<unknown>>
  implements OutputParser<ParsedBy<P>>
{
  /** The `name` of the shared instruction message. */
  readonly toolType: string | null;
  /** The parsers by tool type, in the order given. */
  readonly parsers: ReadonlyMap<string, P>;
  readonly #shared: StrParser;

  constructor(options: MixedToolParserOptions<P>) {
    const { toolType = null, parsers, ...fields } = options ?? ({} as never);
    if (!Array.isArray(parsers) || parsers.length === 0) {
      throw new ConfigurationError({
        message: 'MixedToolParser needs parsers: a non-empty list of ToolParsers',
      });
    }
    const byType = new Map<string, P>();
    for (const parser of parsers) {
      if (typeof parser?.toolType !== 'string' || typeof parser.begin !== 'string') {
        throw new ConfigurationError({ message: 'MixedToolParser: every parser must be a ToolParser' });
      }
      if (byType.has(parser.toolType)) {
        throw new ConfigurationError({
          message: `MixedToolParser: two parsers have tool type "${parser.toolType}"; tool types must be unique`,
        });
      }
      byType.set(parser.toolType, parser);
    }
    this.toolType = toolType;
    this.parsers = byType;
    this.#shared = new StrParser(fields);
  }

  /** System messages: the shared instruction, then each parser's, named by tool type; empty ones left out. */
  formatInstruction(): ChatMessage[] {
    const messages: ChatMessage[] = [];
    const shared = this.#shared.formatInstruction();
    if (shared.trim()) {
      messages.push(
        this.toolType
          ? { role: 'system', content: shared, name: this.toolType }
          : { role: 'system', content: shared },
      );
    }
    for (const [name, parser] of this.parsers) {
      const content = parser.formatInstruction();
      if (content.trim()) messages.push({ role: 'system', content, name });
    }
    return messages;
  }

  /** The response as parsed by the parser whose `begin` comes first; `NO_TOOL` when none occurs. */
  parseResponse(text: string): ParsedBy<P> {
    if (typeof text !== 'string') {
      throw new ParseError({
        text: toText(text),
        message: `MixedToolParser expects text, got ${kindOf(text)}`,
      });
    }
    let chosen: P | undefined;
    let earliest = Number.POSITIVE_INFINITY;
    for (const parser of this.parsers.values()) {
      const at = text.indexOf(parser.begin);
      if (at !== -1 && at < earliest) {
        earliest = at;
        chosen = parser;
      }
    }
    if (!chosen) {
      const none: ToolResponse<never> = {
        toolType: null,
        thought: text,
        action: null,
        status: ToolStatusCode.NO_TOOL,
      };
      return none as ParsedBy<P>;
    }
    return chosen.parseResponse(text) as ParsedBy<P>;
  }

  /** Renders a parsed response with the parser of its tool type; a `ParseError` names an unknown tool type. */
  formatResponse(parsed: ToolResponse): string {
    const response = asToolResponse(parsed);
    if (!response) return actionText(parsed ?? '');
    if (response.action === null || response.action === undefined) return response.thought;
    const parser = response.toolType === null ? undefined : this.parsers.get(response.toolType);
    if (!parser) {
      throw new ParseError({
        text: response.thought,
        message: `MixedToolParser has no parser for tool type "${response.toolType}" (known: ${[...this.parsers.keys()].join(', ')})`,
      });
    }
    return parser.formatResponse(response);
  }
}
