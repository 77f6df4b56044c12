import { z } from 'zod';
import type { OutputParser } from '../../prompts/output-parser';
import { JSONParser } from '../../prompts/parsers/json-parser';
import type { ChatMessage } from '../../schema/chat-message';
import { isPlainObject } from '../../utils/is';
import { toText } from '../../utils/text';
import type { PromptLanguage } from './internlm-prompts';
import {
  LAGENT_REACT_FINISH_FORMAT,
  LAGENT_REACT_FUNCTION_FORMAT,
  LAGENT_REACT_OUTPUT_FORMAT,
} from './lagent-prompts';
import { REACT_PROMPTS } from './react-prompts';

/** A ReAct step that calls a tool (the JSON the model writes; keys as in Lagent's formats). */
export interface ReActAction {
  thought_process: string;
  action: { name: string; parameters: Record<string, unknown> };
}

/** A ReAct step that answers. */
export interface ReActFinish {
  thought_process: string;
  conclusion: string;
}

/** What ReAct's default output format reads from a reply. */
export type ReActStep = ReActAction | ReActFinish;

/**
 * The `formatted` of a reply the output format could not read (not JSON, or neither format): the reason,
 * which the model is shown in a `NoAction` turn.
 */
export interface ReActParseFailure {
  parseError: string;
}

function schemasOf(language: PromptLanguage) {
  const text = REACT_PROMPTS[language].fields;
  const thought = z.string().describe(text.thoughtProcess);
  const action = z.object({
    thought_process: thought,
    action: z
      .object({
        name: z.string().describe(text.name),
        parameters: z.record(z.string(), z.unknown()).describe(text.parameters),
      })
      .describe(text.action),
  });
  const finish = z.object({ thought_process: thought, conclusion: z.string().describe(text.conclusion) });
  return { action, finish };
}

/**
 * ReAct's default output format: a `JSONParser` that accepts Lagent's two step formats, a tool call
 * (`thought_process` + `action: { name, parameters }`) or an answer (`thought_process` + `conclusion`), and
 * whose format instruction shows both. Build your own `JSONParser` to change the fields.
 *
 * @example
 * new ReAct({ llm, actions: [search], outputFormat: reactOutputFormat('en') });
 */
export function reactOutputFormat(language: PromptLanguage = 'zh'): JSONParser<z.ZodType<ReActStep>> {
  const { action, finish } = schemasOf(language);
  return new JSONParser({
    schema: z.union([action, finish]) as z.ZodType<ReActStep>,
    template: REACT_PROMPTS[language].outputFormat,
    function_format: new JSONParser({ schema: action }).formatSchema(),
    finish_format: new JSONParser({ schema: finish }).formatSchema(),
  });
}

/**
 * ReAct's output format as Python Lagent's ReAct example builds it: the same two step formats as
 * {@link reactOutputFormat}, with Lagent's instruction text (`LAGENT_REACT_OUTPUT_FORMAT`) and the formats
 * rendered as Lagent's `JSONParser` renders its pydantic models (`LAGENT_REACT_FUNCTION_FORMAT`,
 * `LAGENT_REACT_FINISH_FORMAT`: Python type names such as `str` and `dict[]`). `ReAct`'s default with
 * `compat: 'lagent'`.
 */
export function lagentReActOutputFormat(): JSONParser<z.ZodType<ReActStep>> {
  const { action, finish } = schemasOf('zh');
  return new JSONParser({
    schema: z.union([action, finish]) as z.ZodType<ReActStep>,
    template: LAGENT_REACT_OUTPUT_FORMAT,
    function_format: LAGENT_REACT_FUNCTION_FORMAT,
    finish_format: LAGENT_REACT_FINISH_FORMAT,
  });
}

/** True when a reply's `formatted` is a {@link ReActParseFailure}. */
export function isReActParseFailure(formatted: unknown): formatted is ReActParseFailure {
  return isPlainObject(formatted) && typeof formatted.parseError === 'string';
}

/**
 * Wraps the select agent's output format so that output it cannot read becomes data (a
 * {@link ReActParseFailure}) instead of failing the call: the model is then told what went wrong.
 */
export class ReActOutputParser<F> implements OutputParser<F | ReActParseFailure> {
  /** The parser given to `ReAct` (or the default one). */
  readonly parser: OutputParser<F>;

  constructor(parser: OutputParser<F>) {
    this.parser = parser;
  }

  formatInstruction(): string | ChatMessage[] {
    return this.parser.formatInstruction?.() ?? '';
  }

  parseResponse(text: string): F | ReActParseFailure {
    try {
      return this.parser.parseResponse(text);
    } catch (error) {
      return { parseError: toText(error) };
    }
  }

  formatResponse(parsed: F | ReActParseFailure): string {
    if (isReActParseFailure(parsed)) return '';
    if (this.parser.formatResponse) return this.parser.formatResponse(parsed as F);
    return toText(parsed, { json: 'python' });
  }
}
