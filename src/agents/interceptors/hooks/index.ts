import { hookStep } from '../../../core/hook-step';
import { PromiseInSyncCall, type Steps } from '../../../core/steps';
import type { AgentMessage } from '../../../schema/agent-message';
import { ConfigurationError } from '../../../schema/errors';
import type { Turn } from '../../lifecycle/turn';
import { AGENT } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import { checkMessages } from '../guardrails';
import { type GuardSpec, guardOf } from '../guardrails/guards';

/*
 * Lagent's hooks on the chain: each hook's `beforeAgent` may replace the call's inputs before they go to memory,
 * and each `afterAgent` the reply after it was stored, in the order the hooks were registered. A guardrail
 * is a hook too: its sequential input and output checks run at these points, in their place among the hooks,
 * given the call's signal (the agent runs the check itself rather than through the hook's method, which has no
 * signal to give). The executors' `beforeAction` / `afterAction` run in the executors (executor-steps.ts).
 */

const interceptor = {
  name: 'hooks',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const { agent } = turn;
    const sessionId = turn.options.sessionId;
    let messages = turn.messages;
    for (const hook of agent.hooks) {
      if (!hook.beforeAgent) continue;
      const guard = guardOf(hook);
      if (guard !== undefined) yield* guardSteps(turn, guard, messages);
      else messages = (yield* hookStep(hook, 'beforeAgent', agent, messages, sessionId)) ?? messages;
    }
    turn.messages = messages;
    let reply = yield* next();
    for (const hook of agent.hooks) {
      if (!hook.afterAgent) continue;
      const guard = guardOf(hook);
      if (guard !== undefined) yield* guardSteps(turn, guard, [reply]);
      else reply = (yield* hookStep(hook, 'afterAgent', agent, reply, sessionId)) ?? reply;
    }
    return reply;
  },
};

/** A guardrail's checks as a step of the call, given the call's signal. */
function* guardSteps(turn: Turn, guard: GuardSpec, messages: readonly AgentMessage[]): Steps<void> {
  const pending = checkMessages(turn, guard, messages);
  if (pending === undefined) return;
  try {
    yield pending;
  } catch (error) {
    if (!(error instanceof PromiseInSyncCall)) throw error;
    pending.catch(() => {});
    throw new ConfigurationError({
      message: `${turn.agent.name}: guardrail ${guard.name}'s check returned a promise, which a synchronous agent cannot wait for; use the Async variant of the agent or a check that answers at once`,
    });
  }
}

export const hooks: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  static: (agent) => (agent.hooks.length > 0 ? AGENT : 0),
};
