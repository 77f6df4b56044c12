import type { Steps } from '../../../core/steps';
import type { ModelReply } from '../../../llms/types';
import type { ActionReturn } from '../../../schema/action-return';
import type { AgentMessage } from '../../../schema/agent-message';
import type { Turn } from '../../lifecycle/turn';
import { AGENT, MODEL, TOOL } from '../chain-bits';
import type { BuiltinConcern } from '../concern';
import { DURABLE } from '../durable/option';
import type { ModelContext } from '../model-context';
import { METER, RECORDED_BUDGET } from '../slots';
import type { ToolCallContext } from '../tool-context';
import { type Budget, checkBudget, Meter } from './meter';
import { beginModelCall } from './metering';

/*
 * Budgets. A call given `budget` opens a `Meter` (meter.ts) in its slot; the calls made inside it find it, as
 * they find the call's signal, and a sub-call with a budget of its own opens one inside its caller's (both limits
 * hold). Each model request asks the meter first and holds its worst case until it settles (metering.ts); each
 * tool call counts just before it runs. A budgeted call's reply says what it spent (`extraInfo.usage`). A durable
 * call replayed without a `budget` keeps the one it was made with (the journal records it: `RECORDED_BUDGET`).
 */

export { METER, RECORDED_BUDGET };

const interceptor = {
  name: 'budget',

  *agentCall(turn: Turn, next: () => Steps<AgentMessage>): Steps<AgentMessage> {
    const limits = (turn.given.budget as Budget | undefined) ?? turn.get(RECORDED_BUDGET);
    if (limits === undefined) return yield* next();
    const { agent } = turn;
    const meter = new Meter(checkBudget(agent.name, limits)!, turn.parent?.find(METER), agent.name);
    turn.set(METER, meter);
    // A budget found only now (a replayed durable call's): the model and tool hooks of the call apply too.
    if (turn.given.budget === undefined) turn.link(true);
    const reply = yield* next();
    return withUsage(reply, meter);
  },

  *modelCall(context: ModelContext, next: () => Steps<ModelReply>): Steps<ModelReply> {
    const meter = context.call.find(METER);
    if (meter === undefined) return yield* next();
    const call = beginModelCall(meter, context.agent.name, context.llm, context.messages, context.params);
    context.params = call.params;
    let reply: ModelReply;
    try {
      reply = yield* next();
    } catch (error) {
      // A failed (or left) stream still used what the model sent.
      call.fail(error, context.partial === '' ? undefined : context.partial);
      throw error;
    }
    return call.end(reply) as ModelReply;
  },

  *toolCall(context: ToolCallContext, next: () => Steps<ActionReturn>): Steps<ActionReturn> {
    const meter = context.builtin ? undefined : context.call.find(METER);
    // Counted once its arguments were checked, just before it runs: a call past the budget is not made.
    if (meter !== undefined) context.onRun(() => meter.beginTool());
    return yield* next();
  },
};

/** The reply with what its call spent in `extraInfo.usage` (an object `extraInfo` keeps its other keys). */
function withUsage(reply: AgentMessage, meter: Meter): AgentMessage {
  const extra = reply.extraInfo;
  reply.extraInfo =
    extra !== null && typeof extra === 'object' && !Array.isArray(extra)
      ? { ...extra, usage: meter.usage() }
      : { usage: meter.usage() };
  return reply;
}

export const budget: BuiltinConcern = {
  interceptor: interceptor as BuiltinConcern['interceptor'],
  // An outermost call of a durable agent may be replayed with the budget it was made with.
  static: (agent) => ((agent as unknown as Record<symbol, unknown>)[DURABLE] !== undefined ? AGENT : 0),
  callOptions: ['budget', 'durable'],
  enclosing: true,
  perCall(turn) {
    const own = turn.given.budget !== undefined || turn.get(METER) !== undefined;
    const inside = own || turn.parent?.find(METER) !== undefined ? MODEL | TOOL : 0;
    // An outermost durable call may be replayed with the budget it was made with.
    const replayed =
      turn.parent === undefined &&
      (turn.given.durable !== undefined ||
        (turn.agent as unknown as Record<symbol, unknown>)[DURABLE] !== undefined);
    return (own || replayed ? AGENT : 0) | inside;
  },
};
