import type { ContentPart } from './content-parts';
import type { ReasoningPart } from './reasoning';

/**
 * One tool call a model asked for (OpenAI's function calling). `arguments` is the parsed JSON object, or the
 * raw text when the model sent something that is not a JSON object; the executor answers the latter with an
 * error result the model can read.
 */
export interface ToolCall {
  /** The model's id for the call; its result is sent back with the same `toolCallId`. */
  id: string;
  /** The tool's name (a toolkit's API as `Name__api`, or `Name.api` in Lagent's text protocol). */
  name: string;
  arguments: Record<string, unknown> | string;
  /**
   * Set on a call as it ran when a person edited its arguments before approving it (`arguments` are the
   * edited ones): the executor's answer carries it, and the model's history then shows the call with them.
   */
  edited?: true | undefined;
  /**
   * Set on a call of one of the call's `clientTools` (a tool the caller runs itself) as the model's reply
   * enters memory: the call waits for the caller's result (an interrupt of kind `'client-tool'`).
   */
  client?: true | undefined;
}

/**
 * One chat turn in OpenAI's shape. `name` carries e.g. the tool name on environment messages. An
 * `assistant` turn that calls tools has `toolCalls` (and `content` may be `null`); each result goes back as
 * a `tool` turn with the call's `toolCallId`.
 */
export interface ChatMessage {
  role: string;
  content: string | null;
  name?: string | undefined;
  toolCalls?: ToolCall[] | undefined;
  toolCallId?: string | undefined;
  /** On a tool result (`toolCallId`): the call failed (Anthropic's `tool_result` gets `is_error: true`). */
  isError?: boolean | undefined;
  /**
   * On a tool result: the images the tool returned, each a file path or a `data:` URL. Clients of models that
   * take images send them as image parts; `content` still names them as text.
   */
  images?: readonly string[] | undefined;
  /**
   * The content as parts, when it holds images or files (see `ContentPart`): clients of models that see them send
   * the parts; every other reader uses `content`, which is then the parts' text with a note for each image and
   * file.
   */
  parts?: readonly ContentPart[] | undefined;
  /** On an assistant turn: what the model reasoned before answering (never sent back as text). */
  reasoning?: string | undefined;
  /**
   * On an assistant turn: the provider's opaque reasoning (Claude thinking blocks with their signatures, OpenAI
   * reasoning items), sent back by the client of that provider as it requires and dropped by the others.
   */
  reasoningParts?: readonly ReasoningPart[] | undefined;
}

/** One tool in OpenAI's function-tool format (what `action.toOpenAITools()` gives and `llm.chat(..., { tools })` takes). */
export interface OpenAITool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/**
 * Where actions and executors give their OpenAI tools without a defensive copy (the objects are frozen):
 * what model clients read on every call. `toOpenAITools()` stays the public, copying way.
 */
export const FROZEN_OPENAI_TOOLS: unique symbol = Symbol.for('lagent-ts.frozenOpenAITools');

/** Something that lists its tools in OpenAI's format, frozen and uncopied (actions, executors). */
export interface ListsFrozenTools {
  [FROZEN_OPENAI_TOOLS](separator: string): readonly OpenAITool[];
}
