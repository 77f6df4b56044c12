import type { EvalResult } from './eval-results';

/** The figures of an eval over every item of the data file (this run's and earlier runs'). */
export interface EvalSummary {
  /** Items in the data file (invalid lines included). */
  items: number;
  /** Items with a score. */
  scored: number;
  /** Items with an error (an invalid line, the agent's failure, the scorer's). */
  errors: number;
  /** The sum of the scores over `items`: an item with an error counts 0. */
  accuracy: number;
  /** Token counts summed over the items that reported usage; null when none did. */
  tokens: {
    prompt: number;
    completion: number;
    total: number;
    /** Prompt tokens read from prompt caches, when any item reported some. */
    cached?: number | undefined;
    /** Completion tokens spent reasoning, when any item reported some. */
    reasoning?: number | undefined;
  } | null;
  /** Cost in US dollars; null unless every item that reported usage gave its cost. */
  usd: number | null;
  /** Percentiles (nearest rank) of the agent's calls; null when none ran. */
  latencyMs: { p50: number; p95: number } | null;
  /** Items run in this run (scored again from a stored reply included). */
  ran: number;
  /** Items whose result was already in the results file. */
  skipped: number;
  /** Whether the run was stopped before the end (the figures then cover what is done). */
  interrupted: boolean;
}

/** The `p`-th percentile (0-100) of sorted values, nearest rank. */
export function percentile(sorted: readonly number[], p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/** Sums the results of every item; `items` counts the data file's items, done or not. */
export function summarize(
  items: number,
  results: readonly EvalResult[],
  run: { ran: number; skipped: number; interrupted: boolean },
): EvalSummary {
  let scored = 0;
  let errors = 0;
  let sum = 0;
  let tokens: EvalSummary['tokens'] = null;
  let usd: number | null = 0;
  const latencies: number[] = [];
  for (const result of results) {
    if (result.error !== null) errors++;
    if (result.score !== null) {
      scored++;
      sum += result.score;
    }
    if (result.latencyMs !== null) latencies.push(result.latencyMs);
    if (result.usage !== null) {
      tokens ??= { prompt: 0, completion: 0, total: 0 };
      tokens.prompt += result.usage.promptTokens;
      tokens.completion += result.usage.completionTokens;
      tokens.total += result.usage.totalTokens;
      if (result.usage.cachedPromptTokens)
        tokens.cached = (tokens.cached ?? 0) + result.usage.cachedPromptTokens;
      if (result.usage.reasoningTokens)
        tokens.reasoning = (tokens.reasoning ?? 0) + result.usage.reasoningTokens;
      usd = typeof result.usage.usd === 'number' && usd !== null ? usd + result.usage.usd : null;
    }
  }
  latencies.sort((a, b) => a - b);
  return {
    items,
    scored,
    errors,
    accuracy: items === 0 ? 0 : sum / items,
    tokens,
    usd: tokens === null ? null : usd,
    latencyMs:
      latencies.length === 0 ? null : { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
    ...run,
  };
}

/** The summary as a two-column table for the terminal. */
export function summaryTable(summary: EvalSummary): string {
  const tokens = summary.tokens;
  const rows: [string, string][] = [
    ['items', String(summary.items)],
    ['scored', String(summary.scored)],
    ['accuracy', `${(summary.accuracy * 100).toFixed(1)}%`],
    ['errors', String(summary.errors)],
    ['tokens prompt', tokens ? String(tokens.prompt) : '-'],
    ['tokens completion', tokens ? String(tokens.completion) : '-'],
    ['tokens total', tokens ? String(tokens.total) : '-'],
    // Shown when a provider reported them.
    ...(tokens?.cached ? [['tokens cached prompt', String(tokens.cached)] as [string, string]] : []),
    ...(tokens?.reasoning ? [['tokens reasoning', String(tokens.reasoning)] as [string, string]] : []),
    ['cost USD', summary.usd === null ? '-' : summary.usd.toFixed(4)],
    ['latency p50 ms', summary.latencyMs ? String(Math.round(summary.latencyMs.p50)) : '-'],
    ['latency p95 ms', summary.latencyMs ? String(Math.round(summary.latencyMs.p95)) : '-'],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  return `${rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n')}\n`;
}
