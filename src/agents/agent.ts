import { driveSync } from '../core/steps';
import type { SyncHook } from '../hooks/hook';
import type { BaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import type { ToolCall } from '../schema/chat-message';
import {
  AgentBase,
  type AgentOptions,
  type AgentReply,
  type CallOptions,
  type ForwardOptions,
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
 * A synchronous agent: `call()` returns the reply directly. Takes only a sync {@link BaseLLM} and sync
 * hooks; use it for scripts, debugging and unit tests. Subclasses override `forward`, not `call`.
 *
 * The reply is typed: `AgentMessage<string, F>` with `F` what the `outputFormat` parses to (`unknown`
 * without one), or, in a subclass that overrides `forward`, what that `forward` returns.
 *
 * @example
 * const agent = new Agent({ llm: new MockLLM({ responses: ['急'] }), template: 'Answer with one character.' });
 * agent.call('今天天气情况').content; // '急'
 */
export class Agent<F = unknown> extends AgentBase<BaseLLM, F, SyncHook> {
  constructor(options: AgentOptions<BaseLLM, F, SyncHook> = {}) {
    super(options);
  }

  /** Runs hooks, memory and `forward` for one turn and returns the reply (a copy the caller owns). */
  call(
    input?: MessageInput | readonly MessageInput[],
    options?: CallOptions,
  ): AgentReply<ReturnType<this['forward']>, F> {
    return driveSync(agentCallSteps(this, input, options)) as AgentReply<ReturnType<this['forward']>, F>;
  }

  /** One turn: aggregate the session's memory, ask the model, parse with `outputFormat`. */
  forward(messages: AgentMessage[], options: ForwardOptions): ForwardResult {
    const llm = requireLLM(this);
    const prompt = buildPrompt(this, messages, options.sessionId);
    const span = chatSpan(this);
    let raw: string;
    let toolCalls: ToolCall[] | undefined;
    try {
      if (this.tools === undefined) raw = llm.chat(prompt, options);
      else ({ content: raw, toolCalls } = llm.generate(prompt, modelParams(this, options)));
    } catch (error) {
      if (span) endChatSpan(span, this, error);
      throw error;
    }
    if (span) endChatSpan(span, this);
    return buildReply(this, raw, options.sessionId, toolCalls);
  }
}

// Its built-in forward makes no sub-calls, so calls run it without a call frame (see agentCallSteps).
registerPlainForward(Agent.prototype.forward);
