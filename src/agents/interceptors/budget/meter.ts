import { BudgetExceededError, type BudgetKind, ConfigurationError } from '../../../schema/errors';

/*
 * Budgets. A call given `budget` opens a Meter; the calls made inside it (sub-agents, models, executors,
 * tools) find it through their frame, as they find the call's signal. A model or tool call asks the meter
 * first: one that could pass a limit is not made (`BudgetExceededError`); a model request holds its worst
 * case (prompt and capped completion) until it settles, then what it spent is added. A sub-call with a
 * budget of its own opens a meter inside its caller's: both limits hold, and what it spends counts in both.
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

/**
 * What asks a meter for room: says, when it is refused, what it was (`a model request (a prompt of 120
 * tokens ...)`). An object rather than a string so that nothing is built unless a limit refuses.
 */
export interface Asker {
  describe(kind: BudgetKind): string;
}

/** Relative slack of a limit's comparison: sums of dollar amounts are not exact in binary. */
const SLACK = 1e-12;

function passes(total: number, limit: number): boolean {
  return total > limit + limit * SLACK;
}

/**
 * The spending of one budgeted call (and of everything made inside it). Work in flight holds what it may
 * spend at most (a model request its worst case, a remote call what it was allowed): a limit refuses what
 * would pass it counting the holds, so concurrent branches never spend the same room. A hold is released
 * when its work settles, and what the work really spent is added.
 */
export class Meter {
  readonly spent: CallUsage = {
    promptTokens: 0,
    completionTokens: 0,
    totalTokens: 0,
    modelCalls: 0,
    toolCalls: 0,
    usd: 0,
  };
  /** What work in flight holds, of each kind. */
  readonly held: Record<BudgetKind, number> = { tokens: 0, usd: 0, modelCalls: 0, toolCalls: 0 };

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
   * The room left of `kind` for new work: the tightest, over this meter and the enclosing ones, of the limit
   * less what was spent and what work in flight holds; `Infinity` when nothing limits it.
   */
  left(kind: BudgetKind): number {
    let left = Number.POSITIVE_INFINITY;
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const limit = meter.limits[kind];
      if (limit === undefined) continue;
      const rest = limit - spentOn(meter.spent, kind) - meter.held[kind];
      if (rest < left) left = rest;
    }
    return Math.max(left, 0);
  }

  /**
   * Before a model request (or another attempt of one): refused when one more request, or holding its worst
   * case (`tokens`, `usd`) beside what was spent and what other work holds, would pass a limit here or in an
   * enclosing meter. Counts the request and holds its worst case.
   */
  beginModel(tokens: number, usd: number, asker: Asker): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const { limits, spent, held } = meter;
      if (
        limits.modelCalls !== undefined &&
        passes(spent.modelCalls + held.modelCalls + 1, limits.modelCalls)
      )
        throw meter.#refusal('modelCalls', asker);
      if (limits.tokens !== undefined && passes(spent.totalTokens + held.tokens + tokens, limits.tokens))
        throw meter.#refusal('tokens', asker);
      if (limits.usd !== undefined && passes(spent.usd + held.usd + usd, limits.usd))
        throw meter.#refusal('usd', asker);
    }
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      meter.spent.modelCalls++;
      meter.held.tokens += tokens;
      meter.held.usd += usd;
    }
  }

  /**
   * Holds room for work in flight, here and in every enclosing meter: refused, holding nothing, when it would
   * pass a limit counting what was spent and what other work holds.
   */
  hold(tokens: number, usd: number, modelCalls: number, toolCalls: number, asker: Asker): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const { limits, spent, held } = meter;
      if (limits.tokens !== undefined && passes(spent.totalTokens + held.tokens + tokens, limits.tokens))
        throw meter.#refusal('tokens', asker);
      if (limits.usd !== undefined && passes(spent.usd + held.usd + usd, limits.usd))
        throw meter.#refusal('usd', asker);
      if (
        limits.modelCalls !== undefined &&
        passes(spent.modelCalls + held.modelCalls + modelCalls, limits.modelCalls)
      )
        throw meter.#refusal('modelCalls', asker);
      if (
        limits.toolCalls !== undefined &&
        passes(spent.toolCalls + held.toolCalls + toolCalls, limits.toolCalls)
      )
        throw meter.#refusal('toolCalls', asker);
    }
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const held = meter.held;
      held.tokens += tokens;
      held.usd += usd;
      held.modelCalls += modelCalls;
      held.toolCalls += toolCalls;
    }
  }

  /** Gives back what {@link hold} held. */
  release(tokens: number, usd: number, modelCalls: number, toolCalls: number): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const held = meter.held;
      held.tokens -= tokens;
      held.usd -= usd;
      held.modelCalls -= modelCalls;
      held.toolCalls -= toolCalls;
    }
  }

  /** Adds a model request's tokens and cost (`usd` undefined: the model has no known price). */
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

  /**
   * After work settled: refused when what it really spent passed a limit (it used more than was held for it:
   * a provider that counted more prompt tokens than the local count, a model that ignored its completion
   * cap, retries a sync client made in its worker).
   */
  checkSpent(asker: Asker): void {
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const { limits, spent } = meter;
      if (limits.tokens !== undefined && passes(spent.totalTokens, limits.tokens))
        throw meter.#refusal('tokens', asker, true);
      if (limits.usd !== undefined && passes(spent.usd, limits.usd)) throw meter.#refusal('usd', asker, true);
      if (limits.modelCalls !== undefined && passes(spent.modelCalls, limits.modelCalls))
        throw meter.#refusal('modelCalls', asker, true);
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
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent) {
      const limit = meter.limits.toolCalls;
      if (limit !== undefined && passes(meter.spent.toolCalls + meter.held.toolCalls + 1, limit))
        throw meter.#refusal('toolCalls', TOOL_CALL);
    }
    for (let meter: Meter | undefined = this; meter !== undefined; meter = meter.parent)
      meter.spent.toolCalls++;
  }

  /** Adds what a call made elsewhere (a remote agent) spent: numbers checked by the caller (>= 0, finite). */
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

  /** What is left of every limit set here or in an enclosing meter (the tightest of each), net of holds. */
  remaining(): Budget {
    const left: Budget = {};
    for (const kind of KINDS) if (this.isLimited(kind)) left[kind] = this.left(kind);
    return left;
  }

  /** A copy of what was spent. */
  usage(): CallUsage {
    const usage = { ...this.spent };
    if (usage.unpriced) usage.unpriced = [...usage.unpriced];
    else delete usage.unpriced;
    return usage;
  }

  #refusal(kind: BudgetKind, asker: Asker, passed = false): BudgetExceededError {
    const limit = this.limits[kind]!;
    const spent = spentOn(this.spent, kind);
    const held = this.held[kind];
    const holding = held > 0 ? `, ${formatAmount(kind, held)} held by work in flight` : '';
    const message = passed
      ? `${this.owner}: the ${kind} budget (${limit}) was passed by ${asker.describe(kind)}: ${formatAmount(kind, spent)} spent`
      : `${this.owner}: the ${kind} budget (${limit}) would be passed by ${asker.describe(kind)}: ${formatAmount(kind, spent)} spent so far${holding}`;
    return new BudgetExceededError({ message, budget: kind, spent, limit });
  }
}

const TOOL_CALL: Asker = { describe: () => 'a tool call' };

function spentOn(spent: CallUsage, kind: BudgetKind): number {
  return kind === 'tokens' ? spent.totalTokens : spent[kind];
}

/** An amount of `kind` as messages show it: dollars to the micro-dollar, the others as they are. */
export function formatAmount(kind: BudgetKind, amount: number): string {
  return kind === 'usd' ? `$${amount.toFixed(6)}` : String(amount);
}
