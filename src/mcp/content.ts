import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import { type ActionResultItem, ActionReturn } from '../schema/action-return';
import { ActionStatusCode } from '../schema/status';
import { toText } from '../utils/text';

function dataURL(mimeType: string | undefined, data: string): string {
  return `data:${mimeType || 'application/octet-stream'};base64,${data}`;
}

/** The item type of binary content: `image` and `audio` by MIME type, `file` for anything else. */
function binaryType(mimeType: string | undefined): string {
  if (mimeType?.startsWith('image/')) return 'image';
  if (mimeType?.startsWith('audio/')) return 'audio';
  return 'file';
}

/**
 * One MCP content block as an {@link ActionResultItem}: text as text; images and audio as `data:` URLs
 * (Lagent's image items hold a path or URL); an embedded text resource as its text, an embedded blob as a
 * `data:` URL; a resource link as a `resource` item holding its URI. Unknown blocks are kept as JSON text.
 */
export function contentItem(block: ContentBlock): ActionResultItem {
  switch (block.type) {
    case 'text':
      return { type: 'text', content: block.text };
    case 'image':
      return { type: 'image', content: dataURL(block.mimeType, block.data) };
    case 'audio':
      return { type: 'audio', content: dataURL(block.mimeType, block.data) };
    case 'resource': {
      const resource = block.resource;
      if ('text' in resource && typeof resource.text === 'string')
        return { type: 'text', content: resource.text };
      if ('blob' in resource && typeof resource.blob === 'string') {
        return { type: binaryType(resource.mimeType), content: dataURL(resource.mimeType, resource.blob) };
      }
      return { type: 'resource', content: resource.uri };
    }
    case 'resource_link':
      return { type: 'resource', content: block.uri };
    default:
      return { type: 'text', content: toText(block) };
  }
}

/**
 * A `tools/call` result as an {@link ActionReturn}: its content blocks as result items (structured content
 * as JSON text when there are none); a result the server flags `isError` is an `API_ERROR` whose message is
 * the result's text, so that the model reads what went wrong.
 */
export function toolResultReturn(
  result: CallToolResult,
  args: Record<string, unknown>,
  type: string,
): ActionReturn {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const items = blocks.map(contentItem);
  if (items.length === 0 && result.structuredContent !== undefined) {
    items.push({ type: 'text', content: toText(result.structuredContent) });
  }
  if (result.isError === true) {
    const text = items
      .filter((item) => item.type === 'text')
      .map((item) => item.content)
      .join('\n');
    return new ActionReturn({
      args,
      type,
      errmsg: text || 'the MCP tool reported an error without a message',
      state: ActionStatusCode.API_ERROR,
    });
  }
  return new ActionReturn({ args, type, result: items });
}

const DATA_URL = /^data:([^;,]+)?;base64,(.*)$/s;

/** An {@link ActionResultItem} as an MCP content block: `data:` URLs of images and audio as binary blocks. */
export function itemContent(item: ActionResultItem): ContentBlock {
  if (item.type === 'text') return { type: 'text', text: item.content };
  const data = DATA_URL.exec(item.content);
  if (data) {
    const mimeType = data[1] ?? 'application/octet-stream';
    if (item.type === 'image' || mimeType.startsWith('image/')) {
      return { type: 'image', data: data[2] ?? '', mimeType };
    }
    if (item.type === 'audio' || mimeType.startsWith('audio/')) {
      return { type: 'audio', data: data[2] ?? '', mimeType };
    }
  }
  // A path or URL: the model sees it as Lagent shows it.
  return { type: 'text', text: `[${item.type}](${item.content})` };
}

/**
 * An {@link ActionReturn} as a `tools/call` result: a successful call's items as content blocks; any other
 * state an `isError` result holding the text the model would see (`ActionReturn.toText()`).
 */
export function actionReturnResult(output: ActionReturn): CallToolResult {
  if (output.state !== ActionStatusCode.SUCCESS) {
    return { content: [{ type: 'text', text: output.toText() }], isError: true };
  }
  return { content: (output.result ?? []).map(itemContent) };
}
