import { driveAsync } from '../core/steps';
import type { Span } from '../core/tracing';
import type { AsyncHook } from '../hooks/hook';
import type { AsyncBaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import type { ChatMessage, ToolCall } from '../schema/chat-message';
import {
  AgentBase,
  type AgentOptions,
  type AgentReply,
  type AsyncCallOptions,
  type AsyncForwardOptions,
  type ForwardResult,
} from './agent-base';
import {
  agentCallSteps,
  buildPrompt,
  buildReply,
  chatSpan,
  endChatSpan,
  modelParams,
  registerPlainForward,
  requireLLM,
} from './lifecycle';

/**
 * The asynchronous agent: `call()` returns a promise and takes an `AbortSignal`. Takes an
 * {@link AsyncBaseLLM}; hooks may be sync or async. Use it in servers and for concurrent sessions. The
 * reply is typed as in {@link Agent}: text with the output parser's `F`, or what an overriding `forward` resolves to.
 *
 * @example
 * const agent = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['hi'] }) });
 * const reply = await agent.call('hello', { sessionId: 'alice' });
 */
export class AsyncAgent<F = unknown> extends AgentBase<AsyncBaseLLM, F, AsyncHook> {
  constructor(options: AgentOptions<AsyncBaseLLM, F, AsyncHook> = {}) {
    super(options);
  }

  /** Runs hooks, memory and `forward` for one turn and resolves to the reply (a copy the caller owns). */
  call(
    input?: MessageInput | readonly MessageInput[],
    options?: AsyncCallOptions,
  ): Promise<AgentReply<Awaited<ReturnType<this['forward']>>, F>> {
    return driveAsync(agentCallSteps(this, input, options)) as Promise<
      AgentReply<Awaited<ReturnType<this['forward']>>, F>
    >;
  }

  /** One turn: aggregate the session's memory, ask the model, parse with `outputFormat`. */
  forward(messages: AgentMessage[], options: AsyncForwardOptions): Promise<ForwardResult> {
    try {
      const llm = requireLLM(this);
      const prompt = buildPrompt(this, messages, options.sessionId);
      const span = chatSpan(this);
      if (span) return this.#tracedForward(llm, prompt, options, span);
      if (this.tools === undefined) {
        return llm.chat(prompt, options).then((raw) => buildReply(this, raw, options.sessionId));
      }
      return llm
        .generate(prompt, modelParams(this, options))
        .then((reply) => buildReply(this, reply.content, options.sessionId, reply.toolCalls));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The model call of {@link forward} inside a `chat` span (tracing is on). */
  async #tracedForward(
    llm: AsyncBaseLLM,
    prompt: ChatMessage[],
    options: AsyncForwardOptions,
    span: Span,
  ): Promise<ForwardResult> {
    let raw: string;
    let toolCalls: ToolCall[] | undefined;
    try {
      if (this.tools === undefined) raw = await llm.chat(prompt, options);
      else ({ content: raw, toolCalls } = await llm.generate(prompt, modelParams(this, options)));
    } catch (error) {
      endChatSpan(span, this, error);
      throw error;
    }
    endChatSpan(span, this);
    return buildReply(this, raw, options.sessionId, toolCalls);
  }
}

// Its built-in forward makes no sub-calls, so calls run it without a call frame (see agentCallSteps).
registerPlainForward(AsyncAgent.prototype.forward);
