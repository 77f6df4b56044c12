import { METER } from '../agents/interceptors/budget';
import {
  type Asker,
  type Budget,
  type CallUsage,
  checkBudget,
  formatAmount,
  type Meter,
} from '../agents/interceptors/budget/meter';
import { currentFrame } from '../core/call-context';
import type { AgentMessage } from '../schema/agent-message';
import { BudgetExceededError, type BudgetKind, GuardrailTripped, ValidationError } from '../schema/errors';

/*
 * A remote agent's spending in the local call's budget. A client (HTTP or queue) called inside a budgeted
 * local call sends what is left of the budget as the remote call's `budget` (the tighter of it and a budget
 * the caller passed, such as the forward's own options), holds that much in the local meter while the remote
 * call runs (parallel branches cannot spend it meanwhile), and then adds what the remote reply says it spent
 * (`extraInfo.usage`). A usage that is not one (negative, not finite) or that passes what the remote was
 * allowed is refused: the call fails with a `ValidationError` and is charged all it was allowed, as is a
 * remote call that failed or whose reply says nothing of its spending (what it spent is unknown). A remote call
 * refused by its budget, or stopped by a guardrail, fails the local call the same way: the server answers
 * those with their fields.
 */

const KINDS: readonly BudgetKind[] = ['tokens', 'usd', 'modelCalls', 'toolCalls'];
const USAGE_FIELDS = [
  'promptTokens',
  'completionTokens',
  'totalTokens',
  'modelCalls',
  'toolCalls',
  'usd',
] as const;

/** A remote call's part of the local budget: the options to send, and how its end is counted. */
export class RemoteSpend<O extends Readonly<Record<string, unknown>>> implements Asker {
  /** The call options to send: with what the remote may spend when the call is budgeted. */
  readonly options: O;
  readonly #meter: Meter | undefined;
  readonly #allowed: Budget;
  readonly #where: string;
  #open: boolean;

  constructor(options: O, where: string) {
    this.#where = where;
    const meter = currentFrame()?.find(METER);
    this.#meter = meter;
    if (meter === undefined) {
      this.options = options;
      this.#allowed = {};
      this.#open = false;
      return;
    }
    const allowed = meter.remaining();
    const own = checkBudget(where, options.budget);
    if (own !== undefined) {
      for (const kind of KINDS) {
        const limit = own[kind];
        if (limit !== undefined && !(limit >= (allowed[kind] ?? Number.POSITIVE_INFINITY)))
          allowed[kind] = limit;
      }
    }
    meter.hold(allowed.tokens ?? 0, allowed.usd ?? 0, allowed.modelCalls ?? 0, allowed.toolCalls ?? 0, this);
    this.#allowed = allowed;
    this.#open = true;
    this.options = { ...options, budget: allowed };
  }

  /**
   * Adds what the reply says the remote spent. Throws a `ValidationError` (charging all the remote was
   * allowed) when it is not a usage, or passes what the remote was allowed.
   */
  settle(reply: AgentMessage): void {
    if (!this.#open) return;
    this.#open = false;
    const meter = this.#meter!;
    this.#release();
    const usage = (reply.extraInfo as { usage?: unknown } | null | undefined)?.usage;
    if (usage === undefined || usage === null) {
      this.#chargeAllowed();
      return;
    }
    const problem = usageProblem(usage, this.#allowed);
    if (problem !== undefined) {
      this.#chargeAllowed();
      throw new ValidationError({
        message: `${this.#where}: the usage the remote agent reported is refused: ${problem.text}; the call is charged all the remote was allowed (${describeBudget(this.#allowed)})`,
        field: problem.field,
      });
    }
    const spent = usage as Partial<CallUsage>;
    // A total below its parts would spend tokens without counting them.
    meter.add({ ...spent, totalTokens: totalOf(spent) });
  }

  /** A remote call that failed: what it spent is unknown, so it is charged all it was allowed. */
  fail(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#release();
    this.#chargeAllowed();
  }

  /** A remote call that was not made after all: what was held is given back. */
  cancel(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#release();
  }

  describe(): string {
    return `a remote call (${this.#where})`;
  }

  #release(): void {
    const allowed = this.#allowed;
    this.#meter!.release(
      allowed.tokens ?? 0,
      allowed.usd ?? 0,
      allowed.modelCalls ?? 0,
      allowed.toolCalls ?? 0,
    );
  }

  #chargeAllowed(): void {
    const allowed = this.#allowed;
    const charged: Partial<CallUsage> = {
      totalTokens: allowed.tokens ?? 0,
      usd: allowed.usd ?? 0,
      modelCalls: allowed.modelCalls ?? 0,
      toolCalls: allowed.toolCalls ?? 0,
    };
    this.#meter!.add(charged);
  }
}

/** Begins a remote call's part of the local budget (see {@link RemoteSpend}); `where` names the remote. */
export function beginRemote<O extends Readonly<Record<string, unknown>>>(
  options: O,
  where: string,
): RemoteSpend<O> {
  return new RemoteSpend(options, where);
}

/** What is wrong with a remote agent's usage, or undefined when it is a usage within what it was allowed. */
function usageProblem(usage: unknown, allowed: Budget): { field: string; text: string } | undefined {
  if (typeof usage !== 'object' || Array.isArray(usage))
    return { field: 'extraInfo.usage', text: `${snippet(usage)} is not a usage` };
  const fields = usage as Record<string, unknown>;
  for (const field of USAGE_FIELDS) {
    const value = fields[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      return {
        field: `extraInfo.usage.${field}`,
        text: `${field} ${snippet(value)} is not a count (a finite number >= 0)`,
      };
  }
  const number = (field: (typeof USAGE_FIELDS)[number]) => (fields[field] as number | undefined) ?? 0;
  const spent: Record<BudgetKind, number> = {
    tokens: totalOf(fields as Partial<CallUsage>),
    usd: number('usd'),
    modelCalls: number('modelCalls'),
    toolCalls: number('toolCalls'),
  };
  for (const kind of KINDS) {
    const limit = allowed[kind];
    if (limit !== undefined && spent[kind] > limit + limit * 1e-12)
      return {
        field: `extraInfo.usage.${kind === 'tokens' ? 'totalTokens' : kind}`,
        text: `${kind} ${formatAmount(kind, spent[kind])} is more than the ${formatAmount(kind, limit)} it was allowed`,
      };
  }
  return undefined;
}

/** The tokens a usage spent: its total, or its parts when they say more. */
function totalOf(usage: Partial<CallUsage>): number {
  return Math.max(usage.totalTokens ?? 0, (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0));
}

function describeBudget(budget: Budget): string {
  const parts = KINDS.filter((kind) => budget[kind] !== undefined).map(
    (kind) => `${kind} ${formatAmount(kind, budget[kind]!)}`,
  );
  return parts.length === 0 ? 'nothing limited' : parts.join(', ');
}

function snippet(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? JSON.stringify(value) : String(JSON.stringify(value) ?? value);
  } catch {
    text = typeof value;
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
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
