import type { ChatMessage, ToolCall } from '../schema/chat-message';
import { LLMRequestError } from '../schema/errors';
import { type LoadedImage, type LoadedImages, skippedNote } from './image-inputs';
import { parseToolArguments, type RequestTools, toAPIToolName } from './tool-calls';
import type { ToolChoice } from './types';
import { reportedCount, type TokenUsage } from './usage';

/** One content block of an Anthropic message, as the Messages API takes it. */
export type ClaudeBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } }
  | {
      type: 'tool_result';
      tool_use_id: string;
      content?: string | ClaudeBlock[];
      is_error?: boolean;
    };

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

/** The blocks of one chat message and the Anthropic role they go under; system text is handled by the caller. */
function blocksOf(
  message: ChatMessage,
  images: LoadedImages,
): { role: ClaudeMessage['role']; blocks: ClaudeBlock[] } {
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
  images?: LoadedImages,
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
    const { role, blocks } = blocksOf(message, images);
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

/** Anthropic's `usage` (input counts including cache reads and writes); undefined when absent. */
export function usageFromClaude(usage: unknown): TokenUsage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const raw = usage as Record<string, unknown>;
  const cacheWrite = reportedCount(raw.cache_creation_input_tokens);
  const cacheRead = reportedCount(raw.cache_read_input_tokens);
  const promptTokens = reportedCount(raw.input_tokens) + cacheWrite + cacheRead;
  const completionTokens = reportedCount(raw.output_tokens);
  const result: TokenUsage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  if (cacheRead > 0) result.cacheReadTokens = cacheRead;
  if (cacheWrite > 0) result.cacheWriteTokens = cacheWrite;
  return result;
}

/** The text and tool calls of a non-streaming reply; throws `LLMRequestError` when it is not a message. */
export function readClaudeMessage(
  response: unknown,
  tools: RequestTools | undefined,
  where: string,
): { text: string; toolCalls: ToolCall[]; finishReason: string | undefined; usage: TokenUsage | undefined } {
  const content = (response as { content?: unknown } | null)?.content;
  if (!Array.isArray(content)) {
    throw new LLMRequestError({
      message: `${where} failed: the server's reply is not a message: ${snippet(response)}`,
    });
  }
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const [position, entry] of content.entries()) {
    const block = entry as { type?: unknown; text?: unknown; id?: unknown; name?: unknown; input?: unknown };
    if (block?.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block?.type === 'tool_use') {
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
  };
}
