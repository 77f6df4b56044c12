import type { ActionExecutor } from '../../actions/action-executor';
import type { AsyncActionExecutor } from '../../actions/async-action-executor';
import type { ActionBase, BaseAction } from '../../actions/base-action';
import { driveStream, driveStreamAsync } from '../../core/stream-drivers';
import type { AsyncHook, SyncHook } from '../../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { AgentMessage } from '../../schema/agent-message';
import type { ToolResponse } from '../../schema/tool-response';
import type { AgentOptions, AsyncForwardOptions, ForwardOptions } from '../agent-base';
import { AsyncStreamingAgent } from '../async-streaming-agent';
import { resumesFromMemory } from '../interceptors/durable/in-process';
import { StreamingAgent } from '../streaming-agent';
import {
  type AgentForInternLMOptions,
  asyncExecutor,
  internLMAgentClass,
  internLMLoop,
  syncExecutor,
} from './internlm-agent';

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
export class StreamingAgentForInternLM extends internLMAgentClass<
  StreamingAgent,
  StreamingAgent<ToolResponse>,
  ActionExecutor,
  AgentForInternLMOptions<BaseLLM, BaseAction, SyncHook>
>(StreamingAgent, {
  inner: (options) => new StreamingAgent(options as AgentOptions<BaseLLM, ToolResponse, SyncHook>),
  executor: syncExecutor,
}) {
  override forward(
    messages: AgentMessage[],
    options: ForwardOptions,
  ): Generator<InternLMChunk, InternLMChunk, undefined> {
    return driveStream(internLMLoop(this, messages, options, true), this.name, false) as Generator<
      InternLMChunk,
      InternLMChunk,
      undefined
    >;
  }
}

/** {@link StreamingAgentForInternLM} on an async model and tools; calls take a `signal`. */
export class AsyncStreamingAgentForInternLM extends internLMAgentClass<
  AsyncStreamingAgent,
  AsyncStreamingAgent<ToolResponse>,
  AsyncActionExecutor,
  AgentForInternLMOptions<AsyncBaseLLM, ActionBase, AsyncHook>
>(AsyncStreamingAgent, {
  inner: (options) => new AsyncStreamingAgent(options as AgentOptions<AsyncBaseLLM, ToolResponse, AsyncHook>),
  executor: asyncExecutor,
}) {
  override forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions,
  ): AsyncGenerator<InternLMChunk, InternLMChunk, undefined> {
    return driveStreamAsync(internLMLoop(this, messages, options, true), this.name, false) as AsyncGenerator<
      InternLMChunk,
      InternLMChunk,
      undefined
    >;
  }
}

// The loops keep a paused round in memory and resume from it: their calls need no journal to resume.
resumesFromMemory(StreamingAgentForInternLM.prototype.forward);
resumesFromMemory(AsyncStreamingAgentForInternLM.prototype.forward);
