import { createWriteStream, type WriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import type { TokenUsage } from '../llms/usage';
import { sumUsage, usageDelta } from '../llms/wrapped-usage';
import type { AgentMessage } from '../schema/agent-message';
import { type AgentLike, runAgent } from './agent-like';
import { readInputFile } from './batch';
import { CliError, messageOf } from './errors';
import { type EvalItem, type InvalidItem, isEvalItem, lineKey, readEvalLine } from './eval-data';
import { type EvalResult, type EvalUsage, readResults, resultText, type StoredResult } from './eval-results';
import { type EvalScorer, scoreValue } from './eval-scorer';
import { type EvalSummary, summarize, summaryTable } from './eval-summary';
import { createProgress } from './progress';

/** Options of {@link runEval}. */
export interface EvalOptions {
  /** The data file: one `{ "input": ..., "expected": ... }` object per line (see `lagent eval --help`). */
  input: string;
  /** The results file, appended to: one {@link EvalResult} per item (resumable). */
  output: string;
  /** Scores each reply. */
  scorer: EvalScorer;
  /**
   * The scorer's name, kept in each result: a stored reply scored by a scorer of another name is scored again
   * (the agent is not called). Without it, stored scores are kept whatever scored them.
   */
  scorerName?: string | undefined;
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

async function score(scorer: EvalScorer, reply: string, item: EvalItem): Promise<number> {
  return scoreValue(await scorer(reply, item.expected, item.record));
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'Error';
}

/** The result of a reply once scored, or with the scorer's error (the reply is kept either way). */
async function scored(
  scorer: { score: EvalScorer; name?: string | undefined },
  result: Omit<EvalResult, 'score' | 'error'>,
  item: EvalItem,
): Promise<EvalResult> {
  const { line, input, expected, reply, latencyMs, usage } = result;
  const ordered = {
    line,
    input,
    expected,
    reply,
    ...(scorer.name === undefined ? {} : { scorer: scorer.name }),
  };
  try {
    const value = await score(scorer.score, reply ?? '', item);
    return { ...ordered, score: value, latencyMs, usage, error: null };
  } catch (error) {
    return {
      ...ordered,
      score: null,
      latencyMs,
      usage,
      error: { stage: 'scorer', name: errorName(error), message: `the scorer failed: ${messageOf(error)}` },
    };
  }
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
  const scorer = { score: options.scorer, name: options.scorerName };
  const scoredByAnother = (stored: StoredResult) =>
    scorer.name !== undefined && stored.scorer !== undefined && stored.scorer !== scorer.name;
  const keys: string[] = [];
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
    const stored = results.get(item.key);
    if (!isEvalItem(item)) {
      if (stored?.error?.stage === 'input' && stored.error.message === item.error) skipped++;
      else steps.push({ kind: 'invalid', item });
    } else if (stored !== undefined && stored.error === null && !scoredByAnother(stored)) skipped++;
    else if (
      typeof stored?.reply === 'string' &&
      (stored.error?.stage === 'scorer' || (stored.error === null && scoredByAnother(stored)))
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
      const { key: _key, ...stored } = step.stored;
      return scored(scorer, { ...stored, line: item.line }, item);
    }
    const base = { line: item.line, input: item.input, expected: item.expected };
    const sessionId = item.key;
    const before = sessionUsage(models, sessionId);
    const started = performance.now();
    try {
      const reply = await runAgent(agent, item.message, { sessionId, signal });
      const latencyMs = Math.round(performance.now() - started);
      const usage = replyUsage(reply) ?? usageAdded(before, sessionUsage(models, sessionId)) ?? null;
      const content = typeof reply.content === 'string' ? reply.content : JSON.stringify(reply.content);
      return scored(scorer, { ...base, reply: content, latencyMs, usage }, item);
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
  const summary = summarize(
    keys.length,
    keys.flatMap((key) => {
      const result = results.get(key);
      return result === undefined ? [] : [result];
    }),
    { ran: finished, skipped, interrupted },
  );
  log.write(summaryTable(summary));
  if (interrupted) log.write('eval: stopped: run again to continue\n');
  return summary;
}

/** Writes the summary as JSON to `path`. */
export async function writeSummary(path: string, summary: EvalSummary): Promise<void> {
  await writeFile(path, `${JSON.stringify(summary, null, 2)}\n`);
}
