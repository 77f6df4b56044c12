import type { ChatMessage, ToolCall } from '../schema/chat-message';
import { type ContentPart, partNote } from '../schema/content-parts';
import { LLMRequestError, ValidationError } from '../schema/errors';
import type { ReasoningPart } from '../schema/reasoning';
import type { LoadedParts } from './content-inputs';
import { type LoadedImage, type LoadedImages, skippedNote } from './image-inputs';
import { parseToolArguments, type RequestTools, toAPIToolName } from './tool-calls';
import type { ToolChoice } from './types';
import { reportedCount, type TokenUsage } from './usage';

/** Where an image or document block's content is. */
export type ClaudeSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string }
  | { type: 'text'; media_type: 'text/plain'; data: string };

/** One content block of an Anthropic message, as the Messages API takes it. */
export type ClaudeBlock = (
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'image'; source: ClaudeSource }
  | { type: 'document'; source: ClaudeSource; title?: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content?: string | ClaudeBlock[];
      is_error?: boolean;
    }
) & { cache_control?: { type: 'ephemeral' } };

/** A prompt-cache breakpoint (Anthropic caches the prompt up to and including the block that carries it). */
export const CACHE_CONTROL = Object.freeze({ type: 'ephemeral' as const });

/** One Anthropic message: a string for a single text, else blocks. */
export interface ClaudeMessage {
  role: 'user' | 'assistant';
  content: string | ClaudeBlock[];
}

/** An Anthropic tool definition. */
export interface ClaudeTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

function snippet(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** A call's arguments as a `tool_use` input, which must be an object: text that is not one becomes `{}`. */
function inputOf(call: ToolCall): Record<string, unknown> {
  const value = typeof call.arguments === 'string' ? parseToolArguments(call.arguments) : call.arguments;
  return typeof value === 'string' ? {} : value;
}

/** What a dialog's messages carry besides text, read before they are mapped. */
export interface ClaudeInputs {
  images?: LoadedImages;
  parts?: LoadedParts;
}

/**
 * The blocks of one chat message and the Anthropic role they go under; system text is handled by the caller.
 * An assistant turn starts with its Claude thinking blocks (signatures intact), as Anthropic requires of a turn
 * that called tools with thinking on; reasoning from other providers is not sent.
 */
function blocksOf(
  message: ChatMessage,
  inputs: ClaudeInputs,
  owner: string,
): { role: ClaudeMessage['role']; blocks: ClaudeBlock[] } {
  const images = inputs.images;
  const text = message.content ?? '';
  if (message.toolCallId !== undefined) {
    const block: Extract<ClaudeBlock, { type: 'tool_result' }> = {
      type: 'tool_result',
      tool_use_id: message.toolCallId,
    };
    const parts = images === undefined ? [] : imageBlocks(message.images, images);
    if (parts.length > 0) block.content = text.length > 0 ? [{ type: 'text', text }, ...parts] : parts;
    else if (text.length > 0) block.content = text;
    if (message.isError === true) block.is_error = true;
    return { role: 'user', blocks: [block] };
  }
  const blocks: ClaudeBlock[] = [];
  if (message.role === 'assistant' && message.reasoningParts !== undefined) {
    for (const part of message.reasoningParts) {
      if (part.type === 'anthropic.thinking') {
        blocks.push({ type: 'thinking', thinking: part.thinking, signature: part.signature });
      } else if (part.type === 'anthropic.redacted_thinking') {
        blocks.push({ type: 'redacted_thinking', data: part.data });
      }
    }
  }
  if (message.parts !== undefined && inputs.parts !== undefined && message.role !== 'assistant') {
    for (const part of message.parts) blocks.push(...partBlocks(part, inputs.parts, owner));
    return { role: 'user', blocks };
  }
  // Anthropic refuses empty text blocks.
  if (text.length > 0) blocks.push({ type: 'text', text });
  if (message.role === 'assistant') {
    for (const call of message.toolCalls ?? []) {
      blocks.push({ type: 'tool_use', id: call.id, name: toAPIToolName(call.name), input: inputOf(call) });
    }
    return { role: 'assistant', blocks };
  }
  return { role: 'user', blocks };
}

/** Media types Anthropic takes as document blocks. */
const DOCUMENT_TYPES = new Set(['application/pdf', 'text/plain']);

/** One content part as Anthropic blocks: text, an image, or a document (PDF, plain text). */
function partBlocks(part: ContentPart, loaded: NonNullable<LoadedParts>, owner: string): ClaudeBlock[] {
  if (part.type === 'text') return part.text.length > 0 ? [{ type: 'text', text: part.text }] : [];
  const source = loaded.get(part);
  if (source === undefined) return [{ type: 'text', text: partNote(part) }];
  const wire: ClaudeSource =
    source.kind === 'url'
      ? { type: 'url', url: source.url }
      : { type: 'base64', media_type: source.mediaType, data: source.data };
  if (part.type === 'image') return [{ type: 'image', source: wire }];
  const mediaType = (source.mediaType ?? part.mediaType).toLowerCase();
  if (!DOCUMENT_TYPES.has(mediaType)) {
    throw new ValidationError({
      field: 'mediaType',
      message: `${owner}: a file part of type ${mediaType} cannot be sent: Anthropic takes PDF (application/pdf) and plain-text (text/plain) documents`,
    });
  }
  const block: Extract<ClaudeBlock, { type: 'document' }> =
    mediaType === 'text/plain' && source.kind === 'data'
      ? {
          type: 'document',
          source: {
            type: 'text',
            media_type: 'text/plain',
            data: Buffer.from(source.data, 'base64').toString('utf8'),
          },
        }
      : { type: 'document', source: wire };
  if (part.filename !== undefined) block.title = part.filename;
  return [block];
}

/** A tool result's images as image blocks, and a text block for each one that could not be sent. */
function imageBlocks(
  sources: readonly string[] | undefined,
  images: ReadonlyMap<string, LoadedImage>,
): ClaudeBlock[] {
  const blocks: ClaudeBlock[] = [];
  for (const source of sources ?? []) {
    const image = images.get(source);
    if (image === undefined) continue;
    if ('skipped' in image) blocks.push({ type: 'text', text: skippedNote(source, image.skipped) });
    else
      blocks.push({
        type: 'image',
        source: { type: 'base64', media_type: image.mediaType, data: image.data },
      });
  }
  return blocks;
}

/**
 * Lagent's OpenAI-shaped dialog as a Messages API request: the leading `system` messages become the `system`
 * field (joined by a blank line); later ones, which Anthropic has no place for, are user text where they
 * stand. An assistant turn's `toolCalls` become `tool_use` blocks (toolkit APIs named `Name__api`), a message
 * with `toolCallId` (role `tool`) a `tool_result` block in a user turn (`is_error` when the call failed, with
 * image blocks for the loaded `images` it carries), and every other role (`user`,
 * `environment`, ...) user text. Consecutive turns of one role are merged into one message, tool results
 * first, as Anthropic requires; empty turns are dropped.
 */
export function toClaudeMessages(
  messages: readonly ChatMessage[],
  inputs: ClaudeInputs = {},
  owner = 'ClaudeAPI',
): {
  system: string | undefined;
  messages: ClaudeMessage[];
} {
  const system: string[] = [];
  const turns: { role: ClaudeMessage['role']; blocks: ClaudeBlock[] }[] = [];
  let leading = true;
  for (const message of messages) {
    if (message.role === 'system' && message.toolCallId === undefined && leading) {
      if (message.content) system.push(message.content);
      continue;
    }
    leading = false;
    const { role, blocks } = blocksOf(message, inputs, owner);
    if (blocks.length === 0) continue;
    const last = turns.at(-1);
    if (last !== undefined && last.role === role) last.blocks.push(...blocks);
    else turns.push({ role, blocks });
  }
  return {
    system: system.length > 0 ? system.join('\n\n') : undefined,
    messages: turns.map(({ role, blocks }) => {
      const ordered =
        role === 'user' && blocks.some((block) => block.type === 'tool_result')
          ? [
              ...blocks.filter((block) => block.type === 'tool_result'),
              ...blocks.filter((block) => block.type !== 'tool_result'),
            ]
          : blocks;
      const only = ordered[0];
      return ordered.length === 1 && only?.type === 'text'
        ? { role, content: only.text }
        : { role, content: ordered };
    }),
  };
}

/** The request's tools (OpenAI JSON, API names) as Anthropic tool definitions. */
export function toClaudeTools(tools: RequestTools): ClaudeTool[] {
  return tools.tools.map((tool) => ({
    name: tool.function.name,
    description: tool.function.description ?? '',
    input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
  }));
}

/**
 * Lagent's `toolChoice` and `parallelToolCalls` as Anthropic's `tool_choice`: `'auto'`, `'none'`,
 * `'required'` -> `{ type: 'any' }`, `{ name }` -> `{ type: 'tool', name }`; `parallelToolCalls: false` sets
 * `disable_parallel_tool_use`. Undefined when neither is given.
 */
export function toClaudeToolChoice(
  choice: ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
): Record<string, unknown> | undefined {
  if (choice === undefined && parallelToolCalls === undefined) return undefined;
  const result: Record<string, unknown> =
    choice === undefined || choice === 'auto'
      ? { type: 'auto' }
      : choice === 'none'
        ? { type: 'none' }
        : choice === 'required'
          ? { type: 'any' }
          : { type: 'tool', name: toAPIToolName(choice.name) };
  if (parallelToolCalls === false && result.type !== 'none') result.disable_parallel_tool_use = true;
  return result;
}

/** Anthropic's `stop_reason` in the vocabulary of `ModelReply.finishReason` (OpenAI's); others as they are. */
export function finishReasonOf(stopReason: unknown): string | undefined {
  if (typeof stopReason !== 'string') return undefined;
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    default:
      return stopReason;
  }
}

/**
 * Anthropic's `usage`: prompt tokens include cache reads and writes, which are also reported apart
 * (`cachedPromptTokens`, `cacheWriteTokens`) when the server sends them; undefined when absent.
 */
export function usageFromClaude(usage: unknown): TokenUsage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const raw = usage as Record<string, unknown>;
  const cacheWrite = reportedCount(raw.cache_creation_input_tokens);
  const cacheRead = reportedCount(raw.cache_read_input_tokens);
  const promptTokens = reportedCount(raw.input_tokens) + cacheWrite + cacheRead;
  const completionTokens = reportedCount(raw.output_tokens);
  const result: TokenUsage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  if (cacheRead > 0) result.cachedPromptTokens = cacheRead;
  if (cacheWrite > 0) result.cacheWriteTokens = cacheWrite;
  return result;
}

/**
 * Marks the stable prefix of a request for Anthropic's prompt cache: the last tool, the system prompt and the
 * last block of the last message each get a `cache_control` breakpoint (3 of the 4 Anthropic allows), so the
 * next request of a tool loop or a conversation reads tools, system prompt and history from the cache. A string
 * `system` becomes one text block. Thinking blocks cannot carry a breakpoint and are skipped.
 */
export function markCachePrefix(body: Record<string, unknown>): void {
  const tools = body.tools as Record<string, unknown>[] | undefined;
  if (Array.isArray(tools) && tools.length > 0) {
    tools[tools.length - 1] = { ...tools[tools.length - 1], cache_control: CACHE_CONTROL };
  }
  if (typeof body.system === 'string' && body.system.length > 0) {
    body.system = [{ type: 'text', text: body.system, cache_control: CACHE_CONTROL }];
  }
  const messages = body.messages as ClaudeMessage[] | undefined;
  const last = messages?.at(-1);
  if (last === undefined) return;
  const blocks: ClaudeBlock[] =
    typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : [...last.content];
  for (let index = blocks.length - 1; index >= 0; index--) {
    const block = blocks[index]!;
    if (block.type === 'thinking' || block.type === 'redacted_thinking') continue;
    if (block.type === 'text' && block.text.length === 0) continue;
    blocks[index] = { ...block, cache_control: CACHE_CONTROL };
    messages![messages!.length - 1] = { role: last.role, content: blocks };
    return;
  }
}

/**
 * The text, tool calls and thinking of a non-streaming reply (thinking text joined by a blank line; every
 * thinking and redacted-thinking block kept as a `ReasoningPart`); throws `LLMRequestError` when it is not a
 * message.
 */
export function readClaudeMessage(
  response: unknown,
  tools: RequestTools | undefined,
  where: string,
): {
  text: string;
  toolCalls: ToolCall[];
  finishReason: string | undefined;
  usage: TokenUsage | undefined;
  reasoning: string | undefined;
  reasoningParts: ReasoningPart[] | undefined;
} {
  const content = (response as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) {
    throw new LLMRequestError({
      message: `${where} failed: the server's reply is not a message: ${snippet(response)}`,
    });
  }
  let text = '';
  const toolCalls: ToolCall[] = [];
  const thoughts: string[] = [];
  let reasoningParts: ReasoningPart[] | undefined;
  for (const [position, entry] of content.entries()) {
    const block = entry as {
      type?: unknown;
      text?: unknown;
      id?: unknown;
      name?: unknown;
      input?: unknown;
      thinking?: unknown;
      signature?: unknown;
      data?: unknown;
    };
    if (block?.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block?.type === 'thinking') {
      const thinking = typeof block.thinking === 'string' ? block.thinking : '';
      if (thinking !== '') thoughts.push(thinking);
      reasoningParts ??= [];
      reasoningParts.push({
        type: 'anthropic.thinking',
        thinking,
        signature: typeof block.signature === 'string' ? block.signature : '',
      });
    } else if (block?.type === 'redacted_thinking' && typeof block.data === 'string') {
      reasoningParts ??= [];
      reasoningParts.push({ type: 'anthropic.redacted_thinking', data: block.data });
    } else if (block?.type === 'tool_use') {
      if (typeof block.name !== 'string') {
        throw new LLMRequestError({
          message: `${where} failed: malformed tool_use block: ${snippet(entry)}`,
        });
      }
      const input = block.input;
      toolCalls.push({
        id: typeof block.id === 'string' && block.id.length > 0 ? block.id : `call_${position}`,
        name: tools?.names.get(block.name) ?? block.name,
        arguments:
          input !== null && typeof input === 'object' && !Array.isArray(input)
            ? { ...(input as Record<string, unknown>) }
            : typeof input === 'string'
              ? parseToolArguments(input)
              : input === undefined || input === null
                ? {}
                : JSON.stringify(input),
      });
    }
  }
  const raw = response as { stop_reason?: unknown; usage?: unknown };
  return {
    text,
    toolCalls,
    finishReason: finishReasonOf(raw.stop_reason),
    usage: usageFromClaude(raw.usage),
    reasoning: thoughts.length > 0 ? thoughts.join('\n\n') : undefined,
    reasoningParts,
  };
}
