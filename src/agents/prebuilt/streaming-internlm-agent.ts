import { ActionExecutor } from '../../actions/action-executor';
import { AsyncActionExecutor } from '../../actions/async-action-executor';
import type { ActionBase, BaseAction } from '../../actions/base-action';
import { driveStream, driveStreamAsync } from '../../core/stream-drivers';
import type { AsyncHook, SyncHook } from '../../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage } from '../../schema/chat-message';
import type { SessionId } from '../../schema/session';
import type { ToolResponse } from '../../schema/tool-response';
import type { AsyncForwardOptions, ForwardOptions } from '../agent-base';
import { AsyncStreamingAgent } from '../async-streaming-agent';
import { StreamingAgent } from '../streaming-agent';
import { type AgentForInternLMOptions, internLMLoop, internLMParts, toolSteps } from './internlm-agent';

/** A chunk or the reply of a streaming InternLM agent. */
type InternLMChunk = AgentMessage<unknown, ToolResponse | null>;

/**
 * {@link AgentForInternLM} that streams, with Lagent's stream states: the model's text as `STREAM_ING`
 * chunks, `PLUGIN_START` / `CODING` while it writes a plugin call / code, `PLUGIN_END` / `CODE_END` with the
 * finished call, `PLUGIN_RETURN` / `CODE_RETURN` with the tool's result, and then the answer once with `END`.
 * Leaving the loop early stops the model and takes the turn back.
 *
 * @example
 * for (const chunk of agent.call('What is 2 ** 10?')) {
 *   if (chunk.streamState === AgentStatusCode.CODE_RETURN) console.log('result:', chunk.content);
 * }
 */
export class StreamingAgentForInternLM extends StreamingAgent {
  /** Talks to the model; its memory holds the tool turns. */
  agent: StreamingAgent<ToolResponse>;
  /** Runs plugin calls (none without plugins). */
  pluginExecutor: ActionExecutor | undefined;
  /** Runs code (none without an interpreter). */
  interpreterExecutor: ActionExecutor | undefined;
  /** The most model turns per call. */
  maxTurn: number;
  /** Whether a model reply is the answer. */
  finishCondition: (message: AgentMessage) => boolean;

  constructor(options: AgentForInternLMOptions<BaseLLM, BaseAction, SyncHook>) {
    super({ name: options.name, description: options.description, hooks: options.hooks });
    const parts = internLMParts(
      this.name,
      options,
      (actions, hooks) => new ActionExecutor({ actions: actions as BaseAction[], hooks }),
    );
    this.agent = new StreamingAgent({ ...parts.inner, llm: options.llm });
    this.pluginExecutor = parts.executors.plugins;
    this.interpreterExecutor = parts.executors.interpreter;
    this.maxTurn = parts.maxTurn;
    this.finishCondition = parts.finishCondition;
  }

  /** The tool turns of a session as a few-shot dialog (see {@link toolSteps}). */
  getSteps(sessionId: SessionId = 0): ChatMessage[] {
    return toolSteps(this.agent, sessionId);
  }

  override forward(
    messages: AgentMessage[],
    options: ForwardOptions,
  ): Generator<InternLMChunk, InternLMChunk, undefined> {
    return driveStream(internLMLoop(this, messages, options, true), this.name, false);
  }
}

/** {@link StreamingAgentForInternLM} on an async model and tools; calls take a `signal`. */
export class AsyncStreamingAgentForInternLM extends AsyncStreamingAgent {
  /** Talks to the model; its memory holds the tool turns. */
  agent: AsyncStreamingAgent<ToolResponse>;
  /** Runs plugin calls (none without plugins). */
  pluginExecutor: AsyncActionExecutor | undefined;
  /** Runs code (none without an interpreter). */
  interpreterExecutor: AsyncActionExecutor | undefined;
  /** The most model turns per call. */
  maxTurn: number;
  /** Whether a model reply is the answer. */
  finishCondition: (message: AgentMessage) => boolean;

  constructor(options: AgentForInternLMOptions<AsyncBaseLLM, ActionBase, AsyncHook>) {
    super({ name: options.name, description: options.description, hooks: options.hooks });
    const parts = internLMParts(
      this.name,
      options,
      (actions, hooks) => new AsyncActionExecutor({ actions, hooks }),
    );
    this.agent = new AsyncStreamingAgent({ ...parts.inner, llm: options.llm });
    this.pluginExecutor = parts.executors.plugins;
    this.interpreterExecutor = parts.executors.interpreter;
    this.maxTurn = parts.maxTurn;
    this.finishCondition = parts.finishCondition;
  }

  /** The tool turns of a session as a few-shot dialog (see {@link toolSteps}). */
  getSteps(sessionId: SessionId = 0): ChatMessage[] {
    return toolSteps(this.agent, sessionId);
  }

  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions,
  ): AsyncGenerator<InternLMChunk, InternLMChunk, undefined> {
    return driveStreamAsync(internLMLoop(this, messages, options, true), this.name, false);
  }
}
