import { BudgetExceededError, type BudgetKind, ConfigurationError } from '../schema/errors';

/*
 * Budgets. A call given `budget` opens a Meter; the calls made inside it (sub-agents, models, executors,
 * tools) find it through their frame, as they find the call's signal. A model or tool call asks the meter
 * first: one that would pass a limit is not made (`BudgetExceededError`); what it spent is added after. A
 * sub-call with a budget of its own opens a meter inside its caller's: both limits hold, and what it spends
 * counts in both.
 */

/** The `budget` call option: limits on what one call, with everything made inside it, may spend. */
export interface Budget {
  /** Prompt and completion tokens, summed over model calls. */
  tokens?: number | undefined;
  /** US dollars, from each model's price (see `setModelPrice`). */
  usd?: number | undefined;
  /** Model requests. */
  modelCalls?: number | undefined;
  /** Tool calls. */
  toolCalls?: number | undefined;
}

/** What a call spent: on a budgeted call's reply as `extraInfo.usage`. */
export interface CallUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  modelCalls: number;
  toolCalls: number;
  /** US dollars, for the models with a known price. */
  usd: number;
  /** Models called without a known price (their tokens count, their cost does not). */
  unpriced?: string[] | undefined;
  /** Prompt tokens read from providers' prompt caches (part of `promptTokens`), when reported. */
  cachedPromptTokens?: number | undefined;
  /** Prompt tokens written to a prompt cache (part of `promptTokens`), when reported. */
  cacheWriteTokens?: number | undefined;
  /** Completion tokens spent reasoning (part of `completionTokens`), when reported. */
  reasoningTokens?: number | undefined;
}

/** The parts of a model call's tokens that are reported apart. */
export interface UsageDetails {
  cachedPromptTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
  reasoningTokens?: number | undefined;
}

const KINDS: readonly BudgetKind[] = ['tokens', 'usd', 'modelCalls', 'toolCalls'];

/** Checks a `budget` option. */
export function checkBudget(owner: string, value: unknown): Budget | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigurationError({
      message: `${owner}: budget must be an object { tokens?, usd?, modelCalls?, toolCalls? }`,
    });
  }
  for (const key of Object.keys(value)) {
    const limit = (value as Record<string, unknown>)[key];
    if (!KINDS.includes(key as BudgetKind)) {
      throw new ConfigurationError({
        message: `${owner}: budget has an unknown limit ${JSON.stringify(key)} (known: ${KINDS.join(', ')})`,
      });
    }
    if (limit !== undefined && (typeof limit !== 'number' || !(limit >= 0))) {
      throw new ConfigurationError({
        message: `${owner}: budget.${key} must be a number >= 0, got ${String(limit)}`,
      });
    }
  }
  return value as Budget;
}

/** The spending of one budgeted call (and of everything made inside it). */
export class Meter {
  readonly spent: CallUsage = {
    promptTokens: 0,
    completionTokens: 0,
    totalTokens: 0,
    modelCalls: 0,
    toolCalls: 0,
    usd: 0,
  };

  constructor(
    readonly limits: Budget,
    readonly parent: Meter | undefined,
    /** Who opened it (the agent's name), for messages. */
    readonly owner: string,
  ) {}

  /** True when this meter or an enclosing one limits `kind`. */
  isLimited(kind: BudgetKind): boolean {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent)
      if (meter.limits[kind] !== undefined) return true;
    return false;
  }

  /**
   * Before a model request: refused when one more request, or its prompt's tokens or cost (when known),
   * would pass a limit here or in an enclosing meter. Counts the request.
   */
  beginModel(promptTokens: number | undefined, promptUsd: number | undefined): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      meter.#refuse('modelCalls', meter.spent.modelCalls + 1);
      if (promptTokens !== undefined) meter.#refuse('tokens', meter.spent.totalTokens + promptTokens);
      if (promptUsd !== undefined) meter.#refuse('usd', meter.spent.usd + promptUsd);
    }
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent)
      meter.spent.modelCalls++;
  }

  /** After a model request: its tokens and cost (`usd` undefined: the model has no known price). */
  endModel(promptTokens: number, completionTokens: number, usd: number | undefined, model: string): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const spent = meter.spent;
      spent.promptTokens += promptTokens;
      spent.completionTokens += completionTokens;
      spent.totalTokens += promptTokens + completionTokens;
      if (usd !== undefined) spent.usd += usd;
      else if (spent.unpriced === undefined) spent.unpriced = [model];
      else if (!spent.unpriced.includes(model)) spent.unpriced.push(model);
    }
  }

  /** After a model request whose usage reports cached, cache-written or reasoning tokens: adds them. */
  addDetails(details: UsageDetails): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const spent = meter.spent;
      if (details.cachedPromptTokens)
        spent.cachedPromptTokens = (spent.cachedPromptTokens ?? 0) + details.cachedPromptTokens;
      if (details.cacheWriteTokens)
        spent.cacheWriteTokens = (spent.cacheWriteTokens ?? 0) + details.cacheWriteTokens;
      if (details.reasoningTokens)
        spent.reasoningTokens = (spent.reasoningTokens ?? 0) + details.reasoningTokens;
    }
  }

  /** Before a tool call: refused when one more would pass a limit. Counts the call. */
  beginTool(): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent)
      meter.#refuse('toolCalls', meter.spent.toolCalls + 1);
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent)
      meter.spent.toolCalls++;
  }

  /** Adds what a call made elsewhere (a remote agent) reports it spent. */
  add(usage: Partial<CallUsage>): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const spent = meter.spent;
      spent.promptTokens += usage.promptTokens ?? 0;
      spent.completionTokens += usage.completionTokens ?? 0;
      spent.totalTokens += usage.totalTokens ?? (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0);
      spent.modelCalls += usage.modelCalls ?? 0;
      spent.toolCalls += usage.toolCalls ?? 0;
      spent.usd += usage.usd ?? 0;
    }
  }

  /** What is left of every limit set here or in an enclosing meter (the tightest of each). */
  remaining(): Budget {
    const left: Budget = {};
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      for (const kind of KINDS) {
        const limit = meter.limits[kind];
        if (limit === undefined) continue;
        const rest = Math.max(0, limit - spentOn(meter.spent, kind));
        left[kind] = left[kind] === undefined ? rest : Math.min(left[kind], rest);
      }
    }
    return left;
  }

  /** A copy of what was spent. */
  usage(): CallUsage {
    const usage = { ...this.spent };
    if (usage.unpriced) usage.unpriced = [...usage.unpriced];
    else delete usage.unpriced;
    return usage;
  }

  #refuse(kind: BudgetKind, total: number): void {
    const limit = this.limits[kind];
    if (limit === undefined || total <= limit) return;
    const spent = spentOn(this.spent, kind);
    const what =
      kind === 'modelCalls'
        ? 'a model request'
        : kind === 'toolCalls'
          ? 'a tool call'
          : kind === 'tokens'
            ? `a model request (prompt of ${total - spent} tokens)`
            : `a model request (prompt costing $${(total - spent).toFixed(6)})`;
    throw new BudgetExceededError({
      message: `${this.owner}: the ${kind} budget (${limit}) would be passed by ${what}: ${formatSpent(kind, spent)} spent so far`,
      budget: kind,
      spent: total,
      limit,
    });
  }
}

function spentOn(spent: CallUsage, kind: BudgetKind): number {
  return kind === 'tokens' ? spent.totalTokens : spent[kind];
}

function formatSpent(kind: BudgetKind, spent: number): string {
  return kind === 'usd' ? `$${spent.toFixed(6)}` : String(spent);
}
