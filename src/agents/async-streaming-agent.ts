import { driveStreamAsync } from '../core/stream-drivers';
import type { AsyncBaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { ModelStatusCode } from '../schema/status';
import {
  AgentBase,
  type AgentOptions,
  type AsyncCallOptions,
  type AsyncForwardOptions,
  type StreamReturn,
} from './agent-base';
import { agentCallSteps, buildChunk, buildPrompt, buildReply, requireLLM } from './lifecycle';

/**
 * The asynchronous streaming agent: `call()` returns an async generator of `STREAM_ING` chunks with
 * cumulative content, then the final reply once with `streamState: END`. Breaking out of the loop stops
 * the model request and leaves the session's memory as it was.
 *
 * @example
 * for await (const message of agent.call('hello', { sessionId: 1 })) render(message.content);
 */
export class AsyncStreamingAgent extends AgentBase<AsyncBaseLLM> {
  constructor(options: AgentOptions<AsyncBaseLLM> = {}) {
    super(options);
  }

  call(
    input?: MessageInput | readonly MessageInput[],
    options?: AsyncCallOptions,
  ): AsyncGenerator<AgentMessage, AgentMessage, undefined> {
    return driveStreamAsync(agentCallSteps(this, input, options), this.name, true);
  }

  async *forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions,
  ): AsyncGenerator<AgentMessage | string, StreamReturn, undefined> {
    const llm = requireLLM(this);
    const prompt = buildPrompt(this, messages, options.sessionId);
    let content = '';
    for await (const chunk of llm.streamChat(prompt, options)) {
      content = chunk.content;
      if (chunk.state !== ModelStatusCode.STREAM_ING) break;
      yield buildChunk(this, content);
    }
    return buildReply(this, content, options.sessionId);
  }
}
