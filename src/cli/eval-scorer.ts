import { existsSync } from 'node:fs';
import { relative, resolve as resolvePath, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CliError, messageOf } from './errors';
import type { ScoreResult } from './eval-judge';

/**
 * Scores one reply: `true`/`false` or a number from 0 to 1, sync or async. A scorer module's function gets the
 * reply's text, the line's expected answer as written, and the whole parsed line.
 */
export type EvalScorer = (
  reply: string,
  expected: unknown,
  line: Record<string, unknown>,
) => boolean | number | Promise<boolean | number>;

/** The expected answers of a line for the built-in scorers: a string or number, or a list of them (any matches). */
function answers(expected: unknown): string[] {
  const list = Array.isArray(expected) ? expected : [expected];
  if (list.length === 0 || list.some((item) => typeof item !== 'string' && typeof item !== 'number')) {
    throw new Error('the expected answer must be a string, a number, or a list of them for this scorer');
  }
  return list.map((item) => String(item).trim());
}

/** `exact`: the reply, trimmed, equals an expected answer, trimmed (case counts). */
export const exactScorer: EvalScorer = (reply, expected) => answers(expected).includes(reply.trim());

/** `includes`: the reply contains an expected answer, trimmed, ignoring case. */
export const includesScorer: EvalScorer = (reply, expected) => {
  const text = reply.toLowerCase();
  return answers(expected).some((answer) => text.includes(answer.toLowerCase()));
};

/** The score a scorer returned, as a number from 0 to 1; throws on anything else. */
export function scoreValue(value: unknown): number {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number' && value >= 0 && value <= 1) return value;
  const shown = typeof value === 'number' ? String(value) : typeof value;
  throw new Error(`the scorer returned ${shown}; a score is true, false or a number from 0 to 1`);
}

/**
 * A scorer of a run, by the name its results keep: `exact`, `includes`, `judge`, a module's exported `name`, or
 * the module's path relative to the current directory (never an absolute path, so results compare across
 * machines). `input` is the item's question as written.
 */
export interface NamedScorer {
  name: string;
  score(
    reply: string,
    expected: unknown,
    line: Record<string, unknown>,
    input: unknown,
  ): Promise<ScoreResult>;
}

/** A plain scorer function as a {@link NamedScorer}. */
export function named(name: string, scorer: EvalScorer): NamedScorer {
  return {
    name,
    score: async (reply, expected, line) => ({ score: scoreValue(await scorer(reply, expected, line)) }),
  };
}

/** The scorer `--scorer` names, with the name its results keep (see {@link NamedScorer}). */
export async function loadNamedScorer(spec: string): Promise<NamedScorer> {
  if (spec === 'exact' || spec === 'includes') return named(spec, await loadScorer(spec));
  const { scorer, name } = await loadModule(spec);
  const path = relative(process.cwd(), resolvePath(spec)).split(sep).join('/');
  return named(name ?? path, scorer);
}

/**
 * The scorer `--scorer` names: `exact`, `includes`, or a module (a path) whose default export, or export named
 * `score`, is an {@link EvalScorer}.
 */
export async function loadScorer(spec: string): Promise<EvalScorer> {
  if (spec === 'exact') return exactScorer;
  if (spec === 'includes') return includesScorer;
  return (await loadModule(spec)).scorer;
}

/** A scorer module: its function, and its exported `name` when it has one. */
async function loadModule(spec: string): Promise<{ scorer: EvalScorer; name: string | undefined }> {
  const file = resolvePath(spec);
  if (!existsSync(file)) {
    throw new CliError(`--scorer must be exact, includes or a module file; ${spec} is not a file`);
  }
  let module: { default?: unknown; score?: unknown };
  try {
    module = (await import(pathToFileURL(file).href)) as typeof module;
  } catch (error) {
    throw new CliError(`cannot load the scorer module ${spec}: ${messageOf(error)}`, { cause: error });
  }
  const scorer = typeof module.default === 'function' ? module.default : module.score;
  if (typeof scorer !== 'function') {
    throw new CliError(
      `the scorer module ${spec} must export a function (reply, expected, line) => boolean | number, as its default export or as "score"`,
    );
  }
  const name = (module as { name?: unknown }).name;
  return { scorer: scorer as EvalScorer, name: typeof name === 'string' && name !== '' ? name : undefined };
}
