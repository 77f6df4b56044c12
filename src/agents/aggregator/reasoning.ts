import type { ChatMessage } from '../../schema/chat-message';
import { reasoningOf } from '../../schema/reasoning';

/**
 * Puts the reasoning an agent's reply keeps in its `extraInfo` on its assistant chat message, where the model
 * clients find it (each sends back only what its provider needs, and never as text).
 */
export function withReasoning(chat: ChatMessage, extraInfo: unknown): void {
  const reasoning = reasoningOf(extraInfo);
  if (reasoning === undefined) return;
  if (reasoning.reasoning !== undefined) chat.reasoning = reasoning.reasoning;
  if (reasoning.reasoningParts !== undefined) chat.reasoningParts = reasoning.reasoningParts;
}
