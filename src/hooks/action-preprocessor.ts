import { ActionReturn } from '../schema/action-return';
import { AgentMessage } from '../schema/agent-message';
import type { SessionId } from '../schema/session';
import { ToolStatusCode } from '../schema/status';
import { actionText, asToolResponse } from '../schema/tool-response';
import { isPlainObject } from '../utils/is';
import { Hook, type HookExecutor } from './hook';

interface Call {
  name: string;
  parameters: unknown;
}

function asCall(value: unknown): Call | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const { name, parameters } = value as { name?: unknown; parameters?: unknown };
  return typeof name === 'string' ? { name, parameters: parameters ?? {} } : null;
}

function withContent(message: AgentMessage, content: unknown): AgentMessage {
  return new AgentMessage({
    content,
    sender: message.sender,
    formatted: message.formatted,
    extraInfo: message.extraInfo,
    type: message.type,
    receiver: message.receiver,
    streamState: message.streamState,
  });
}

/** An `ActionReturn` as the text the model sees; the same as {@link ActionReturn.toText}. */
export function actionReturnText(value: ActionReturn): string {
  return value.toText();
}

/**
 * Bridges an agent's parsed output and an executor. Before the call it turns `formatted` — a
 * `FunctionCall`-like `{ name, parameters }`, a step whose `action` is one (Lagent's ReAct shape,
 * `{ thought_process, action: { name, parameters } }`), or a tool parser's result whose `action` is one —
 * into the content the executor reads; a result that holds no usable call (no tool, a `PARSING_ERROR`, a malformed
 * action) becomes a call to the executor's `NoAction` with a sentence for the model, never an exception.
 * After the call it turns the `ActionReturn` into text (the result, or the error). The message given is
 * never modified; a new one is returned.
 *
 * @example
 * const executor = new ActionExecutor({ actions: [search], hooks: [new ActionPreprocessor()] });
 */
export class ActionPreprocessor extends Hook {
  override beforeAction(
    executor: HookExecutor,
    message: AgentMessage,
    _sessionId: SessionId,
  ): AgentMessage | undefined {
    const call = this.toCall(executor, message);
    return call ? withContent(message, call) : undefined;
  }

  override afterAction(_executor: HookExecutor, message: AgentMessage, _sessionId: SessionId): AgentMessage {
    const content = message.content;
    return withContent(message, content instanceof ActionReturn ? content.toText() : content);
  }

  /** The call to make for a message, or `null` to leave the message as it is. */
  protected toCall(executor: HookExecutor, message: AgentMessage): Call | null {
    const formatted = message.formatted;
    const direct = isPlainObject(formatted) && !('action' in formatted) ? asCall(formatted) : null;
    if (direct) return direct;
    const response = asToolResponse(formatted);
    // A step with its call in `action` (Lagent's ReAct format), rather than a tool parser's result.
    if (!response && isPlainObject(formatted) && isPlainObject(formatted.action)) {
      const step = asCall(formatted.action);
      if (step) return step;
    }
    if (!response) {
      if (asCall(message.content)) return null;
      return this.noAction(executor, 'No tool call was found in the message. Please follow the format.');
    }
    if (response.status === ToolStatusCode.PARSING_ERROR) {
      return this.noAction(
        executor,
        `The ${response.toolType ?? 'tool'} call could not be parsed: ${actionText(response.action)}. Please follow the format.`,
      );
    }
    if (response.action === null || response.toolType === null) return this.noAction(executor, undefined);
    const call = asCall(response.action);
    if (call) return call;
    return this.noAction(
      executor,
      `The ${response.toolType} call must be a JSON object {"name": ..., "parameters": ...}, got ${JSON.stringify(actionText(response.action))}. Please follow the format.`,
    );
  }

  /** A call to the executor's `NoAction`, with `errMsg` (or its default message). */
  protected noAction(executor: HookExecutor, errMsg: string | undefined): Call {
    return { name: executor.noAction.name, parameters: errMsg === undefined ? {} : { errMsg } };
  }
}

/** Options of {@link InternLMActionProcessor}. */
export interface InternLMActionProcessorOptions {
  /** The argument that receives code when the action is plain text. @default 'command' */
  codeParameter?: string | undefined;
}

/**
 * {@link ActionPreprocessor} for `ToolParser` / `MixedToolParser` output: when the action is plain text
 * (code for an interpreter), it becomes `{ [codeParameter]: code }` for the executor's first tool.
 * Interpreters get the session from `context.sessionId`, so no `session_id` argument is added.
 *
 * @example
 * const executor = new ActionExecutor({ actions: [interpreter], hooks: [new InternLMActionProcessor()] });
 */
export class InternLMActionProcessor extends ActionPreprocessor {
  /** The argument that receives code. */
  readonly codeParameter: string;

  constructor(options: InternLMActionProcessorOptions = {}) {
    super();
    this.codeParameter = options.codeParameter ?? 'command';
  }

  protected override toCall(executor: HookExecutor, message: AgentMessage): Call | null {
    const response = asToolResponse(message.formatted);
    if (response?.status === ToolStatusCode.VALID_TOOL && typeof response.action === 'string') {
      const name = executor.keys()[0] ?? response.toolType ?? 'interpreter';
      return { name, parameters: { [this.codeParameter]: response.action } };
    }
    return super.toCall(executor, message);
  }
}
