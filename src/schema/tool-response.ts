import { isPlainObject } from '../utils/is';
import { ToolStatusCode } from './status';

/**
 * What a tool parser makes of a model response (the agent message's `formatted`): the tool type when the
 * response calls a tool (else `null`), the text before the call, the call itself (validated when the
 * parser has a `validate`, else the raw text), and a {@link ToolStatusCode}.
 */
export interface ToolResponse<A = unknown> {
  toolType: string | null;
  thought: string;
  action: A | null;
  status: ToolStatusCode;
}

/**
 * Reads a {@link ToolResponse}, also in Lagent's snake_case form (`tool_type`) as found in saved Python
 * state; `null` when the value is not one.
 */
export function asToolResponse(value: unknown): ToolResponse | null {
  if (!isPlainObject(value) || !('thought' in value) || !('status' in value)) return null;
  const toolType = value.toolType !== undefined ? value.toolType : value.tool_type;
  return {
    toolType: typeof toolType === 'string' ? toolType : null,
    thought: typeof value.thought === 'string' ? value.thought : String(value.thought ?? ''),
    action: value.action ?? null,
    status: typeof value.status === 'number' ? (value.status as ToolStatusCode) : ToolStatusCode.NO_TOOL,
  };
}

/** A call's action as text: strings as they are, objects as JSON (non-ASCII kept as it is). */
export function actionText(action: unknown): string {
  if (typeof action === 'string') return action;
  if (typeof action !== 'object' || action === null) return String(action);
  try {
    return JSON.stringify(action) ?? String(action);
  } catch {
    return String(action);
  }
}
