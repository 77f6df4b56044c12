import { ActionReturn } from '../../schema/action-return';
import { contentPartsText, isContentParts } from '../../schema/content-parts';
import { toText } from '../../utils/text';

/**
 * Message content as prompt text: strings as they are, `null` / `undefined` as `''`, a tool result as
 * {@link ActionReturn.toText} (the result, or the error of a failed call), content parts as their text with a
 * note for each image and file (`contentPartsText`), anything else as Python's
 * `json.dumps(content, ensure_ascii=False)` writes it, as Lagent renders tool calls and results. Never throws.
 */
export function contentToText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (content === null || content === undefined) return '';
  if (content instanceof ActionReturn) return content.toText();
  if (Array.isArray(content) && isContentParts(content)) return contentPartsText(content);
  return toText(content, { json: 'python' });
}
