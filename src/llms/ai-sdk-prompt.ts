import type { ChatMessage, ToolCall } from '../schema/chat-message';
import { type ContentPart, partNote } from '../schema/content-parts';
import type {
  AISDKCallOptions,
  AISDKFilePart,
  AISDKFunctionTool,
  AISDKMessage,
  AISDKReasoningPromptPart,
  AISDKTextPart,
  AISDKToolCallPart,
  AISDKToolResultPart,
} from './ai-sdk-types';
import type { LoadedParts } from './content-inputs';
import { parseToolArguments, type RequestTools, toAPIToolName } from './tool-calls';
import type { ToolChoice } from './types';

/** A call's arguments as an AI SDK tool-call input: an object (text that is not one becomes `{}`). */
function inputOf(call: ToolCall): Record<string, unknown> {
  const value = typeof call.arguments === 'string' ? parseToolArguments(call.arguments) : call.arguments;
  return typeof value === 'string' ? {} : value;
}

/** What the prompt needs besides the messages: the model's provider and specification, and loaded parts. */
export interface AISDKPromptContext {
  /** `model.provider`: reasoning parts go back only to the provider that produced them. */
  provider: string;
  /** `model.specificationVersion`: how a file part carries its data. */
  version: string;
  parts?: LoadedParts;
}

/**
 * Lagent's OpenAI-shaped dialog as an AI SDK prompt: the leading `system` messages stay system messages (later
 * ones become user text where they stand, since several providers refuse a system message mid-dialog), an
 * assistant turn's `toolCalls` become `tool-call` parts (toolkit APIs named `Name__api`), its reasoning from
 * the same provider `reasoning` parts (with the provider's metadata: signatures, item ids), consecutive tool
 * results (`toolCallId`) one `tool` message of `tool-result` parts (`error-text` when the call failed), a user
 * message's image and file parts `file` parts, and every other role (`user`, `environment`, ...) user text.
 * Empty assistant turns are dropped.
 */
export function toAISDKPrompt(
  messages: readonly ChatMessage[],
  context: AISDKPromptContext = { provider: '', version: 'v4' },
): AISDKMessage[] {
  const prompt: AISDKMessage[] = [];
  /** Tool call id -> the name it was sent under, for the results (the AI SDK wants both). */
  const callNames = new Map<string, string>();
  let leading = true;
  for (const message of messages) {
    const text = message.content ?? '';
    if (message.toolCallId !== undefined) {
      const part: AISDKToolResultPart = {
        type: 'tool-result',
        toolCallId: message.toolCallId,
        toolName: callNames.get(message.toolCallId) ?? toAPIToolName(message.name ?? ''),
        output: { type: message.isError === true ? 'error-text' : 'text', value: text },
      };
      const last = prompt.at(-1);
      if (last?.role === 'tool') last.content.push(part);
      else prompt.push({ role: 'tool', content: [part] });
      leading = false;
      continue;
    }
    if (message.role === 'system' && leading) {
      prompt.push({ role: 'system', content: text });
      continue;
    }
    leading = false;
    if (message.role === 'assistant') {
      const content: (AISDKTextPart | AISDKToolCallPart | AISDKReasoningPromptPart)[] = [];
      for (const part of message.reasoningParts ?? []) {
        if (part.type !== 'ai-sdk.reasoning' || part.provider !== context.provider) continue;
        const reasoning: AISDKReasoningPromptPart = { type: 'reasoning', text: part.text };
        if (part.providerMetadata !== undefined) reasoning.providerOptions = part.providerMetadata;
        content.push(reasoning);
      }
      if (text.length > 0) content.push({ type: 'text', text });
      for (const call of message.toolCalls ?? []) {
        const toolName = toAPIToolName(call.name);
        callNames.set(call.id, toolName);
        content.push({ type: 'tool-call', toolCallId: call.id, toolName, input: inputOf(call) });
      }
      if (content.length > 0) prompt.push({ role: 'assistant', content });
      continue;
    }
    if (message.parts !== undefined && context.parts !== undefined) {
      prompt.push({ role: 'user', content: userParts(message.parts, context.parts, context.version) });
    } else prompt.push({ role: 'user', content: [{ type: 'text', text }] });
  }
  return prompt;
}

/** A user message's parts as AI SDK text and file parts (images are files with an `image/*` type). */
function userParts(
  parts: readonly ContentPart[],
  loaded: NonNullable<LoadedParts>,
  version: string,
): (AISDKTextPart | AISDKFilePart)[] {
  const content: (AISDKTextPart | AISDKFilePart)[] = [];
  for (const part of parts) {
    if (part.type === 'text') {
      content.push({ type: 'text', text: part.text });
      continue;
    }
    const source = loaded.get(part);
    if (source === undefined) {
      content.push({ type: 'text', text: partNote(part) });
      continue;
    }
    const mediaType = source.mediaType ?? (part.type === 'image' ? 'image/*' : part.mediaType);
    // v4 tags the data; v2 and v3 take the base64 text or the URL as it is.
    const data =
      source.kind === 'url'
        ? version === 'v4'
          ? { type: 'url', url: new URL(source.url) }
          : new URL(source.url)
        : version === 'v4'
          ? { type: 'data', data: source.data }
          : source.data;
    const file: AISDKFilePart = { type: 'file', mediaType, data };
    if (part.type === 'file' && part.filename !== undefined) file.filename = part.filename;
    content.push(file);
  }
  return content;
}

/** The request's tools as AI SDK function tools (names as sent: `Name__api`). */
export function toAISDKTools(tools: RequestTools): AISDKFunctionTool[] {
  return tools.tools.map(({ function: tool }) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: tool.parameters,
  }));
}

/** Lagent's tool choice as the AI SDK's. */
export function toAISDKToolChoice(choice: ToolChoice): NonNullable<AISDKCallOptions['toolChoice']> {
  return typeof choice === 'string'
    ? { type: choice }
    : { type: 'tool', toolName: toAPIToolName(choice.name) };
}
