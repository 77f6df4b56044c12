import type { CallUsage } from '../core/budget';
import { currentFrame } from '../core/call-context';
import type { AgentMessage } from '../schema/agent-message';
import { BudgetExceededError, type BudgetKind, GuardrailTripped } from '../schema/errors';

/*
 * A remote agent's spending in the local call's budget. A client (HTTP or queue) called inside a budgeted
 * local call sends what is left of the budget as the remote call's `budget`, and adds what the remote reply
 * says it spent (`extraInfo.usage`) to the local meter. A remote call refused by its budget, or stopped by a
 * guardrail, fails the local call the same way: the server answers those with their fields.
 */

/** The call options with what is left of the local budget, when the client is called inside a budgeted call. */
export function withRemoteBudget<O extends Readonly<Record<string, unknown>>>(options: O): O {
  if (options.budget !== undefined) return options;
  const meter = currentFrame()?.meter;
  if (meter === undefined) return options;
  return { ...options, budget: meter.remaining() };
}

/** Adds what a remote reply says it spent to the local budget, when there is one. */
export function chargeRemote(reply: AgentMessage, options: Readonly<Record<string, unknown>>): void {
  if (options.budget !== undefined) return; // a budget of the caller's own: its usage is on the reply
  const meter = currentFrame()?.meter;
  if (meter === undefined) return;
  const usage = (reply.extraInfo as { usage?: Partial<CallUsage> } | null | undefined)?.usage;
  if (usage !== null && typeof usage === 'object') meter.add(usage);
}

/** The local error for a server's answer about a budget or a guardrail; undefined for any other answer. */
export function remoteRefusal(body: unknown): Error | undefined {
  const answer = body as Record<string, unknown> | null | undefined;
  if (answer === null || typeof answer !== 'object') return undefined;
  const detail = typeof answer.detail === 'string' ? answer.detail : 'the remote call was refused';
  if (answer.error === 'BudgetExceededError' && typeof answer.budget === 'string') {
    return new BudgetExceededError({
      message: `the remote agent: ${detail}`,
      budget: answer.budget as BudgetKind,
      spent: Number(answer.spent),
      limit: Number(answer.limit),
    });
  }
  if (answer.error === 'GuardrailTripped' && typeof answer.guardrail === 'string') {
    return new GuardrailTripped({
      message: `the remote agent: ${detail}`,
      guardrail: answer.guardrail,
      reason: String(answer.reason),
    });
  }
  return undefined;
}

/** The error body a server sends for a budget or a guardrail (their fields, always shown); undefined otherwise. */
export function refusalBody(error: unknown): Record<string, unknown> | undefined {
  try {
    return refusalOf(error);
  } catch {
    return undefined; // a Proxy whose getPrototypeOf trap throws: not ours
  }
}

function refusalOf(error: unknown): Record<string, unknown> | undefined {
  if (error instanceof BudgetExceededError) {
    return {
      detail: error.message,
      error: error.name,
      budget: error.budget,
      spent: error.spent,
      limit: error.limit,
    };
  }
  if (error instanceof GuardrailTripped) {
    return { detail: error.message, error: error.name, guardrail: error.guardrail, reason: error.reason };
  }
  return undefined;
}
