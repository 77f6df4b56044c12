import type { ChatMessage, ToolCall } from '../schema/chat-message';
import type {
  AISDKCallOptions,
  AISDKFunctionTool,
  AISDKMessage,
  AISDKTextPart,
  AISDKToolCallPart,
  AISDKToolResultPart,
} from './ai-sdk-types';
import { parseToolArguments, type RequestTools, toAPIToolName } from './tool-calls';
import type { ToolChoice } from './types';

/** A call's arguments as an AI SDK tool-call input: an object (text that is not one becomes `{}`). */
function inputOf(call: ToolCall): Record<string, unknown> {
  const value = typeof call.arguments === 'string' ? parseToolArguments(call.arguments) : call.arguments;
  return typeof value === 'string' ? {} : value;
}

/**
 * Lagent's OpenAI-shaped dialog as an AI SDK prompt: the leading `system` messages stay system messages (later
 * ones become user text where they stand, since several providers refuse a system message mid-dialog), an
 * assistant turn's `toolCalls` become `tool-call` parts (toolkit APIs named `Name__api`), consecutive tool
 * results (`toolCallId`) one `tool` message of `tool-result` parts (`error-text` when the call failed), and every
 * other role (`user`, `environment`, ...) user text. Empty assistant turns are dropped.
 */
export function toAISDKPrompt(messages: readonly ChatMessage[]): AISDKMessage[] {
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
      const content: (AISDKTextPart | AISDKToolCallPart)[] = [];
      if (text.length > 0) content.push({ type: 'text', text });
      for (const call of message.toolCalls ?? []) {
        const toolName = toAPIToolName(call.name);
        callNames.set(call.id, toolName);
        content.push({ type: 'tool-call', toolCallId: call.id, toolName, input: inputOf(call) });
      }
      if (content.length > 0) prompt.push({ role: 'assistant', content });
      continue;
    }
    prompt.push({ role: 'user', content: [{ type: 'text', text }] });
  }
  return prompt;
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
