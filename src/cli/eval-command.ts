import { AsyncGPTAPI } from '../llms/async-gpt-api';
import type { AgentLike } from './agent-like';
import { DEFAULT_MODEL } from './agent-source';
import { CliError } from './errors';
import { runEval, writeSummary } from './eval';
import { judgeScorer, readRubric } from './eval-judge';
import { loadNamedScorer, type NamedScorer } from './eval-scorer';
import type { EvalThreshold } from './eval-summary';

/** The flags of `lagent eval`. */
export interface EvalCommandOptions {
  /** `--scorer`, once or more. */
  scorer?: string[] | undefined;
  /** `--judge`: the rubric of the LLM-judge scorer (its text, or @file). */
  judge?: string | undefined;
  judgeModel?: string | undefined;
  judgeBaseUrl?: string | undefined;
  judgeApiKey?: string | undefined;
  /** The agent's model flags, which the judge's default to. */
  model?: string | undefined;
  baseUrl?: string | undefined;
  apiKey?: string | undefined;
  threshold?: string[] | undefined;
  passScore?: number | undefined;
  compare?: string | undefined;
  junit?: string | undefined;
  showFailures?: number | undefined;
  output: string;
  concurrency: number;
  summaryJson?: string | undefined;
  progress: boolean;
}

/** A `--threshold`: `0.8` (the first scorer's accuracy) or `name=0.8`; 80% is read as 0.8. */
export function parseThreshold(text: string, scorers: readonly string[]): EvalThreshold {
  const at = text.lastIndexOf('=');
  const scorer = at < 0 ? undefined : text.slice(0, at).trim();
  const raw = (at < 0 ? text : text.slice(at + 1)).trim();
  const value = raw.endsWith('%') ? Number(raw.slice(0, -1)) / 100 : Number(raw);
  if (raw === '' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new CliError(`--threshold ${text}: the least accuracy is a number from 0 to 1 (or a percentage)`);
  }
  if (scorer !== undefined && !scorers.includes(scorer)) {
    throw new CliError(
      `--threshold ${text}: no scorer is named ${scorer} (the scorers: ${scorers.join(', ')})`,
    );
  }
  return { scorer, min: value };
}

/** The LLM judge of `--judge`: its model is `--judge-model` (else the agent's), at the agent's API unless told. */
async function judgeOf(options: EvalCommandOptions): Promise<NamedScorer> {
  const rubric = await readRubric(options.judge!);
  const apiKey = options.judgeApiKey ?? options.apiKey ?? (process.env.OPENAI_API_KEY || undefined);
  const baseURL = options.judgeBaseUrl ?? options.baseUrl ?? (process.env.OPENAI_BASE_URL || undefined);
  if (apiKey === undefined && baseURL === undefined) {
    throw new CliError(
      "the judge needs an API: pass --judge-api-key or --judge-base-url (or the agent's flags)",
    );
  }
  const model =
    options.judgeModel ??
    options.model ??
    (process.env.LAGENT_MODEL || undefined) ??
    (process.env.OPENAI_MODEL || undefined) ??
    DEFAULT_MODEL;
  const llm = new AsyncGPTAPI({ model, apiKey, ...(baseURL === undefined ? {} : { baseURL }) });
  return { name: 'judge', score: judgeScorer({ rubric, llm }) };
}

/**
 * Loads the scorers (before the agent, so that a wrong `--scorer` fails at once) and gives the run: the eval
 * stopped by SIGINT or SIGTERM, the summary as one JSON line on stdout (and in `--summary-json`), the JUnit
 * report, and the exit code (0 passed, 1 below a `--threshold`, 2 some errors, 130 stopped).
 */
export async function prepareEval(
  data: string,
  options: EvalCommandOptions,
): Promise<(agent: AgentLike) => Promise<void>> {
  const scorers: NamedScorer[] = [];
  for (const spec of options.scorer ?? []) scorers.push(await loadNamedScorer(spec));
  if (options.judge !== undefined) scorers.push(await judgeOf(options));
  if (scorers.length === 0)
    throw new CliError('give a scorer: --scorer exact|includes|./scorer.js, or --judge RUBRIC');
  const names = scorers.map((scorer) => scorer.name);
  const thresholds = (options.threshold ?? []).map((text) => parseThreshold(text, names));
  return async (agent) => {
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      const summary = await runEval(agent, {
        input: data,
        output: options.output,
        scorers,
        thresholds,
        passScore: options.passScore,
        compare: options.compare,
        junit: options.junit,
        showFailures: options.showFailures,
        concurrency: options.concurrency,
        progress: options.progress,
        signal: controller.signal,
      });
      if (options.summaryJson !== undefined) await writeSummary(options.summaryJson, summary);
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      if (summary.interrupted) process.exitCode = 130;
      else if (!summary.passed) process.exitCode = 1;
      else if (summary.errors > 0) process.exitCode = 2;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  };
}
