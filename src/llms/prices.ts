/*
 * Model prices, for `budget: { usd }` and the cost on a budgeted reply's `extraInfo.usage`. A small table of
 * list prices (US dollars per million tokens, standard tier, as the providers published them); a model name
 * matches its longest entry that it starts with (`gpt-4o-2024-08-06` is `gpt-4o`). Prices change: set your
 * own with `setModelPrice`, which also adds models the table lacks.
 */

/** A model's price: US dollars per million prompt (`input`) and completion (`output`) tokens. */
export interface ModelPrice {
  input: number;
  output: number;
}

const PRICES = new Map<string, ModelPrice>([
  ['gpt-5', { input: 1.25, output: 10 }],
  ['gpt-5-mini', { input: 0.25, output: 2 }],
  ['gpt-5-nano', { input: 0.05, output: 0.4 }],
  ['gpt-4.1', { input: 2, output: 8 }],
  ['gpt-4.1-mini', { input: 0.4, output: 1.6 }],
  ['gpt-4.1-nano', { input: 0.1, output: 0.4 }],
  ['gpt-4o', { input: 2.5, output: 10 }],
  ['gpt-4o-mini', { input: 0.15, output: 0.6 }],
  ['o3', { input: 2, output: 8 }],
  ['o3-mini', { input: 1.1, output: 4.4 }],
  ['o4-mini', { input: 1.1, output: 4.4 }],
  ['claude-opus-4', { input: 15, output: 75 }],
  ['claude-opus-4-1', { input: 15, output: 75 }],
  ['claude-opus-4-5', { input: 5, output: 25 }],
  ['claude-sonnet-4', { input: 3, output: 15 }],
  ['claude-haiku-4-5', { input: 1, output: 5 }],
  ['claude-3-5-haiku', { input: 0.8, output: 4 }],
  ['gemini-2.5-pro', { input: 1.25, output: 10 }],
  ['gemini-2.5-flash', { input: 0.3, output: 2.5 }],
  ['gemini-2.5-flash-lite', { input: 0.1, output: 0.4 }],
]);

/** Sets (or adds) a model's price; `null` removes it. Applies to names starting with `model`, too. */
export function setModelPrice(model: string, price: ModelPrice | null): void {
  if (price === null) {
    PRICES.delete(model);
    return;
  }
  if (!(price.input >= 0) || !(price.output >= 0)) {
    throw new RangeError(`setModelPrice(${JSON.stringify(model)}): input and output must be numbers >= 0`);
  }
  PRICES.set(model, { input: price.input, output: price.output });
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
