import { driveStream } from '../core/stream-drivers';
import type { SyncHook } from '../hooks/hook';
import type { BaseLLM } from '../llms/base-llm';
import type { ModelReply, StreamChunk } from '../llms/types';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import type { ToolCall } from '../schema/chat-message';
import type { ReasoningInfo } from '../schema/reasoning';
import { ModelStatusCode } from '../schema/status';
import {
  AgentBase,
  type AgentChunk,
  type AgentOptions,
  type AgentReply,
  type CallOptions,
  type ForwardOptions,
  type ForwardResult,
  type StreamFinal,
  type StreamOutput,
  type StreamReturn,
} from './agent-base';
import { SYNC_AGENT } from './interceptors/session-store/persist';
import {
  agentCallSteps,
  buildChunk,
  buildPrompt,
  buildReply,
  reasoningChunk,
  registerPlainForward,
  requireLLM,
  STREAM_LEFT,
  streamedRequest,
  streamReader,
} from './lifecycle';

/**
 * A synchronous streaming agent: `call()` returns a generator of `STREAM_ING` chunks with cumulative
 * content, then the final reply once with `streamState: END` (also the generator's return value).
 * `forward` is a generator: what it yields is streamed, what it returns (else its last chunk) is the reply.
 * Takes sync hooks only. Chunks and reply are typed as in {@link Agent} (from what an overriding `forward`
 * yields and returns).
 *
 * @example
 * for (const message of agent.call('hello')) process.stdout.write(`\r${message.content}`);
 */
export class StreamingAgent<F = unknown> extends AgentBase<BaseLLM, F, SyncHook> {
  constructor(options: AgentOptions<BaseLLM, F, SyncHook> = {}) {
    super(options);
  }

  call(
    input?: MessageInput | readonly MessageInput[],
    options?: CallOptions,
  ): Generator<
    AgentChunk<StreamOutput<ReturnType<this['forward']>>, F>,
    AgentReply<StreamFinal<ReturnType<this['forward']>>, F>,
    undefined
  > {
    return driveStream(agentCallSteps(this, input, options), this.name, true) as Generator<
      AgentChunk<StreamOutput<ReturnType<this['forward']>>, F>,
      AgentReply<StreamFinal<ReturnType<this['forward']>>, F>,
      undefined
    >;
  }

  *forward(
    messages: AgentMessage[],
    options: ForwardOptions,
  ): Generator<ForwardResult, StreamReturn, undefined> {
    const llm = requireLLM(this);
    const prompt = buildPrompt(this, messages, options.sessionId);
    // Through the model-call hooks of the call: a replayed durable call (or a cache) answers without a stream.
    const request = streamedRequest(this, llm, prompt, options, true).openSync();
    const answered = request.answered;
    if (answered !== undefined) {
      if (answered.content !== '') yield buildChunk(this, answered.content);
      return buildReply(this, answered.content, options.sessionId, answered.toolCalls, answered);
    }
    let content = '';
    let toolCalls: ToolCall[] | undefined;
    let reasoning: ReasoningInfo | undefined;
    let formatted: unknown = null;
    const reader = streamReader(this);
    let failure: unknown = STREAM_LEFT;
    try {
      for (const chunk of request.stream as Iterable<StreamChunk>) {
        const previousLength = content.length;
        content = chunk.content;
        if (chunk.state !== ModelStatusCode.STREAM_ING) {
          toolCalls = chunk.toolCalls;
          if (chunk.reasoning !== undefined || chunk.reasoningParts !== undefined) reasoning = chunk;
          break;
        }
        if (chunk.reasoningDelta !== undefined && chunk.delta === '') {
          yield reasoningChunk(this, content, chunk.reasoningDelta, formatted);
          continue;
        }
        const built = buildChunk(this, content, chunk.delta, reader, previousLength, chunk.reasoningDelta);
        formatted = built.formatted;
        yield built;
      }
      failure = undefined;
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      // A failed stream, or one left early, still used what the model sent: the hooks hear it (a budget counts it).
      if (failure !== undefined) request.failSync(failure, content);
    }
    const answer: ModelReply = { content, toolCalls: toolCalls ?? [] };
    if (reasoning?.reasoning !== undefined) answer.reasoning = reasoning.reasoning;
    if (reasoning?.reasoningParts !== undefined) answer.reasoningParts = reasoning.reasoningParts;
    const reply = request.finishSync(answer);
    return buildReply(this, reply.content, options.sessionId, reply.toolCalls, reply);
  }
}

// Its built-in forward makes no sub-calls, so calls run it without a call frame (see agentCallSteps).
registerPlainForward(StreamingAgent.prototype.forward);

// Its calls cannot wait for a promise (an async store is refused).
(StreamingAgent.prototype as unknown as Record<symbol, boolean>)[SYNC_AGENT] = true;
