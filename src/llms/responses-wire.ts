import type { ChatMessage, ToolCall } from '../schema/chat-message';
import { partNote } from '../schema/content-parts';
import { LLMRequestError } from '../schema/errors';
import type { OpenAIReasoningItemPart, ReasoningPart } from '../schema/reasoning';
import { type ResponseFormat, strictJSONSchema } from '../schema/response-format';
import { type LoadedParts, partURL } from './content-inputs';
import { type LoadedImages, skippedNote } from './image-inputs';
import type { ReasoningStream } from './reasoning-stream';
import {
  defaultFilename,
  parseToolArguments,
  type RequestTools,
  type ToolCallAssembler,
  toAPIToolName,
} from './tool-calls';
import type { ToolChoice } from './types';
import { type TokenUsage, usageFromAPI } from './usage';

/*
 * OpenAI's Responses API (`POST /v1/responses`) on the wire: Lagent's dialog as `input` items, the `output`
 * items of a reply, and the events of a stream. Reasoning items travel as `ReasoningPart`s of type
 * `openai.reasoning`: with `store: false` they come with their encrypted content and go back into the next
 * request's input, before the function calls of their turn, as the API needs to continue a tool loop.
 */

function snippet(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** What {@link toResponsesInput} reads besides the messages. */
export interface ResponsesInputs {
  images: LoadedImages;
  parts: LoadedParts;
}

/**
 * The dialog as Responses API input: the leading `system` messages become `instructions`; user text (with its
 * image and file parts as `input_image` / `input_file`), later system messages and assistant text become input
 * messages; an assistant turn's OpenAI reasoning items (`reasoningParts`) come back as `reasoning` items, its
 * tool calls as `function_call` items, and tool results as `function_call_output` items (their images follow as
 * one user message, as function outputs here carry text).
 */
export function toResponsesInput(
  messages: readonly ChatMessage[],
  inputs: ResponsesInputs,
): { instructions: string | undefined; input: Record<string, unknown>[] } {
  const system: string[] = [];
  const input: Record<string, unknown>[] = [];
  let images: Record<string, unknown>[] = [];
  let leading = true;
  for (const message of messages) {
    if (images.length > 0 && message.toolCallId === undefined) {
      input.push({ role: 'user', content: images });
      images = [];
    }
    if (message.role === 'system' && leading && message.toolCallId === undefined) {
      if (message.content) system.push(message.content);
      continue;
    }
    leading = false;
    if (message.toolCallId !== undefined) {
      input.push({
        type: 'function_call_output',
        call_id: message.toolCallId,
        output: message.content ?? '',
      });
      if (inputs.images !== undefined) addImages(images, message, inputs.images);
      continue;
    }
    if (message.role === 'assistant') {
      for (const part of message.reasoningParts ?? []) {
        if (part.type === 'openai.reasoning') input.push(reasoningItem(part));
      }
      if (message.content) input.push({ role: 'assistant', content: message.content });
      for (const call of message.toolCalls ?? []) input.push(functionCallItem(call));
      continue;
    }
    const role = message.role === 'system' || message.role === 'developer' ? message.role : 'user';
    if (message.parts !== undefined && inputs.parts !== undefined) {
      input.push({ role, content: inputParts(message, inputs.parts) });
    } else input.push({ role, content: message.content ?? '' });
  }
  if (images.length > 0) input.push({ role: 'user', content: images });
  return { instructions: system.length > 0 ? system.join('\n\n') : undefined, input };
}

/** An OpenAI reasoning item as the API takes it back. */
function reasoningItem(part: OpenAIReasoningItemPart): Record<string, unknown> {
  const item: Record<string, unknown> = {
    type: 'reasoning',
    id: part.id,
    summary: part.summary.map((text) => ({ type: 'summary_text', text })),
  };
  if (part.encryptedContent !== undefined) item.encrypted_content = part.encryptedContent;
  return item;
}

function functionCallItem(call: ToolCall): Record<string, unknown> {
  return {
    type: 'function_call',
    call_id: call.id,
    name: toAPIToolName(call.name),
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  };
}

/** A user message's parts as `input_text`, `input_image` and `input_file` content. */
function inputParts(message: ChatMessage, loaded: NonNullable<LoadedParts>): Record<string, unknown>[] {
  const content: Record<string, unknown>[] = [];
  for (const part of message.parts ?? []) {
    if (part.type === 'text') {
      content.push({ type: 'input_text', text: part.text });
      continue;
    }
    const source = loaded.get(part);
    if (source === undefined) {
      content.push({ type: 'input_text', text: partNote(part) });
    } else if (part.type === 'image') {
      content.push({ type: 'input_image', image_url: partURL(source), detail: 'auto' });
    } else if (source.kind === 'url') {
      content.push({ type: 'input_file', file_url: source.url });
    } else {
      content.push({
        type: 'input_file',
        filename: part.filename ?? defaultFilename(source.mediaType),
        file_data: partURL(source),
      });
    }
  }
  return content;
}

function addImages(
  parts: Record<string, unknown>[],
  message: ChatMessage,
  images: NonNullable<LoadedImages>,
): void {
  for (const source of message.images ?? []) {
    const image = images.get(source);
    if (image === undefined) continue;
    if (parts.length === 0)
      parts.push({ type: 'input_text', text: 'Images returned by the tool calls above:' });
    parts.push(
      'skipped' in image
        ? { type: 'input_text', text: skippedNote(source, image.skipped) }
        : { type: 'input_image', image_url: `data:${image.mediaType};base64,${image.data}`, detail: 'auto' },
    );
  }
}

/** Adds `tools`, `tool_choice` and `parallel_tool_calls` in the Responses API's shape (function tools flat). */
export function addResponsesToolFields(
  body: Record<string, unknown>,
  tools: RequestTools | undefined,
  toolChoice: ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
): void {
  if (tools === undefined) return;
  body.tools = tools.tools.map(({ function: tool }) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    strict: false,
  }));
  if (toolChoice !== undefined) {
    body.tool_choice =
      typeof toolChoice === 'string'
        ? toolChoice
        : { type: 'function', name: toAPIToolName(toolChoice.name) };
  }
  if (parallelToolCalls !== undefined) body.parallel_tool_calls = parallelToolCalls;
}

/** A `responseFormat` as the Responses API's `text.format`. */
export function responsesTextFormat(format: ResponseFormat): Record<string, unknown> {
  const strict = strictJSONSchema(format);
  if (strict === undefined) return { type: 'json_object' };
  const result: Record<string, unknown> = {
    type: 'json_schema',
    name: strict.name,
    schema: strict.schema,
    strict: strict.strict,
  };
  if (strict.description !== undefined) result.description = strict.description;
  return result;
}

/** One reply of the Responses API, read. */
export interface ResponsesReply {
  text: string;
  toolCalls: ToolCall[];
  finishReason: string | undefined;
  usage: TokenUsage | undefined;
  reasoning: string | undefined;
  reasoningParts: ReasoningPart[] | undefined;
}

/** A `reasoning` output item as a {@link ReasoningPart}, and its summary text. */
function readReasoningItem(item: Record<string, any>): { part: OpenAIReasoningItemPart; text: string } {
  const summary: string[] = [];
  if (Array.isArray(item.summary)) {
    for (const entry of item.summary) if (typeof entry?.text === 'string') summary.push(entry.text);
  }
  const part: OpenAIReasoningItemPart = { type: 'openai.reasoning', id: String(item.id ?? ''), summary };
  if (typeof item.encrypted_content === 'string') part.encryptedContent = item.encrypted_content;
  return { part, text: summary.join('\n\n') };
}

/** The finish reason of a response: tool calls, a cut at the token limit, or a stop. */
function finishReasonOf(response: Record<string, any>, hasCalls: boolean): string | undefined {
  if (hasCalls) return 'tool_calls';
  if (response.status === 'incomplete') {
    const reason = response.incomplete_details?.reason;
    return reason === 'max_output_tokens' ? 'length' : typeof reason === 'string' ? reason : 'length';
  }
  return response.status === 'completed' ? 'stop' : undefined;
}

/** The error a failed response (or an `error` event) stands for. */
function responseError(error: unknown, where: string): LLMRequestError {
  const detail = error as { message?: unknown; code?: unknown } | null | undefined;
  const message = typeof detail?.message === 'string' ? detail.message : snippet(error);
  const code = typeof detail?.code === 'string' ? ` (${detail.code})` : '';
  return new LLMRequestError({ message: `${where} failed: the response failed${code}: ${message}` });
}

/** The text, tool calls, reasoning and usage of a non-streaming response. */
export function readResponse(
  response: unknown,
  tools: RequestTools | undefined,
  where: string,
): ResponsesReply {
  const raw = response as Record<string, any> | null;
  if (raw === null || typeof raw !== 'object' || !Array.isArray(raw.output)) {
    throw new LLMRequestError({
      message: `${where} failed: the server's reply is not a response: ${snippet(response)}`,
    });
  }
  if (raw.status === 'failed') throw responseError(raw.error, where);
  let text = '';
  const toolCalls: ToolCall[] = [];
  const reasoningTexts: string[] = [];
  let reasoningParts: ReasoningPart[] | undefined;
  for (const item of raw.output as Record<string, any>[]) {
    if (item?.type === 'message') {
      for (const part of Array.isArray(item.content) ? item.content : []) {
        if (part?.type === 'output_text' && typeof part.text === 'string') text += part.text;
      }
    } else if (item?.type === 'function_call') {
      if (typeof item.name !== 'string') {
        throw new LLMRequestError({
          message: `${where} failed: malformed function_call item: ${snippet(item)}`,
        });
      }
      toolCalls.push({
        id: typeof item.call_id === 'string' ? item.call_id : `call_${toolCalls.length}`,
        name: tools?.names.get(item.name) ?? item.name,
        arguments: parseToolArguments(typeof item.arguments === 'string' ? item.arguments : ''),
      });
    } else if (item?.type === 'reasoning') {
      const { part, text: summary } = readReasoningItem(item);
      reasoningParts ??= [];
      reasoningParts.push(part);
      if (summary !== '') reasoningTexts.push(summary);
    }
  }
  return {
    text,
    toolCalls,
    finishReason: finishReasonOf(raw, toolCalls.length > 0),
    usage: usageFromAPI(raw.usage),
    reasoning: reasoningTexts.length > 0 ? reasoningTexts.join('\n\n') : undefined,
    reasoningParts,
  };
}

/** What a stream of Responses API events has told so far besides text. */
export interface ResponsesStreamState {
  usage: TokenUsage | undefined;
  /** Output index of each function call -> its place among the calls (the assembler's index). */
  calls: Map<number, number>;
  /** Whether a reasoning summary part was already started (summaries are joined by a blank line). */
  summaries: number;
}

/** A fresh {@link ResponsesStreamState}. */
export function responsesStreamState(): ResponsesStreamState {
  return { usage: undefined, calls: new Map(), summaries: 0 };
}

/**
 * What one stream event adds: its text (`response.output_text.delta`); reasoning summary text and finished
 * reasoning items go to `reasoning`, function calls to `assembler` (keyed by output index), usage to `state`.
 * A `response.failed` or `error` event throws.
 */
export function readResponsesEvent(
  event: unknown,
  assembler: ToolCallAssembler,
  reasoning: ReasoningStream,
  state: ResponsesStreamState,
  where: string,
): string {
  const data = event as Record<string, any> | null;
  if (data === null || typeof data !== 'object' || typeof data.type !== 'string') {
    throw new LLMRequestError({ message: `${where} failed: malformed stream event: ${snippet(event)}` });
  }
  switch (data.type) {
    case 'response.output_text.delta':
      return typeof data.delta === 'string' ? data.delta : '';
    case 'response.reasoning_summary_part.added':
      if (state.summaries++ > 0) reasoning.add('\n\n');
      return '';
    case 'response.reasoning_summary_text.delta':
      if (typeof data.delta === 'string') reasoning.add(data.delta);
      return '';
    case 'response.output_item.added': {
      const item = data.item;
      if (item?.type === 'function_call') {
        const index = state.calls.size;
        state.calls.set(data.output_index, index);
        assembler.push([
          {
            index,
            id: item.call_id,
            function: {
              name: item.name,
              arguments: typeof item.arguments === 'string' ? item.arguments : '',
            },
          },
        ]);
      }
      return '';
    }
    case 'response.function_call_arguments.delta': {
      const index = state.calls.get(data.output_index);
      if (index !== undefined && typeof data.delta === 'string') {
        assembler.push([{ index, function: { arguments: data.delta } }]);
      }
      return '';
    }
    case 'response.output_item.done':
      if (data.item?.type === 'reasoning') reasoning.addPart(readReasoningItem(data.item).part);
      return '';
    case 'response.completed':
    case 'response.incomplete':
      state.usage = usageFromAPI(data.response?.usage);
      return '';
    case 'response.failed':
      throw responseError(data.response?.error, where);
    case 'error':
      throw responseError(data, where);
    default:
      return '';
  }
}
