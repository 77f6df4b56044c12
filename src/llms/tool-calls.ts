import type { ChatMessage, OpenAITool, ToolCall } from '../schema/chat-message';
import { FROZEN_OPENAI_TOOLS, type ListsFrozenTools } from '../schema/chat-message';
import { type ContentPart, partNote } from '../schema/content-parts';
import { ConfigurationError, LLMRequestError, ModelOutputError } from '../schema/errors';
import { type LoadedParts, partURL } from './content-inputs';
import { type LoadedImage, type LoadedImages, skippedNote } from './image-inputs';
import type { ToolChoice, ToolSpec } from './types';

/** The tools of one request: as sent (OpenAI names) and the way back to Lagent's names. */
export interface RequestTools {
  tools: OpenAITool[];
  /** OpenAI name -> Lagent name, for the names that differ (`Name__api` -> `Name.api`). */
  names: ReadonlyMap<string, string>;
}

/** An OpenAI function-tool JSON entry, as the wire carries it. */
interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

function snippet(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

function listsFrozenTools(spec: unknown): spec is ListsFrozenTools {
  return typeof (spec as Partial<ListsFrozenTools> | null)?.[FROZEN_OPENAI_TOOLS] === 'function';
}

function listsTools(
  spec: unknown,
): spec is { toOpenAITools(options?: { separator?: string }): OpenAITool[] } {
  return typeof (spec as { toOpenAITools?: unknown } | null)?.toOpenAITools === 'function';
}

/** `Name.api` as OpenAI accepts it: `Name__api` (OpenAI rejects dots in function names). */
export function toAPIToolName(name: string): string {
  return name.includes('.') ? name.replaceAll('.', '__') : name;
}

/**
 * The tools as plain OpenAI JSON with toolkit APIs named `Name.api`: what crosses the sync bridge (actions do
 * not survive a structured clone) and what {@link prepareTools} starts from.
 */
export function toolsAsJSON(tools: readonly ToolSpec[]): OpenAITool[] {
  const result: OpenAITool[] = [];
  for (const spec of tools) {
    // Ask for Lagent's names: the map back from OpenAI's names is built from them.
    const lister: unknown = spec;
    if (listsFrozenTools(lister)) result.push(...lister[FROZEN_OPENAI_TOOLS]('.'));
    else if (listsTools(lister)) result.push(...lister.toOpenAITools({ separator: '.' }));
    else result.push(spec as OpenAITool);
  }
  return result;
}

/**
 * The `tools` of a request and the map back to Lagent's names; undefined when no tool is offered. Throws a
 * `ConfigurationError` for an entry that is neither an action nor OpenAI function-tool JSON, or for two tools
 * with one name.
 */
export function prepareTools(
  specs: readonly ToolSpec[] | undefined,
  owner: string,
): RequestTools | undefined {
  if (specs === undefined || specs.length === 0) return undefined;
  if (!Array.isArray(specs)) {
    throw new ConfigurationError({ message: `${owner}: tools must be a list, got ${snippet(specs)}` });
  }
  // An agent offers the same tools on every call: reuse the request tools while every entry lists the
  // same (frozen) tools as last time.
  const cached = preparedTools.get(specs);
  if (cached !== undefined && sameParts(specs, cached.parts)) return cached.result;
  const result = buildRequestTools(specs, owner);
  preparedTools.set(specs, { parts: specs.map(partOf), result });
  return result;
}

/** What one entry of `tools` lists now: an action's or executor's frozen tools, else the entry itself. */
function partOf(spec: ToolSpec): unknown {
  return listsFrozenTools(spec) ? spec[FROZEN_OPENAI_TOOLS]('.') : spec;
}

function sameParts(specs: readonly ToolSpec[], parts: readonly unknown[]): boolean {
  if (specs.length !== parts.length) return false;
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i]!;
    // Entries that list tools without a frozen list (or plain JSON, which may be edited) are not reused.
    if (!listsFrozenTools(spec) || spec[FROZEN_OPENAI_TOOLS]('.') !== parts[i]) return false;
  }
  return true;
}

const preparedTools = new WeakMap<readonly ToolSpec[], { parts: readonly unknown[]; result: RequestTools }>();

function buildRequestTools(specs: readonly ToolSpec[], owner: string): RequestTools {
  const tools: OpenAITool[] = [];
  const names = new Map<string, string>();
  const seen = new Set<string>();
  for (const tool of toolsAsJSON(specs)) {
    const name = (tool as Partial<OpenAITool> | null)?.function?.name;
    if (tool?.type !== 'function' || typeof name !== 'string' || name.length === 0) {
      throw new ConfigurationError({
        message: `${owner}: a tool is neither an action nor OpenAI function-tool JSON ({ type: 'function', function: { name, description, parameters } }): ${snippet(tool)}`,
      });
    }
    const apiName = toAPIToolName(name);
    if (seen.has(apiName)) {
      throw new ConfigurationError({ message: `${owner}: two tools are named ${apiName}` });
    }
    seen.add(apiName);
    if (apiName === name) tools.push(tool);
    else {
      names.set(apiName, name);
      tools.push({ ...tool, function: { ...tool.function, name: apiName } });
    }
  }
  return { tools, names };
}

/** Adds `tools`, `tool_choice` and `parallel_tool_calls` to a chat request body (only when tools are offered). */
export function addToolFields(
  body: Record<string, unknown>,
  tools: RequestTools | undefined,
  toolChoice: ToolChoice | undefined,
  parallelToolCalls: boolean | undefined,
): void {
  if (tools === undefined) return;
  body.tools = tools.tools;
  if (toolChoice !== undefined) {
    body.tool_choice =
      typeof toolChoice === 'string'
        ? toolChoice
        : { type: 'function', function: { name: toAPIToolName(toolChoice.name) } };
  }
  if (parallelToolCalls !== undefined) body.parallel_tool_calls = parallelToolCalls;
}

/**
 * Whether any message needs {@link toAPIMessages}: a tool turn, content parts, or reasoning (which never goes on
 * the wire as it is kept).
 */
export function needsWireMessages(messages: readonly ChatMessage[]): boolean {
  for (const message of messages) {
    if (
      message.toolCallId !== undefined ||
      (message.toolCalls !== undefined && message.toolCalls.length > 0) ||
      message.parts !== undefined ||
      message.reasoning !== undefined ||
      message.reasoningParts !== undefined
    ) {
      return true;
    }
  }
  return false;
}

function toWireToolCall(call: ToolCall): WireToolCall {
  return {
    id: call.id,
    type: 'function',
    function: {
      name: toAPIToolName(call.name),
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  };
}

/** How {@link toAPIMessages} renders what a message carries besides text and tool turns. */
export interface WireOptions {
  /** The loaded images of tool results. */
  images?: LoadedImages;
  /** The loaded image and file parts of user messages (without them, parts go as their text). */
  parts?: LoadedParts;
  /**
   * Send an assistant turn's `reasoning` back as `reasoning_content` when it is part of the current tool loop
   * (after the last user message), as DeepSeek's thinking mode with tools requires. Reasoning of earlier turns
   * is never sent.
   */
  reasoningInToolLoops?: boolean;
}

/**
 * Chat messages in OpenAI's wire shape: an assistant turn with `toolCalls` gets `tool_calls` (names as OpenAI
 * accepts them, arguments as JSON text), a turn with `toolCallId` gets `tool_call_id` (its content a string,
 * no `name`, which OpenAI's tool messages do not take); a message with loaded content parts gets a content list
 * (`text`, `image_url`, `file` parts); reasoning is left out (see {@link WireOptions.reasoningInToolLoops}).
 * Messages without any of these are returned as they are. With loaded `images`, the images of a run of tool
 * messages follow it as one `user` message of `image_url` parts (OpenAI's tool messages carry only text).
 */
export function toAPIMessages(
  messages: readonly ChatMessage[],
  options: WireOptions = {},
): Record<string, unknown>[] {
  const { images, parts: loaded, reasoningInToolLoops = false } = options;
  const lastUser = reasoningInToolLoops ? lastUserIndex(messages) : messages.length;
  const wires: Record<string, unknown>[] = [];
  let parts: Record<string, unknown>[] = [];
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    if (parts.length > 0 && message.toolCallId === undefined) {
      wires.push(imagesMessage(parts));
      parts = [];
    }
    const hasCalls = message.toolCalls !== undefined && message.toolCalls.length > 0;
    const sendReasoning =
      index > lastUser && message.role === 'assistant' && typeof message.reasoning === 'string';
    if (!hasCalls && message.toolCallId === undefined) {
      if (
        message.parts === undefined &&
        message.reasoning === undefined &&
        message.reasoningParts === undefined
      ) {
        wires.push(message as unknown as Record<string, unknown>);
        continue;
      }
      const wire: Record<string, unknown> = { role: message.role, content: message.content };
      if (message.name !== undefined) wire.name = message.name;
      if (message.parts !== undefined && loaded !== undefined)
        wire.content = wireParts(message.parts, loaded);
      if (sendReasoning) wire.reasoning_content = message.reasoning;
      wires.push(wire);
      continue;
    }
    const wire: Record<string, unknown> = { role: message.role, content: message.content };
    // OpenAI's tool messages have no `name`: the id ties the result to its call.
    if (message.name !== undefined && message.toolCallId === undefined) wire.name = message.name;
    if (hasCalls) wire.tool_calls = message.toolCalls?.map(toWireToolCall);
    if (sendReasoning) wire.reasoning_content = message.reasoning;
    if (message.toolCallId !== undefined) {
      wire.tool_call_id = message.toolCallId;
      wire.content = message.content ?? '';
      if (images !== undefined) addImageParts(parts, message, images);
    }
    wires.push(wire);
  }
  if (parts.length > 0) wires.push(imagesMessage(parts));
  return wires;
}

/** The index of the last `user` message that is not a tool result (-1 when there is none). */
function lastUserIndex(messages: readonly ChatMessage[]): number {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    if (message.role === 'user' && message.toolCallId === undefined) return index;
  }
  return -1;
}

/** A message's content parts as OpenAI chat content parts. */
function wireParts(
  parts: readonly ContentPart[],
  loaded: NonNullable<LoadedParts>,
): Record<string, unknown>[] {
  const wire: Record<string, unknown>[] = [];
  for (const part of parts) {
    if (part.type === 'text') {
      wire.push({ type: 'text', text: part.text });
      continue;
    }
    const source = loaded.get(part);
    if (source === undefined) continue;
    if (part.type === 'image') {
      wire.push({ type: 'image_url', image_url: { url: partURL(source) } });
    } else if (source.kind === 'url') {
      // Chat completions take a file's bytes (or an uploaded file's id), not a URL.
      wire.push({ type: 'text', text: `${partNote(part)}: ${source.url}` });
    } else {
      const file: Record<string, unknown> = { file_data: partURL(source) };
      file.filename = part.filename ?? defaultFilename(source.mediaType);
      wire.push({ type: 'file', file });
    }
  }
  return wire;
}

/** A name for a file part without one (OpenAI asks for a filename with file data). */
export function defaultFilename(mediaType: string): string {
  const subtype = mediaType.split('/')[1]?.split(/[+;]/)[0] ?? 'bin';
  return `file.${subtype === 'plain' ? 'txt' : subtype}`;
}

/** The `image_url` parts of one tool result's images, and a text part for each one that could not be sent. */
function addImageParts(
  parts: Record<string, unknown>[],
  message: ChatMessage,
  images: ReadonlyMap<string, LoadedImage>,
): void {
  for (const source of message.images ?? []) {
    const image = images.get(source);
    if (image === undefined) continue;
    if (parts.length === 0) parts.push({ type: 'text', text: 'Images returned by the tool calls above:' });
    parts.push(
      'skipped' in image
        ? { type: 'text', text: skippedNote(source, image.skipped) }
        : { type: 'image_url', image_url: { url: `data:${image.mediaType};base64,${image.data}` } },
    );
  }
}

function imagesMessage(parts: Record<string, unknown>[]): Record<string, unknown> {
  return { role: 'user', content: parts };
}

/**
 * A call's arguments: the JSON object, `{}` for empty text, else the raw text (not JSON, or JSON that is not
 * an object), which the executor answers with an error the model can read.
 */
export function parseToolArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // Kept as text below.
  }
  return text;
}

function lagentName(name: string, tools: RequestTools | undefined): string {
  return tools?.names.get(name) ?? name;
}

/**
 * The tool calls of a non-streaming chat reply (`message.tool_calls`), typed, names mapped back to Lagent's.
 * Throws `LLMRequestError` when the list is malformed.
 */
export function readToolCalls(raw: unknown, tools: RequestTools | undefined, where: string): ToolCall[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    throw new LLMRequestError({ message: `${where} failed: malformed tool_calls: ${snippet(raw)}` });
  }
  const calls: ToolCall[] = [];
  for (const [position, entry] of raw.entries()) {
    const call = entry as {
      id?: unknown;
      type?: unknown;
      function?: { name?: unknown; arguments?: unknown };
    };
    // Other kinds of tool (OpenAI's custom tools) are never offered by this client.
    if (call?.type !== undefined && call.type !== 'function') continue;
    const name = call?.function?.name;
    const text = call?.function?.arguments ?? '';
    if (typeof name !== 'string' || (typeof text !== 'string' && typeof text !== 'object')) {
      throw new LLMRequestError({ message: `${where} failed: malformed tool call: ${snippet(entry)}` });
    }
    calls.push({
      id: typeof call.id === 'string' && call.id.length > 0 ? call.id : `call_${position}`,
      name: lagentName(name, tools),
      // Some servers send the arguments as an object already.
      arguments:
        typeof text === 'string'
          ? parseToolArguments(text)
          : text !== null && !Array.isArray(text)
            ? (text as Record<string, unknown>)
            : JSON.stringify(text),
    });
  }
  return calls;
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Assembles streamed tool-call deltas: each delta names its call by `index`; the first carries `id` and the
 * name, later ones pieces of the arguments text, split anywhere, several calls possibly interleaved.
 */
export class ToolCallAssembler {
  readonly #calls = new Map<number, PartialCall>();
  readonly #tools: RequestTools | undefined;

  constructor(tools: RequestTools | undefined) {
    this.#tools = tools;
  }

  /** Whether any tool-call delta arrived. */
  get isEmpty(): boolean {
    return this.#calls.size === 0;
  }

  /** Adds the `delta.tool_calls` of one stream event (anything else is ignored). */
  push(deltas: unknown): void {
    if (!Array.isArray(deltas)) return;
    for (const [position, entry] of deltas.entries()) {
      const delta = entry as {
        index?: unknown;
        id?: unknown;
        function?: { name?: unknown; arguments?: unknown };
      } | null;
      if (delta === null || typeof delta !== 'object') continue;
      const index = typeof delta.index === 'number' ? delta.index : position;
      let call = this.#calls.get(index);
      if (call === undefined) {
        call = { id: '', name: '', arguments: '' };
        this.#calls.set(index, call);
      }
      if (typeof delta.id === 'string' && delta.id.length > 0) {
        // Another id at the same index is another call (a stream a proxy restarted): it replaces the first.
        if (call.id !== '' && call.id !== delta.id) {
          call = { id: '', name: '', arguments: '' };
          this.#calls.set(index, call);
        }
        call.id = delta.id;
      }
      const name = delta.function?.name;
      // Servers send the name whole in the first delta; some repeat it, a few split it.
      if (typeof name === 'string' && name !== call.name) call.name += name;
      const piece = delta.function?.arguments;
      if (typeof piece === 'string') call.arguments += piece;
    }
  }

  /** The complete calls, in index order, arguments parsed. */
  finish(): ToolCall[] {
    return [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        id: call.id.length > 0 ? call.id : `call_${index}`,
        name: lagentName(call.name, this.#tools),
        arguments: parseToolArguments(call.arguments),
      }));
  }
}

/** The error `chat()` throws when the model answered with tool calls: they would be lost in a string. */
export function toolCallsError(owner: string, calls: readonly ToolCall[]): ModelOutputError {
  const names = calls.map((call) => call.name).join(', ');
  return new ModelOutputError({
    message: `${owner}: the model answered with ${calls.length} tool call${calls.length === 1 ? '' : 's'} (${names}), which chat() cannot return as text; use generate() or a function-calling agent (FunctionCallingAgent) to receive tool calls`,
  });
}
