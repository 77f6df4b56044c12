import { driveSync } from '../core/steps';
import type { SyncHook } from '../hooks/hook';
import type { BaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { keepShape } from '../utils/keep-shape';
import {
  AgentBase,
  type AgentOptions,
  type AgentReply,
  type CallOptions,
  type ForwardOptions,
  type ForwardResult,
} from './agent-base';
import { SYNC_AGENT } from './interceptors/session-store/persist';
import { agentCallSteps, askInFrame, MODEL_TURN, registerPlainForward } from './lifecycle';

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
    return MODEL_TURN.answer(this, askInFrame(this, messages, options, true), options.sessionId);
  }
}

// Its built-in forward makes no sub-calls, so calls run it without a call frame, as their own steps (see
// agentCallSteps).
registerPlainForward(Agent.prototype.forward, MODEL_TURN);

// Its calls cannot wait for a promise (an async store is refused).
(Agent.prototype as unknown as Record<symbol, boolean>)[SYNC_AGENT] = true;
// An app may make an agent per request: see keepShape.
keepShape(new Agent());
