import { driveStream } from '../core/stream-drivers';
import type { BaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { ModelStatusCode } from '../schema/status';
import {
  AgentBase,
  type AgentOptions,
  type CallOptions,
  type ForwardOptions,
  type StreamReturn,
} from './agent-base';
import { agentCallSteps, buildChunk, buildPrompt, buildReply, requireLLM } from './lifecycle';

/**
 * A synchronous streaming agent: `call()` returns a generator of `STREAM_ING` chunks with cumulative
 * content, then the final reply once with `streamState: END` (also the generator's return value).
 * `forward` is a generator: what it yields is streamed, what it returns (else its last chunk) is the reply.
 *
 * @example
 * for (const message of agent.call('hello')) process.stdout.write(`\r${message.content}`);
 */
export class StreamingAgent extends AgentBase<BaseLLM> {
  constructor(options: AgentOptions<BaseLLM> = {}) {
    super(options);
  }

  call(
    input?: MessageInput | readonly MessageInput[],
    options?: CallOptions,
  ): Generator<AgentMessage, AgentMessage, undefined> {
    return driveStream(agentCallSteps(this, input, options), this.name, true);
  }

  *forward(
    messages: AgentMessage[],
    options: ForwardOptions,
  ): Generator<AgentMessage | string, StreamReturn, undefined> {
    const llm = requireLLM(this);
    const prompt = buildPrompt(this, messages, options.sessionId);
    let content = '';
    for (const chunk of llm.streamChat(prompt, options)) {
      content = chunk.content;
      if (chunk.state !== ModelStatusCode.STREAM_ING) break;
      yield buildChunk(this, content);
    }
    return buildReply(this, content, options.sessionId);
  }
}
