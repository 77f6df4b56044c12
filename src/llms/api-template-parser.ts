import type { ContentPart } from '../schema/content-parts';
import type { ChatMessage } from './types';

/** How one Lagent role is sent to a chat API: its API role, and optional text around the content. */
export interface APIRoleTemplate {
  /** The role in lagent-ts messages, e.g. `'environment'`. */
  role: string;
  /** The role the API understands, e.g. `'system'`. */
  apiRole: string;
  /** Prepended to the content. @default '' */
  begin?: string | undefined;
  /** Appended to the content. @default '' */
  end?: string | undefined;
}

/** A chat API's meta template: one entry per role. */
export type APIMetaTemplate = readonly APIRoleTemplate[];

/** Lagent's mapping for OpenAI-style APIs: tool results (`environment`) are sent as `system` messages. */
export const DEFAULT_API_META_TEMPLATE: APIMetaTemplate = Object.freeze([
  Object.freeze({ role: 'system', apiRole: 'system' }),
  Object.freeze({ role: 'user', apiRole: 'user' }),
  Object.freeze({ role: 'assistant', apiRole: 'assistant' }),
  Object.freeze({ role: 'environment', apiRole: 'system' }),
]);

/** OpenAI accepts `name` only in this shape. */
const API_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function apiName(name: string | undefined): string | undefined {
  if (name === undefined || name === '') return undefined;
  if (API_NAME.test(name)) return name;
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

/**
 * Maps Lagent roles to a chat API's roles (Lagent's API template parser): each message gets its `apiRole`
 * and the role's `begin`/`end` text, and consecutive messages that end up with the same API role are
 * merged into one, their contents joined by a newline. Roles the template does not list pass through
 * unchanged. `name` is kept, made safe for OpenAI (`[A-Za-z0-9_-]`, at most 64 characters), and dropped
 * when merged messages disagree on it. `toolCalls` and `toolCallId` (with a tool result's `isError` and
 * `images`) are kept, and such turns are never merged.
 *
 * @example
 * new APITemplateParser().parse([
 *   { role: 'user', content: 'run it' },
 *   { role: 'assistant', content: 'ok' },
 *   { role: 'environment', content: '42', name: 'interpreter' },
 * ]); // the environment turn becomes { role: 'system', content: '42', name: 'interpreter' }
 */
export class APITemplateParser {
  readonly #roles: Map<string, APIRoleTemplate>;

  constructor(template: APIMetaTemplate = DEFAULT_API_META_TEMPLATE) {
    this.#roles = new Map(template.map((entry) => [entry.role, entry]));
  }

  /** The API messages for `messages` (new objects; the input is not changed). */
  parse(messages: readonly ChatMessage[]): ChatMessage[] {
    const result: ChatMessage[] = [];
    let mergedNames = new Set<string | undefined>();
    // A tool-calling turn or a tool result is never merged: each is tied to its calls' ids.
    let previousIsToolTurn = false;
    for (const message of messages) {
      const entry = this.#roles.get(message.role);
      const role = entry?.apiRole ?? message.role;
      const begin = entry?.begin ?? '';
      const end = entry?.end ?? '';
      const content =
        message.content === null && begin === '' && end === ''
          ? null
          : `${begin}${message.content ?? ''}${end}`;
      const name = apiName(message.name);
      const isToolTurn =
        message.toolCallId !== undefined || (message.toolCalls !== undefined && message.toolCalls.length > 0);
      const previous = result.at(-1);
      if (previous !== undefined && previous.role === role && !isToolTurn && !previousIsToolTurn) {
        if (previous.parts !== undefined || message.parts !== undefined) {
          previous.parts = mergeParts(previous, message, begin, end);
        }
        previous.content =
          previous.content === null
            ? content
            : content === null
              ? previous.content
              : `${previous.content}\n${content}`;
        if (message.reasoningParts !== undefined) {
          previous.reasoningParts = [...(previous.reasoningParts ?? []), ...message.reasoningParts];
        }
        mergedNames.add(name);
        if (mergedNames.size > 1) delete previous.name;
        continue;
      }
      const apiMessage: ChatMessage = { role, content };
      if (name !== undefined) apiMessage.name = name;
      if (message.parts !== undefined) apiMessage.parts = withText(message.parts, begin, end);
      if (message.reasoning !== undefined) apiMessage.reasoning = message.reasoning;
      if (message.reasoningParts !== undefined) apiMessage.reasoningParts = message.reasoningParts;
      if (message.toolCalls !== undefined && message.toolCalls.length > 0)
        apiMessage.toolCalls = message.toolCalls;
      if (message.toolCallId !== undefined) {
        apiMessage.toolCallId = message.toolCallId;
        if (message.isError !== undefined) apiMessage.isError = message.isError;
        if (message.images !== undefined) apiMessage.images = message.images;
      }
      result.push(apiMessage);
      mergedNames = new Set([name]);
      previousIsToolTurn = isToolTurn;
    }
    return result;
  }
}

/** A message's parts with the role's `begin` / `end` text around them. */
function withText(parts: readonly ContentPart[], begin: string, end: string): readonly ContentPart[] {
  if (begin === '' && end === '') return parts;
  const result: ContentPart[] = [];
  if (begin !== '') result.push({ type: 'text', text: begin });
  result.push(...parts);
  if (end !== '') result.push({ type: 'text', text: end });
  return result;
}

/** The parts of two merged messages (a message without parts counts as its text), separated by a newline. */
function mergeParts(previous: ChatMessage, next: ChatMessage, begin: string, end: string): ContentPart[] {
  const before: readonly ContentPart[] = previous.parts ?? [{ type: 'text', text: previous.content ?? '' }];
  const after =
    next.parts !== undefined
      ? withText(next.parts, begin, end)
      : [{ type: 'text' as const, text: `${begin}${next.content ?? ''}${end}` }];
  return [...before, { type: 'text', text: '\n' }, ...after];
}
