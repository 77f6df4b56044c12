import { resolve as resolvePath } from 'node:path';
import type { AgentLike } from './agent-like';
import { runEval, writeSummary } from './eval';
import { loadScorer } from './eval-scorer';

/** The flags of `lagent eval`. */
export interface EvalCommandOptions {
  scorer: string;
  output: string;
  concurrency: number;
  summaryJson?: string | undefined;
  progress: boolean;
}

/** The name results keep for a `--scorer`: exact, includes, or the module's absolute path. */
function scorerName(spec: string): string {
  return spec === 'exact' || spec === 'includes' ? spec : resolvePath(spec);
}

/**
 * Loads the scorer (before the agent, so that a wrong `--scorer` fails at once) and gives the run: the eval
 * stopped by SIGINT or SIGTERM, the summary as one JSON line on stdout (and in `--summary-json`), and the exit
 * code (0 all scored, 2 some errors, 130 stopped).
 */
export async function prepareEval(
  data: string,
  options: EvalCommandOptions,
): Promise<(agent: AgentLike) => Promise<void>> {
  const scorer = await loadScorer(options.scorer);
  return async (agent) => {
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    try {
      const summary = await runEval(agent, {
        input: data,
        output: options.output,
        scorer,
        scorerName: scorerName(options.scorer),
        concurrency: options.concurrency,
        progress: options.progress,
        signal: controller.signal,
      });
      if (options.summaryJson !== undefined) await writeSummary(options.summaryJson, summary);
      process.stdout.write(`${JSON.stringify(summary)}\n`);
      if (summary.interrupted) process.exitCode = 130;
      else if (summary.errors > 0) process.exitCode = 2;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
  };
}
