import type { ActionReturn } from './action-return';
import type { AgentMessage } from './agent-message';
import type { ToolCall } from './chat-message';

/**
 * The `formatted` of a model's tool-call reply (native function calling): the calls, in the model's order.
 * An executor's answer carries the same shape, naming the calls its results answer.
 */
export interface ToolCallsFormatted {
  toolCalls: ToolCall[];
}

/**
 * An executor's answer to a tool-call message: `content[i]` is the result of `formatted.toolCalls[i]` (same
 * order, same ids).
 */
export type ToolResultsMessage = ToolCallsMessage<ActionReturn[]>;

/** A message whose `formatted` holds tool calls (what {@link hasToolCalls} narrows to). */
export type ToolCallsMessage<C = unknown> = AgentMessage<C, ToolCallsFormatted> & {
  formatted: ToolCallsFormatted;
};

function isToolCall(value: unknown): value is ToolCall {
  if (value === null || typeof value !== 'object') return false;
  const { id, name } = value as { id?: unknown; name?: unknown };
  return typeof id === 'string' && typeof name === 'string';
}

/**
 * The tool calls in a message's `formatted` (`{ toolCalls: [...] }`), or `null` when it holds none: the list
 * must be non-empty and every call must have a string `id` and `name` (its `arguments` are checked by the
 * executor, which answers bad ones with an error result). Never throws.
 */
export function toolCallsOf(formatted: unknown): ToolCall[] | null {
  try {
    if (formatted === null || typeof formatted !== 'object') return null;
    const calls = (formatted as { toolCalls?: unknown }).toolCalls;
    if (!Array.isArray(calls) || calls.length === 0) return null;
    for (const call of calls) if (!isToolCall(call)) return null;
    return calls as ToolCall[];
  } catch {
    return null; // a Proxy whose traps throw holds no calls
  }
}

/**
 * Whether a message carries native tool calls: its `formatted` is `{ toolCalls }` with at least one call, each
 * with a string `id` and `name`. A model's tool-call reply has them; so has an executor's answer to one (see
 * {@link ToolResultsMessage}), which names the calls it answers.
 *
 * @example
 * const reply = new AgentMessage({ sender: 'Agent', content: '', formatted: { toolCalls: [{ id: 'call_1', name: 'search', arguments: { query: 'lagent' } }] } });
 * if (hasToolCalls(reply)) reply.formatted.toolCalls[0]!.name; // 'search'
 */
export function hasToolCalls<C>(message: AgentMessage<C> | null | undefined): message is ToolCallsMessage<C> {
  return message !== null && typeof message === 'object' && toolCallsOf(message.formatted) !== null;
}
