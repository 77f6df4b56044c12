import { driveStreamAsync } from '../core/stream-drivers';
import type { AsyncHook } from '../hooks/hook';
import type { AsyncBaseLLM } from '../llms/base-llm';
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
  type AsyncCallOptions,
  type AsyncForwardOptions,
  type ForwardResult,
  type StreamFinal,
  type StreamOutput,
  type StreamReturn,
} from './agent-base';
import type { AsyncInterceptor, StepsInterceptor } from './interceptors/types';
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
import { type Run, type StartOptions, startRun } from './runs/run';

/**
 * The asynchronous streaming agent: `call()` returns an async generator of `STREAM_ING` chunks with
 * cumulative content, then the final reply once with `streamState: END`. Breaking out of the loop stops
 * the model request and leaves the session's memory as it was. Hooks may be sync or async; chunks and
 * reply are typed as in {@link StreamingAgent}.
 *
 * @example
 * for await (const message of agent.call('hello', { sessionId: 1 })) render(message.content);
 */
export class AsyncStreamingAgent<F = unknown> extends AgentBase<AsyncBaseLLM, F, AsyncHook> {
  constructor(options: AgentOptions<AsyncBaseLLM, F, AsyncHook> = {}) {
    super(options);
  }

  /**
   * Adds interceptors inside the ones this agent has (see `AgentBase.use`). A plain hook's `next()` gives
   * a promise of the result; a steps interceptor serves every variant.
   */
  override use(...interceptors: (AsyncInterceptor | StepsInterceptor)[]): this {
    return super.use(...interceptors);
  }

  call(
    input?: MessageInput | readonly MessageInput[],
    options?: AsyncCallOptions,
  ): AsyncGenerator<
    AgentChunk<StreamOutput<ReturnType<this['forward']>>, F>,
    AgentReply<StreamFinal<ReturnType<this['forward']>>, F>,
    undefined
  > {
    return driveStreamAsync(agentCallSteps(this, input, options), this.name, true) as AsyncGenerator<
      AgentChunk<StreamOutput<ReturnType<this['forward']>>, F>,
      AgentReply<StreamFinal<ReturnType<this['forward']>>, F>,
      undefined
    >;
  }

  /**
   * Starts a call in the background as a run: returns at once with its `id`; `events(after)` follows its
   * chunks and agent events from any event on (any number of readers, in this process or, through the store,
   * in others), `result` is its reply, `cancel()` stops it. The run goes on whoever reads it; its log is kept in
   * `runs.store` (by default the agent's `durable` or `memory` store) for `runs.retainMs` after it ends. A
   * durable agent's run is its call (`callId` = the run's id): a process that recovers the call after a crash
   * writes the rest to the same log.
   *
   * @example
   * const run = agent.start('research this', { sessionId: 'alice' });
   * for await (const event of run.events()) console.log(event.seq, event.type);
   * const reply = await run.result;
   */
  start(input?: MessageInput | readonly MessageInput[], options?: StartOptions): Run {
    return startRun(this as never, input, options);
  }
  async *forward(
    messages: AgentMessage[],
    options: AsyncForwardOptions,
  ): AsyncGenerator<ForwardResult, StreamReturn, undefined> {
    const llm = requireLLM(this);
    const prompt = buildPrompt(this, messages, options.sessionId);
    // Through the model-call hooks of the call: a replayed durable call (or a cache) answers without a stream.
    const request = await streamedRequest(this, llm, prompt, options, false).open();
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
      for await (const chunk of request.stream as AsyncIterable<StreamChunk>) {
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
      if (failure !== undefined) await request.fail(failure, content);
    }
    const answer: ModelReply = { content, toolCalls: toolCalls ?? [] };
    if (reasoning?.reasoning !== undefined) answer.reasoning = reasoning.reasoning;
    if (reasoning?.reasoningParts !== undefined) answer.reasoningParts = reasoning.reasoningParts;
    const reply = await request.finish(answer);
    return buildReply(this, reply.content, options.sessionId, reply.toolCalls, reply);
  }
}

// Its built-in forward makes no sub-calls, so calls run it without a call frame (see agentCallSteps).
registerPlainForward(AsyncStreamingAgent.prototype.forward);
