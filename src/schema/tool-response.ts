import { isPlainObject } from '../utils/is';
import { pythonJSON, toText } from '../utils/text';
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
    thought: toText(value.thought ?? ''),
    action: value.action ?? null,
    status: typeof value.status === 'number' ? (value.status as ToolStatusCode) : ToolStatusCode.NO_TOOL,
  };
}

/**
 * A call's action as prompt text: strings as they are, anything else as Python's
 * `json.dumps(action, ensure_ascii=False)` writes it (`{"name": "search", "parameters": {"q": "天气"}}`),
 * as Lagent renders tool calls. Never throws.
 */
export function actionText(action: unknown): string {
  return typeof action === 'string' ? action : pythonJSON(action);
}
