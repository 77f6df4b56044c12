import type { TokenUsage } from './usage';

/*
 * Model prices, for `budget: { usd }` and the cost on a budgeted reply's `extraInfo.usage`. A small table of
 * list prices (US dollars per million tokens, standard tier, as the providers published them); a model name
 * matches its longest entry that it starts with (`gpt-4o-2024-08-06` is `gpt-4o`). Prices change: set your
 * own with `setModelPrice`, which also adds models the table lacks. Reasoning tokens are completion tokens
 * (every provider bills them as output); prompt tokens read from or written to a provider's prompt cache
 * are billed at the cache rates where the table has them, else as input.
 */

/**
 * A model's price: US dollars per million prompt (`input`) and completion (`output`) tokens, and per
 * million prompt tokens read from (`cacheRead`) or written to (`cacheWrite`) the provider's prompt cache.
 */
export interface ModelPrice {
  input: number;
  output: number;
  /** Cached prompt tokens read (OpenAI's cached input, Anthropic's cache reads). @default input */
  cacheRead?: number | undefined;
  /** Prompt tokens written to the cache (Anthropic's 5-minute cache writes, above the input rate). @default input */
  cacheWrite?: number | undefined;
}

const PRICES = new Map<string, ModelPrice>([
  ['gpt-5', { input: 1.25, output: 10, cacheRead: 0.125 }],
  ['gpt-5-mini', { input: 0.25, output: 2, cacheRead: 0.025 }],
  ['gpt-5-nano', { input: 0.05, output: 0.4, cacheRead: 0.005 }],
  ['gpt-4.1', { input: 2, output: 8, cacheRead: 0.5 }],
  ['gpt-4.1-mini', { input: 0.4, output: 1.6, cacheRead: 0.1 }],
  ['gpt-4.1-nano', { input: 0.1, output: 0.4, cacheRead: 0.025 }],
  ['gpt-4o', { input: 2.5, output: 10, cacheRead: 1.25 }],
  ['gpt-4o-mini', { input: 0.15, output: 0.6, cacheRead: 0.075 }],
  ['o3', { input: 2, output: 8, cacheRead: 0.5 }],
  ['o3-mini', { input: 1.1, output: 4.4, cacheRead: 0.55 }],
  ['o4-mini', { input: 1.1, output: 4.4, cacheRead: 0.275 }],
  // Anthropic: cache reads at a tenth of the input rate, 5-minute cache writes at 1.25 times it.
  ['claude-opus-4', { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 }],
  ['claude-opus-4-1', { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 }],
  ['claude-opus-4-5', { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 }],
  ['claude-sonnet-4', { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }],
  ['claude-haiku-4-5', { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 }],
  ['claude-3-5-haiku', { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 }],
  ['gemini-2.5-pro', { input: 1.25, output: 10, cacheRead: 0.125 }],
  ['gemini-2.5-flash', { input: 0.3, output: 2.5, cacheRead: 0.03 }],
  ['gemini-2.5-flash-lite', { input: 0.1, output: 0.4, cacheRead: 0.01 }],
  ['deepseek-chat', { input: 0.28, output: 0.42, cacheRead: 0.028 }],
  ['deepseek-reasoner', { input: 0.28, output: 0.42, cacheRead: 0.028 }],
]);

/** Sets (or adds) a model's price; `null` removes it. Applies to names starting with `model`, too. */
export function setModelPrice(model: string, price: ModelPrice | null): void {
  if (price === null) {
    PRICES.delete(model);
    return;
  }
  const { input, output, cacheRead, cacheWrite } = price;
  if (
    !(isRate(input) && isRate(output)) ||
    (cacheRead !== undefined && !isRate(cacheRead)) ||
    (cacheWrite !== undefined && !isRate(cacheWrite))
  ) {
    throw new RangeError(
      `setModelPrice(${JSON.stringify(model)}): input, output, cacheRead and cacheWrite must be finite numbers >= 0`,
    );
  }
  const entry: ModelPrice = { input, output };
  if (cacheRead !== undefined) entry.cacheRead = cacheRead;
  if (cacheWrite !== undefined) entry.cacheWrite = cacheWrite;
  PRICES.set(model, entry);
}

/** A model's price: its longest table entry that its name starts with; undefined when none. */
export function modelPrice(model: string | undefined): ModelPrice | undefined {
  if (model === undefined) return undefined;
  const exact = PRICES.get(model);
  if (exact !== undefined) return exact;
  let best: string | undefined;
  for (const name of PRICES.keys()) {
    if (model.startsWith(name) && (best === undefined || name.length > best.length)) best = name;
  }
  return best === undefined ? undefined : PRICES.get(best);
}

function isRate(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/**
 * What `promptTokens` and `completionTokens` cost at `price`, in US dollars; `cacheRead` and `cacheWrite` of
 * the prompt tokens at the cache rates (each as input when the price has none).
 */
export function costOf(
  price: ModelPrice,
  promptTokens: number,
  completionTokens: number,
  cacheRead = 0,
  cacheWrite = 0,
): number {
  const uncached = Math.max(0, promptTokens - cacheRead - cacheWrite);
  return (
    (uncached * price.input +
      cacheRead * (price.cacheRead ?? price.input) +
      cacheWrite * (price.cacheWrite ?? price.input) +
      completionTokens * price.output) /
    1_000_000
  );
}

/** What a request's reported usage cost at `price`, in US dollars (cache reads and writes at their rates). */
export function costOfUsage(price: ModelPrice, usage: TokenUsage): number {
  return costOf(
    price,
    usage.promptTokens,
    usage.completionTokens,
    usage.cachedPromptTokens ?? 0,
    usage.cacheWriteTokens ?? 0,
  );
}

/** The highest rate a prompt token may be billed at: input, or a cache write when that costs more. */
export function worstInputRate(price: ModelPrice): number {
  return Math.max(price.input, price.cacheWrite ?? 0);
}
