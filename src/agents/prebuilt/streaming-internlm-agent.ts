import type { ActionExecutor } from '../../actions/action-executor';
import type { AsyncActionExecutor } from '../../actions/async-action-executor';
import type { ActionBase, BaseAction } from '../../actions/base-action';
import { driveStream, driveStreamAsync } from '../../core/stream-drivers';
import type { AsyncHook, SyncHook } from '../../hooks/hook';
import type { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { AgentMessage, MessageInState } from '../../schema/agent-message';
import type { AgentStatusCode } from '../../schema/status';
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

type S = typeof AgentStatusCode;

/** The reply of a streaming InternLM agent: the model's answer (`END`), `formatted` as its parser read it. */
export type InternLMReply = MessageInState<S['END'], string, ToolResponse | null>;

/**
 * What a streaming InternLM agent yields: the model's text (`STREAM_ING`, and `PLUGIN_START` / `CODING`
 * while it writes a call) and the answer (`END`), as text read by the parser; the finished call
 * (`PLUGIN_END` / `CODE_END`, `formatted` the call); the tool's result (`PLUGIN_RETURN` / `CODE_RETURN`:
 * its text with the default action hooks). Checking `streamState` narrows `content` and `formatted`.
 */
export type InternLMChunk =
  | MessageInState<S['STREAM_ING'] | S['PLUGIN_START'] | S['CODING'], string, ToolResponse | null>
  | InternLMReply
  | MessageInState<S['PLUGIN_END'] | S['CODE_END'], string, ToolResponse>
  | MessageInState<S['PLUGIN_RETURN'] | S['CODE_RETURN'], unknown, ToolResponse | null>;

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
  ): Generator<InternLMChunk, InternLMReply, undefined> {
    return driveStream(internLMLoop(this, messages, options, true), this.name, false) as Generator<
      InternLMChunk,
      InternLMReply,
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
  ): AsyncGenerator<InternLMChunk, InternLMReply, undefined> {
    return driveStreamAsync(internLMLoop(this, messages, options, true), this.name, false) as AsyncGenerator<
      InternLMChunk,
      InternLMReply,
      undefined
    >;
  }
}

// The loops keep a paused round in memory and resume from it: their calls need no journal to resume.
resumesFromMemory(StreamingAgentForInternLM.prototype.forward);
resumesFromMemory(AsyncStreamingAgentForInternLM.prototype.forward);
