/*
 * Model prices, for `budget: { usd }` and the cost on a budgeted reply's `extraInfo.usage`. A small table of
 * list prices (US dollars per million tokens, standard tier, as the providers published them); a model name
 * matches its longest entry that it starts with (`gpt-4o-2024-08-06` is `gpt-4o`). Prices change: set your
 * own with `setModelPrice`, which also adds models the table lacks.
 */

/**
 * A model's price: US dollars per million prompt (`input`) and completion (`output`) tokens, and, where the
 * provider caches prompts, per million prompt tokens read from the cache (`cachedInput`) and written to it
 * (`cacheWrite`, Anthropic's 5-minute cache).
 */
export interface ModelPrice {
  input: number;
  output: number;
  cachedInput?: number | undefined;
  cacheWrite?: number | undefined;
}

const PRICES = new Map<string, ModelPrice>([
  ['gpt-5', { input: 1.25, output: 10, cachedInput: 0.125 }],
  ['gpt-5-mini', { input: 0.25, output: 2, cachedInput: 0.025 }],
  ['gpt-5-nano', { input: 0.05, output: 0.4, cachedInput: 0.005 }],
  ['gpt-4.1', { input: 2, output: 8, cachedInput: 0.5 }],
  ['gpt-4.1-mini', { input: 0.4, output: 1.6, cachedInput: 0.1 }],
  ['gpt-4.1-nano', { input: 0.1, output: 0.4, cachedInput: 0.025 }],
  ['gpt-4o', { input: 2.5, output: 10, cachedInput: 1.25 }],
  ['gpt-4o-mini', { input: 0.15, output: 0.6, cachedInput: 0.075 }],
  ['o3', { input: 2, output: 8, cachedInput: 0.5 }],
  ['o3-mini', { input: 1.1, output: 4.4, cachedInput: 0.55 }],
  ['o4-mini', { input: 1.1, output: 4.4, cachedInput: 0.275 }],
  // Anthropic: a cache read costs a tenth of the input price, a (5-minute) cache write 1.25 times it.
  ['claude-opus-4', { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 }],
  ['claude-opus-4-1', { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 }],
  ['claude-opus-4-5', { input: 5, output: 25, cachedInput: 0.5, cacheWrite: 6.25 }],
  ['claude-sonnet-4', { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 }],
  ['claude-haiku-4-5', { input: 1, output: 5, cachedInput: 0.1, cacheWrite: 1.25 }],
  ['claude-3-5-haiku', { input: 0.8, output: 4, cachedInput: 0.08, cacheWrite: 1 }],
  ['gemini-2.5-pro', { input: 1.25, output: 10, cachedInput: 0.125 }],
  ['gemini-2.5-flash', { input: 0.3, output: 2.5, cachedInput: 0.03 }],
  ['gemini-2.5-flash-lite', { input: 0.1, output: 0.4, cachedInput: 0.01 }],
  ['deepseek-chat', { input: 0.28, output: 0.42, cachedInput: 0.028 }],
  ['deepseek-reasoner', { input: 0.28, output: 0.42, cachedInput: 0.028 }],
]);

/** Sets (or adds) a model's price; `null` removes it. Applies to names starting with `model`, too. */
export function setModelPrice(model: string, price: ModelPrice | null): void {
  if (price === null) {
    PRICES.delete(model);
    return;
  }
  if (
    !(price.input >= 0) ||
    !(price.output >= 0) ||
    (price.cachedInput !== undefined && !(price.cachedInput >= 0)) ||
    (price.cacheWrite !== undefined && !(price.cacheWrite >= 0))
  ) {
    throw new RangeError(
      `setModelPrice(${JSON.stringify(model)}): input, output, cachedInput and cacheWrite must be numbers >= 0`,
    );
  }
  const entry: ModelPrice = { input: price.input, output: price.output };
  if (price.cachedInput !== undefined) entry.cachedInput = price.cachedInput;
  if (price.cacheWrite !== undefined) entry.cacheWrite = price.cacheWrite;
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

/** What `promptTokens` and `completionTokens` cost at `price`, in US dollars. */
export function costOf(price: ModelPrice, promptTokens: number, completionTokens: number): number {
  return (promptTokens * price.input + completionTokens * price.output) / 1_000_000;
}
