import { driveSync } from '../core/steps';
import type { BaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { AgentBase, type AgentOptions, type CallOptions, type ForwardOptions } from './agent-base';
import { agentCallSteps, buildPrompt, buildReply, requireLLM } from './lifecycle';

/**
 * A synchronous agent: `call()` returns the reply directly. Takes only a sync {@link BaseLLM}; use it for
 * scripts, debugging and unit tests. Subclasses override `forward`, not `call`.
 *
 * @example
 * const agent = new Agent({ llm: new MockLLM({ responses: ['急'] }), template: 'Answer with one character.' });
 * agent.call('今天天气情况').content; // '急'
 */
export class Agent extends AgentBase<BaseLLM> {
  constructor(options: AgentOptions<BaseLLM> = {}) {
    super(options);
  }

  /** Runs hooks, memory and `forward` for one turn and returns the reply (a copy the caller owns). */
  call(input?: MessageInput | readonly MessageInput[], options?: CallOptions): AgentMessage {
    return driveSync(agentCallSteps(this, input, options));
  }

  /** One turn: aggregate the session's memory, ask the model, parse with `outputFormat`. */
  forward(messages: AgentMessage[], options: ForwardOptions): AgentMessage | string {
    const llm = requireLLM(this);
    const prompt = buildPrompt(this, messages, options.sessionId);
    return buildReply(this, llm.chat(prompt, options), options.sessionId);
  }
}
