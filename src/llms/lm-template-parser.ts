import { ConfigurationError } from '../schema/errors';
import type { ChatMessage } from './types';

/** The text that opens a turn, with or without the message's `name`. */
export interface LMRoleBegin {
  /** Used when the message has a `name`; `{name}` is replaced by it (or by its alias in `name`). */
  withName?: string | undefined;
  /** Used when the message has no `name`. */
  withoutName?: string | undefined;
  /** Aliases for names, e.g. `{ interpreter: '<|interpreter|>' }`. */
  name?: Readonly<Record<string, string>> | undefined;
}

/** How one role is rendered into a raw prompt. */
export interface LMRoleTemplate {
  role: string;
  /** Opens the turn: a fixed string, or text that depends on the message's `name`. @default '' */
  begin?: string | LMRoleBegin | undefined;
  /** Closes the turn. @default '' */
  end?: string | undefined;
  /** When the last message has this role, leave its turn open for the model to continue. */
  generate?: boolean | undefined;
  /** Render this role as another role of the template. */
  fallbackRole?: string | undefined;
}

/** A raw-prompt model's meta template: one entry per role; it must include `assistant`. */
export type LMMetaTemplate = readonly LMRoleTemplate[];

/**
 * Renders chat messages into one raw prompt with a meta template (Lagent's `LMTemplateParser`): each turn is
 * `begin + content + end`, and when the dialog does not end with the assistant, the assistant's `begin` is
 * appended so the model answers next. Without a template, contents are joined by newlines.
 *
 * @example
 * new LMTemplateParser(INTERNLM2_META).parse([{ role: 'user', content: 'hi' }]);
 * // '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n'
 */
export class LMTemplateParser {
  readonly #roles: Map<string, LMRoleTemplate> | undefined;

  constructor(template?: LMMetaTemplate) {
    if (template === undefined || template.length === 0) return;
    this.#roles = new Map();
    for (const entry of template) {
      if (this.#roles.has(entry.role)) {
        throw new ConfigurationError({ message: `meta template lists role '${entry.role}' twice` });
      }
      this.#roles.set(entry.role, entry);
    }
  }

  /** The prompt for `messages`; a string is returned as it is. */
  parse(messages: readonly ChatMessage[] | string): string {
    if (typeof messages === 'string') return messages;
    if (this.#roles === undefined) {
      return messages
        .map((message) => message.content ?? '')
        .filter((content) => content.length > 0)
        .join('\n');
    }
    let prompt = '';
    messages.forEach((message, index) => {
      prompt += this.#render(message, index === messages.length - 1);
    });
    return prompt;
  }

  #roleTemplate(role: string): LMRoleTemplate {
    let entry = this.#roles?.get(role);
    if (entry?.fallbackRole !== undefined) entry = this.#roles?.get(entry.fallbackRole);
    if (entry === undefined) {
      const known = [...(this.#roles?.keys() ?? [])].join(', ');
      throw new ConfigurationError({ message: `meta template has no role '${role}' (it has: ${known})` });
    }
    return entry;
  }

  /**
   * The opening text of a turn. As in Lagent, only a missing name (`undefined` or `null`) uses
   * `withoutName`; any string, even `''`, uses `withName` (`''` renders e.g. `<|im_start|>environment name=\n`).
   */
  #begin(entry: LMRoleTemplate, name: string | null | undefined): string {
    const begin = entry.begin ?? '';
    if (typeof begin === 'string') return begin;
    if (name === undefined || name === null) return begin.withoutName ?? '';
    const aliases = begin.name;
    const shown = aliases !== undefined && Object.hasOwn(aliases, name) ? aliases[name]! : String(name);
    return (begin.withName ?? '').replaceAll('{name}', shown);
  }

  #render(message: ChatMessage, isLast: boolean): string {
    const entry = this.#roleTemplate(message.role);
    const begin = this.#begin(entry, message.name);
    if (isLast && entry.generate) return begin + (message.content ?? '');
    let text = begin + (message.content ?? '') + (entry.end ?? '');
    if (isLast && entry.role !== 'assistant') text += this.#begin(this.#roleTemplate('assistant'), undefined);
    return text;
  }
}
