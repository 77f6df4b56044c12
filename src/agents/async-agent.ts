import type { AsyncHook } from '../hooks/hook';
import type { AsyncBaseLLM } from '../llms/base-llm';
import type { AgentMessage, MessageInput } from '../schema/agent-message';
import { keepShape } from '../utils/keep-shape';
import {
  AgentBase,
  type AgentOptions,
  type AgentReply,
  type AsyncCallOptions,
  type AsyncForwardOptions,
  type ForwardResult,
} from './agent-base';
import type { AsyncInterceptor, StepsInterceptor } from './interceptors/types';
import { askInFrame, callAsync, MODEL_TURN, registerPlainForward } from './lifecycle';
import { type Run, type StartOptions, startRun } from './runs/run';

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

  /**
   * Adds interceptors inside the ones this agent has (see `AgentBase.use`). A plain hook's `next()` gives
   * a promise of the result; a steps interceptor serves every variant.
   */
  override use(...interceptors: (AsyncInterceptor | StepsInterceptor)[]): this {
    return super.use(...interceptors);
  }

  /** Runs hooks, memory and `forward` for one turn and resolves to the reply (a copy the caller owns). */
  call(
    input?: MessageInput | readonly MessageInput[],
    options?: AsyncCallOptions,
  ): Promise<AgentReply<Awaited<ReturnType<this['forward']>>, F>> {
    return callAsync(this, input, options) as Promise<AgentReply<Awaited<ReturnType<this['forward']>>, F>>;
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
  /** One turn: aggregate the session's memory, ask the model, parse with `outputFormat`. */
  forward(messages: AgentMessage[], options: AsyncForwardOptions): Promise<ForwardResult> {
    try {
      const answer = Promise.resolve(askInFrame(this, messages, options));
      return answer.then((value) => MODEL_TURN.answer(this, value, options.sessionId));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

// Its built-in forward makes no sub-calls, so calls run it without a call frame, as their own steps (see
// agentCallSteps).
registerPlainForward(AsyncAgent.prototype.forward, MODEL_TURN);

// An app may make an agent per request: see keepShape.
keepShape(new AsyncAgent());
