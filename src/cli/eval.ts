import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { TokenUsage } from '../llms/usage';
import { sumUsage, usageDelta } from '../llms/wrapped-usage';
import type { AgentMessage } from '../schema/agent-message';
import { type AgentLike, runAgent } from './agent-like';
import { readInputFile } from './batch';
import { CliError, messageOf } from './errors';
import { type EvalItem, type InvalidItem, isEvalItem, lineKey, readEvalLine } from './eval-data';
import {
  compareResults,
  comparisonText,
  type EvalComparison,
  type FailedItem,
  failuresText,
  writeJUnit,
} from './eval-report';
import { type EvalResult, type EvalUsage, readResults, resultText, type StoredResult } from './eval-results';
import { type EvalScorer, type NamedScorer, named } from './eval-scorer';
import { type EvalSummary, type EvalThreshold, isFailure, summarize, summaryTable } from './eval-summary';
import { createProgress } from './progress';

/** Options of {@link runEval}. */
export interface EvalOptions {
  /** The data file: one `{ "input": ..., "expected": ... }` object per line (see `lagent eval --help`). */
  input: string;
  /** The results file, appended to: one {@link EvalResult} per item (resumable). */
  output: string;
  /** Scores each reply (one scorer; or give `scorers`). */
  scorer?: EvalScorer | undefined;
  /**
   * The scorer's name, kept in each result: a stored reply scored by a scorer of another name is scored again
   * (the agent is not called). Without it, stored scores are kept whatever scored them.
   */
  scorerName?: string | undefined;
  /**
   * Several scorers, each kept by name in every result (`scores`); the first one is the `score` and the
   * `accuracy`. A stored reply that a scorer has not scored yet is scored by it (the agent is not called).
   */
  scorers?: readonly NamedScorer[] | undefined;
  /** An item whose score (any scorer's) is below this failed: it is listed, and fails in the JUnit report. @default 1 */
  passScore?: number | undefined;
  /** Least accuracies for the run to pass (`summary.passed`). */
  thresholds?: readonly EvalThreshold[] | undefined;
  /** An earlier results file to compare with, item by item (`summary.compare`). */
  compare?: string | undefined;
  /** Write a JUnit XML report there. */
  junit?: string | undefined;
  /** How many failed items the terminal lists with their diff. @default 10 */
  showFailures?: number | undefined;
  /** Items in flight at once. @default 4 */
  concurrency?: number | undefined;
  /** Show progress. @default true */
  progress?: boolean | undefined;
  /** Where progress and the summary table go. @default process.stderr */
  log?: (NodeJS.WritableStream & { isTTY?: boolean | undefined }) | undefined;
  /** Stops the run: calls in flight are aborted and not recorded, so the next run does them. */
  signal?: AbortSignal | undefined;
}

/** The models of the agent's tree (each once), for the usage they count per session. */
function modelsOf(agent: AgentLike): unknown[] {
  const named = (agent as { namedAgents?: () => Iterable<[string, unknown]> }).namedAgents;
  const nodes = typeof named === 'function' ? [...named.call(agent)].map(([, node]) => node) : [agent];
  const models = new Set<unknown>();
  for (const node of nodes) {
    const llm = (node as { llm?: unknown } | null)?.llm;
    if (llm !== null && typeof llm === 'object') models.add(llm);
  }
  return [...models];
}

function finite(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** The reply's `extraInfo.usage`, when the agent reported it. */
function replyUsage(reply: AgentMessage): EvalUsage | undefined {
  const usage = (reply.extraInfo as { usage?: Record<string, unknown> } | null | undefined)?.usage;
  if (usage === null || typeof usage !== 'object') return undefined;
  const totalTokens = finite(usage.totalTokens);
  if (totalTokens === undefined) return undefined;
  const result: EvalUsage = {
    promptTokens: finite(usage.promptTokens) ?? 0,
    completionTokens: finite(usage.completionTokens) ?? 0,
    totalTokens,
  };
  for (const name of [
    'modelCalls',
    'toolCalls',
    'usd',
    'cachedPromptTokens',
    'cacheWriteTokens',
    'reasoningTokens',
  ] as const) {
    const value = finite(usage[name]);
    if (value !== undefined) result[name] = value;
  }
  if (Array.isArray(usage.unpriced) && usage.unpriced.length > 0) {
    result.unpriced = usage.unpriced.filter((model): model is string => typeof model === 'string');
  }
  return result;
}

function sessionUsage(models: unknown[], sessionId: string): TokenUsage {
  const sum = sumUsage(models, (usage) => usage.getUsage(sessionId));
  // The cache and reasoning details, where the models report them.
  for (const model of models) {
    const usage = (model as { getUsage?(id: string): TokenUsage } | null)?.getUsage?.(sessionId);
    for (const name of ['cachedPromptTokens', 'cacheWriteTokens', 'reasoningTokens'] as const) {
      const value = usage?.[name];
      if (value) sum[name] = (sum[name] ?? 0) + value;
    }
  }
  return sum;
}

/** Usage added between two readings, its cache and reasoning details included. */
function usageAdded(before: TokenUsage, after: TokenUsage): TokenUsage | undefined {
  const delta = usageDelta(before, after);
  if (delta === undefined) return undefined;
  for (const name of ['cachedPromptTokens', 'cacheWriteTokens', 'reasoningTokens'] as const) {
    const added = (after[name] ?? 0) - (before[name] ?? 0);
    if (added > 0) delta[name] = added;
  }
  return delta;
}

function write(stream: WriteStream, id: string | undefined, result: EvalResult): void {
  stream.write(`${resultText(id, result)}\n`);
}

function end(stream: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('error', reject);
    stream.end(resolve);
  });
}

/** What to do with one item of the data file. */
type Step =
  | { kind: 'invalid'; item: InvalidItem }
  | { kind: 'run'; item: EvalItem }
  | { kind: 'rescore'; item: EvalItem; stored: StoredResult };

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'Error';
}

/** A scorer of the run: named ones keep their score by name; a single unnamed one is the legacy `score`. */
interface RunScorer {
  name: string | undefined;
  score: NamedScorer['score'];
}

/** The scores a stored result has by name; undefined for a result of an unnamed scorer. */
function storedScores(stored: StoredResult): Record<string, number | null> | undefined {
  if (stored.scores !== undefined && stored.scores !== null) return stored.scores;
  return stored.scorer === undefined ? undefined : { [stored.scorer]: stored.score };
}

/** Sums two usages (a judge's calls on one item). */
function addUsage(a: EvalUsage | undefined, b: EvalUsage | undefined): EvalUsage | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  const sum: EvalUsage = {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
  if (a.modelCalls !== undefined || b.modelCalls !== undefined)
    sum.modelCalls = (a.modelCalls ?? 0) + (b.modelCalls ?? 0);
  if (typeof a.usd === 'number' && typeof b.usd === 'number') sum.usd = a.usd + b.usd;
  const unpriced = [...new Set([...(a.unpriced ?? []), ...(b.unpriced ?? [])])];
  if (unpriced.length > 0) sum.unpriced = unpriced;
  return sum;
}

/**
 * The result of a reply once every scorer scored it (a score a stored result already has is kept), or with the
 * failing scorer's error (the reply, and the other scores, are kept either way).
 */
async function scored(
  scorers: readonly RunScorer[],
  result: Omit<EvalResult, 'score' | 'error'>,
  item: EvalItem,
  stored?: StoredResult,
): Promise<EvalResult> {
  const { line, input, expected, reply, latencyMs, usage } = result;
  const kept = stored === undefined || stored.error?.stage === 'scorer' ? undefined : storedScores(stored);
  const keptReasons = stored?.reasons ?? {};
  const scores: Record<string, number | null> = {};
  const reasons: Record<string, string> = {};
  let judgeUsage: EvalUsage | undefined = stored?.judgeUsage ?? undefined;
  let first: number | null = null;
  let error: EvalResult['error'] = null;
  for (const [index, scorer] of scorers.entries()) {
    const name = scorer.name;
    let value: number | null = name === undefined ? null : (kept?.[name] ?? null);
    if (value !== null && name !== undefined && keptReasons[name] !== undefined)
      reasons[name] = keptReasons[name]!;
    if (value === null) {
      try {
        const verdict = await scorer.score(reply ?? '', item.expected, item.record, item.input);
        value = verdict.score;
        if (name !== undefined && verdict.reason !== undefined) reasons[name] = verdict.reason;
        judgeUsage = addUsage(judgeUsage, verdict.usage);
      } catch (failure) {
        const which = scorers.length > 1 ? `the scorer ${name} failed` : 'the scorer failed';
        error ??= { stage: 'scorer', name: errorName(failure), message: `${which}: ${messageOf(failure)}` };
      }
    }
    if (name !== undefined) scores[name] = value;
    if (index === 0) first = value;
  }
  const names = scorers[0]?.name;
  return {
    line,
    input,
    expected,
    ...(names === undefined ? {} : { scorer: names }),
    reply,
    score: first,
    ...(names === undefined ? {} : { scores }),
    ...(Object.keys(reasons).length === 0 ? {} : { reasons }),
    latencyMs,
    usage,
    ...(judgeUsage === undefined ? {} : { judgeUsage }),
    error,
  };
}

/**
 * `lagent eval`: runs the agent on every item of a JSONL data file, `concurrency` at a time, each on its own
 * session, scores each reply, and appends one result line per item to the results file. Items already scored
 * there are skipped, so a stopped or killed run continues where it was; the summary covers every item.
 */
export async function runEval(agent: AgentLike, options: EvalOptions): Promise<EvalSummary> {
  const concurrency = options.concurrency ?? 4;
  const log = options.log ?? process.stderr;
  if (resolvePath(options.output) === resolvePath(options.input)) {
    throw new CliError('the results file must not be the data file');
  }
  const text = await readInputFile(options.input, 'data file');
  // Reading the results also repairs a last line a crash cut short.
  const results = await readResults(options.output);
  const scorers = scorersOf(options);
  const earlier =
    options.compare === undefined ? undefined : await readEarlier(options.compare, options.output);
  // Whether a stored result lacks a score of this run's scorers (a result of an unnamed scorer lacks none).
  const unscored = (stored: StoredResult) => {
    const scores = storedScores(stored);
    return (
      scores !== undefined && scorers.some((s) => s.name !== undefined && typeof scores[s.name] !== 'number')
    );
  };
  const keys: string[] = [];
  const lines: { key: string; line: number }[] = [];
  const steps: Step[] = [];
  const seen = new Set<string>();
  let skipped = 0;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed === '') return;
    let item = readEvalLine(trimmed, index + 1);
    if (seen.has(item.key)) {
      const line = index + 1;
      item = { line, key: lineKey(line), error: `duplicate id ${item.key}`, text: trimmed.slice(0, 1000) };
    }
    seen.add(item.key);
    keys.push(item.key);
    lines.push({ key: item.key, line: item.line });
    const stored = results.get(item.key);
    if (!isEvalItem(item)) {
      if (stored?.error?.stage === 'input' && stored.error.message === item.error) skipped++;
      else steps.push({ kind: 'invalid', item });
    } else if (stored !== undefined && stored.error === null && !unscored(stored)) skipped++;
    else if (
      typeof stored?.reply === 'string' &&
      (stored.error?.stage === 'scorer' || (stored.error === null && unscored(stored)))
    ) {
      steps.push({ kind: 'rescore', item, stored });
    } else steps.push({ kind: 'run', item });
  });

  const output = createWriteStream(options.output, { flags: 'a' });
  const models = modelsOf(agent);
  const signal = options.signal;
  const progress = await createProgress('eval', 'errors', steps.length, log, options.progress ?? true);
  let finished = 0;
  let errors = 0;

  /** The result of one step; undefined when the run was stopped during the agent's call. */
  const evaluate = async (step: Step): Promise<EvalResult | undefined> => {
    if (step.kind === 'invalid') {
      return {
        line: step.item.line,
        input: step.item.text,
        reply: null,
        score: null,
        latencyMs: null,
        usage: null,
        error: { stage: 'input', name: 'InvalidLine', message: step.item.error },
      };
    }
    const { item } = step;
    if (step.kind === 'rescore') {
      const { line: _line, input, expected, reply, latencyMs, usage } = step.stored;
      return scored(
        scorers,
        { line: item.line, input, expected, reply, latencyMs, usage },
        item,
        step.stored,
      );
    }
    const base = { line: item.line, input: item.input, expected: item.expected };
    const sessionId = item.key;
    const before = sessionUsage(models, sessionId);
    const started = performance.now();
    try {
      // `budget: {}` limits nothing and asks the agent to say what the call spent (tokens, cost).
      const reply = await runAgent(agent, item.message, { sessionId, signal, budget: {} });
      const latencyMs = Math.round(performance.now() - started);
      const usage = replyUsage(reply) ?? usageAdded(before, sessionUsage(models, sessionId)) ?? null;
      const content = typeof reply.content === 'string' ? reply.content : JSON.stringify(reply.content);
      return scored(scorers, { ...base, reply: content, latencyMs, usage }, item);
    } catch (error) {
      if (signal?.aborted) return undefined;
      return {
        ...base,
        reply: null,
        score: null,
        latencyMs: Math.round(performance.now() - started),
        usage: null,
        error: { stage: 'agent', name: errorName(error), message: messageOf(error) },
      };
    } finally {
      try {
        await agent.reset?.(sessionId);
      } catch {
        // freeing the session's memory is best effort
      }
    }
  };
  const run = async (step: Step) => {
    const result = await evaluate(step);
    if (result === undefined) return;
    write(output, step.item.id, result);
    results.set(step.item.key, { ...result, key: step.item.key });
    finished++;
    if (result.error !== null) errors++;
    progress.update(finished, errors);
  };
  let next = 0;
  const lane = async () => {
    while (next < steps.length && !signal?.aborted) await run(steps[next++]!);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, steps.length) }, lane));
  } finally {
    progress.stop();
    await end(output);
  }
  const interrupted = signal?.aborted === true && finished < steps.length;
  const done = keys.flatMap((key) => {
    const result = results.get(key);
    return result === undefined ? [] : [result];
  });
  const passScore = options.passScore ?? 1;
  const summary: EvalSummary & { compare?: EvalComparison } = summarize(
    keys.length,
    done,
    { ran: finished, skipped, interrupted },
    { names: scorers.map((s) => s.name), thresholds: options.thresholds, passScore },
  );
  const failed = new Map<string, FailedItem>();
  for (const result of done) {
    if (!isFailure(result, passScore)) continue;
    failed.set(result.key, {
      key: result.key,
      line: result.line,
      scores: result.scores ?? { [result.scorer ?? 'score']: result.score },
      expected: result.expected,
      reply: result.reply,
      error: result.error,
      ...(result.reasons === undefined ? {} : { reasons: result.reasons }),
    });
  }
  log.write(failuresText([...failed.values()], options.showFailures ?? 10));
  log.write(summaryTable(summary));
  if (earlier !== undefined) {
    summary.compare = compareResults(options.compare!, scorers[0]?.name, results, earlier, keys);
    log.write(comparisonText(summary.compare));
  }
  if (options.junit !== undefined)
    await writeJUnit(options.junit, options.input, lines, results, failed, summary);
  if (interrupted) log.write(`eval: stopped with ${summary.left} item(s) left: run again to continue\n`);
  return summary;
}

/** The scorers of a run: `scorers`, or the one `scorer` (named by `scorerName`, or not). */
function scorersOf(options: EvalOptions): RunScorer[] {
  if (options.scorers !== undefined && options.scorers.length > 0) {
    const names = options.scorers.map((s) => s.name);
    const twice = names.find((name, i) => names.indexOf(name) !== i);
    if (twice !== undefined) throw new CliError(`the scorer ${twice} is given twice`);
    return [...options.scorers];
  }
  if (options.scorer === undefined) throw new CliError('give a scorer (--scorer, or --judge)');
  const scorer = named(options.scorerName ?? '', options.scorer);
  return [{ name: options.scorerName, score: scorer.score }];
}

/** The earlier results file `--compare` names. */
async function readEarlier(path: string, output: string): Promise<Map<string, StoredResult>> {
  if (resolvePath(path) === resolvePath(output)) {
    throw new CliError("--compare needs an earlier results file, not this run's own (-o)");
  }
  if (!existsSync(path)) throw new CliError(`the results file to compare with is not found: ${path}`);
  return readResults(path, { repair: false });
}

/** Writes the summary as JSON to `path`. */
export async function writeSummary(path: string, summary: EvalSummary): Promise<void> {
  await writeFile(path, `${JSON.stringify(summary, null, 2)}\n`);
}
