import { scoresOf } from './eval-report';
import type { EvalResult } from './eval-results';

/** A `--threshold`: the least accuracy of a scorer (the first one when none is named) for the run to pass. */
export interface EvalThreshold {
  scorer?: string | undefined;
  min: number;
}

/** A threshold as it held. */
export interface ThresholdResult {
  scorer: string | undefined;
  min: number;
  accuracy: number;
  passed: boolean;
}

/** The figures of an eval over every item of the data file (this run's and earlier runs'). */
export interface EvalSummary {
  /** Items in the data file (invalid lines included). */
  items: number;
  /** Items with a result (scored, or with an error). */
  done: number;
  /** Items not run yet (a stopped run): `items - done`. */
  left: number;
  /** Items with a score. */
  scored: number;
  /** Items with an error (an invalid line, the agent's failure, a scorer's). */
  errors: number;
  /** Items below the pass score of a scorer, or with an error. */
  failed: number;
  /** The first scorer's mean score over the items done: an item with an error counts 0. */
  accuracy: number;
  /** Each scorer's accuracy (over the items done), by name, when the run named its scorers. */
  scorers?: Record<string, number> | undefined;
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
  /** The agent's cost in US dollars; null unless every item that reported usage gave its cost. */
  usd: number | null;
  /** What the LLM judge spent (apart from the agent), when a judge scored. */
  judge?: { tokens: number; usd: number | null } | undefined;
  /** Models without a known price (their tokens count, their cost does not): see `setModelPrice`. */
  unpriced?: string[] | undefined;
  /** The `--threshold`s, and whether each held. */
  thresholds?: ThresholdResult[] | undefined;
  /** False when a threshold did not hold. */
  passed: boolean;
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

/** Whether an item failed: it has an error, or a score below `passScore`. */
export function isFailure(result: EvalResult, passScore: number): boolean {
  if (result.error !== null) return true;
  return Object.values(scoresOf(result)).some((score) => score === null || score < passScore);
}

/** What a summary needs besides the results: the scorers' names (the first is the accuracy's), the thresholds. */
export interface SummaryOptions {
  names?: readonly (string | undefined)[] | undefined;
  thresholds?: readonly EvalThreshold[] | undefined;
  passScore?: number | undefined;
}

/**
 * Sums the results of every item done; `items` counts the data file's items, done or not. Accuracy is over the
 * items done (a stopped run's figures are those of what it finished; `left` says how many remain).
 */
export function summarize(
  items: number,
  results: readonly EvalResult[],
  run: { ran: number; skipped: number; interrupted: boolean },
  options: SummaryOptions = {},
): EvalSummary {
  const names = options.names?.filter((name): name is string => name !== undefined) ?? [];
  const passScore = options.passScore ?? 1;
  let scored = 0;
  let errors = 0;
  let failed = 0;
  let sum = 0;
  const sums = new Map<string, number>(names.map((name) => [name, 0]));
  let tokens: EvalSummary['tokens'] = null;
  let usd: number | null = 0;
  let judge: { tokens: number; usd: number | null } | undefined;
  const unpriced = new Set<string>();
  const latencies: number[] = [];
  for (const result of results) {
    if (result.error !== null) errors++;
    if (isFailure(result, passScore)) failed++;
    if (result.score !== null) {
      scored++;
      sum += result.score;
    }
    if (names.length > 0) {
      const scores = scoresOf(result);
      for (const name of names) sums.set(name, sums.get(name)! + (scores[name] ?? 0));
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
      for (const model of result.usage.unpriced ?? []) unpriced.add(model);
    }
    const spent = result.judgeUsage;
    if (spent !== undefined && spent !== null) {
      judge ??= { tokens: 0, usd: 0 };
      judge.tokens += spent.totalTokens;
      judge.usd = typeof spent.usd === 'number' && judge.usd !== null ? judge.usd + spent.usd : null;
      for (const model of spent.unpriced ?? []) unpriced.add(model);
    }
  }
  latencies.sort((a, b) => a - b);
  const done = results.length;
  const mean = (total: number) => (done === 0 ? 0 : total / done);
  const scorers =
    names.length > 0 ? Object.fromEntries(names.map((name) => [name, mean(sums.get(name)!)])) : undefined;
  const thresholds = options.thresholds?.map(({ scorer, min }) => {
    const accuracy = scorer === undefined ? mean(sum) : (scorers?.[scorer] ?? 0);
    return { scorer, min, accuracy, passed: accuracy >= min };
  });
  return {
    items,
    done,
    left: items - done,
    scored,
    errors,
    failed,
    accuracy: mean(sum),
    ...(scorers === undefined ? {} : { scorers }),
    tokens,
    usd: tokens === null ? null : usd,
    ...(judge === undefined ? {} : { judge }),
    ...(unpriced.size === 0 ? {} : { unpriced: [...unpriced].sort() }),
    ...(thresholds === undefined || thresholds.length === 0 ? {} : { thresholds }),
    passed: thresholds?.every((t) => t.passed) ?? true,
    latencyMs:
      latencies.length === 0 ? null : { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
    ...run,
  };
}

/** The summary as a two-column table for the terminal. */
export function summaryTable(summary: EvalSummary): string {
  const tokens = summary.tokens;
  const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
  const judge = summary.judge;
  const unpriced = summary.unpriced === undefined ? '' : ` (no price for ${summary.unpriced.join(', ')})`;
  const rows: [string, string][] = [
    ['items', String(summary.items)],
    ['done', summary.left > 0 ? `${summary.done} (${summary.left} left)` : String(summary.done)],
    ['scored', String(summary.scored)],
    ['accuracy', `${percent(summary.accuracy)}${summary.left > 0 ? ` of ${summary.done} done` : ''}`],
    ...Object.entries(summary.scorers ?? {})
      .slice(summary.scorers !== undefined && Object.keys(summary.scorers).length > 1 ? 0 : 1)
      .map(([name, accuracy]): [string, string] => [`  ${name}`, percent(accuracy)]),
    ['errors', String(summary.errors)],
    ['failed', String(summary.failed)],
    ['tokens prompt', tokens ? String(tokens.prompt) : '-'],
    ['tokens completion', tokens ? String(tokens.completion) : '-'],
    ['tokens total', tokens ? String(tokens.total) : '-'],
    // Shown when a provider reported them.
    ...(tokens?.cached ? [['tokens cached prompt', String(tokens.cached)] as [string, string]] : []),
    ...(tokens?.reasoning ? [['tokens reasoning', String(tokens.reasoning)] as [string, string]] : []),
    ['cost USD', `${summary.usd === null ? '-' : summary.usd.toFixed(4)}${unpriced}`],
    ...(judge === undefined
      ? []
      : ([
          ['judge tokens', String(judge.tokens)],
          ['judge cost USD', judge.usd === null ? '-' : judge.usd.toFixed(4)],
        ] as [string, string][])),
    ['latency p50 ms', summary.latencyMs ? String(Math.round(summary.latencyMs.p50)) : '-'],
    ['latency p95 ms', summary.latencyMs ? String(Math.round(summary.latencyMs.p95)) : '-'],
    ...(summary.thresholds ?? []).map(({ scorer, min, accuracy, passed }): [string, string] => [
      `threshold${scorer === undefined ? '' : ` ${scorer}`}`,
      `${passed ? 'passed' : 'FAILED'}: ${percent(accuracy)} ${passed ? '>=' : '<'} ${percent(min)}`,
    ]),
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  return `${rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n')}\n`;
}
