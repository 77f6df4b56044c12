import type { Steps } from '../../../core/steps';
import type { ModelReply } from '../../../llms/types';
import type { Memory } from '../../../memory/memory';
import { ConfigurationError } from '../../../schema/errors';
import { isThenable } from '../../../utils/is';
import type { AgentBase } from '../../agent-base';
import { buildPrompt } from '../../lifecycle/builtin-forward';
import { MODEL } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import type { ModelContext } from '../model-context';
import { SYNC_AGENT } from '../session-store/persist';

/*
 * Summaries: an agent whose aggregator summarises (`TokenWindowAggregator` with `summarize`) folds the
 * session's older turns into a summary before each model call of its built-in forward, then the prompt is
 * built again from what memory holds. The summariser runs as a sub-call of the agent's call (journaled,
 * traced, counted by a budget, taken back if the call fails): model calls then run in the call's frame.
 */

/** An aggregator that folds older turns into summaries. */
interface Compacting {
  readonly summarizes: boolean;
  compact(memory: Memory, name: string): void | Promise<void>;
}

/** True when the agent's aggregator summarises. */
export function summarizes(agent: AgentBase): boolean {
  return (agent.aggregator as Partial<Compacting> | undefined)?.summarizes === true;
}

/** The error of a synchronous agent whose aggregator summarises with an async model. */
function asyncSummarizer(agent: AgentBase): ConfigurationError {
  return new ConfigurationError({
    message: `${agent.name}: its TokenWindowAggregator summarises with an async model, which a synchronous agent cannot wait for; give summarize a synchronous llm`,
  });
}

const interceptor = {
  name: 'summaries',

  *modelCall(context: ModelContext, next: () => Steps<ModelReply>): Steps<ModelReply> {
    const agent = context.agent;
    const sessionId = context.sessionId;
    const memory = agent.memory?.get(sessionId);
    if (memory === undefined) return yield* next();
    const compacted = (agent.aggregator as unknown as Compacting).compact(memory, agent.name);
    if (isThenable(compacted)) {
      if ((agent as unknown as Record<symbol, unknown>)[SYNC_AGENT] === true) {
        (compacted as Promise<void>).catch(() => {});
        throw asyncSummarizer(agent);
      }
      yield compacted;
    }
    // The prompt again, from what memory holds now.
    context.messages = buildPrompt(agent, context.call.messages, sessionId);
    return yield* next();
  },
};

export const summaries: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  static: (agent) => (summarizes(agent) ? MODEL : 0),
};
