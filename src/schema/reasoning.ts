/**
 * What a reasoning model thought before it answered. The text (`reasoning`: DeepSeek's `reasoning_content`,
 * Claude's thinking, OpenAI's reasoning summaries) is for people and logs; the {@link ReasoningPart}s are what a
 * provider asks to get back, unchanged, in the next request of a tool loop (Claude's thinking blocks with their
 * signatures, OpenAI's encrypted reasoning items). Each client sends back only the parts of its own provider and
 * drops the rest, so a history that passed through another model stays valid.
 */

/** A Claude `thinking` block: its text and the signature Anthropic checks when it comes back. */
export interface ClaudeThinkingPart {
  type: 'anthropic.thinking';
  thinking: string;
  signature: string;
}

/** A Claude `redacted_thinking` block: encrypted thinking, sent back as it came. */
export interface ClaudeRedactedThinkingPart {
  type: 'anthropic.redacted_thinking';
  data: string;
}

/**
 * An OpenAI Responses API `reasoning` item: its id, its summary texts and, when asked for
 * (`include: ['reasoning.encrypted_content']`, as `store: false` needs), its encrypted content.
 */
export interface OpenAIReasoningItemPart {
  type: 'openai.reasoning';
  id: string;
  summary: string[];
  encryptedContent?: string | undefined;
}

/**
 * A reasoning part of an AI SDK model's reply: its text and the provider's metadata (a signature, an item id,
 * encrypted content), given back to the same provider as the part's `providerOptions`.
 */
export interface AISDKReasoningPart {
  type: 'ai-sdk.reasoning';
  /** The AI SDK provider id (`model.provider`, e.g. `anthropic.messages`) that produced it. */
  provider: string;
  text: string;
  providerMetadata?: Record<string, Record<string, unknown>> | undefined;
}

/** A provider's opaque reasoning, kept with the reply and sent back as that provider requires. */
export type ReasoningPart =
  | ClaudeThinkingPart
  | ClaudeRedactedThinkingPart
  | OpenAIReasoningItemPart
  | AISDKReasoningPart;

/** The `reasoning` generation parameter: how hard a reasoning model thinks before it answers. */
export interface ReasoningOptions {
  /**
   * OpenAI's `reasoning_effort` (chat) / `reasoning.effort` (Responses), the AI SDK's `reasoning`; for Claude a
   * thinking budget of 2,048, 8,192 or 24,576 tokens when `budgetTokens` is not given.
   */
  effort?: 'low' | 'medium' | 'high' | undefined;
  /** Claude's `thinking.budget_tokens` (at least 1,024); for OpenAI models it sets nothing. */
  budgetTokens?: number | undefined;
}

/** The reasoning fields of an agent's reply (`extraInfo`), in lagent-ts's shape. */
export interface ReasoningInfo {
  reasoning?: string | undefined;
  reasoningParts?: ReasoningPart[] | undefined;
}

/**
 * The reasoning a reply message keeps in its `extraInfo` (`reasoning`, `reasoningParts`), or undefined when it
 * has none. Cheap on messages without: one type check.
 */
export function reasoningOf(extraInfo: unknown): ReasoningInfo | undefined {
  if (extraInfo === null || typeof extraInfo !== 'object') return undefined;
  const info = extraInfo as ReasoningInfo;
  const reasoning = info.reasoning;
  const parts = info.reasoningParts;
  const hasText = typeof reasoning === 'string' && reasoning !== '';
  const hasParts = Array.isArray(parts) && parts.length > 0;
  if (!hasText && !hasParts) return undefined;
  const result: ReasoningInfo = {};
  if (hasText) result.reasoning = reasoning;
  if (hasParts) result.reasoningParts = parts;
  return result;
}
