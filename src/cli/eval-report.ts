import { writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { EvalResult, StoredResult } from './eval-results';
import { terminalText } from './terminal-text';

/*
 * What `lagent eval` reports beyond its summary: the items that failed with the difference between what was
 * expected and what the agent said, the comparison with an earlier results file, and a JUnit report for CI.
 */

/** An item below the pass score (or with an error), as listed. */
export interface FailedItem {
  /** Its id as written, or `line N`. */
  key: string;
  line: number;
  scores: Record<string, number | null>;
  expected: unknown;
  reply: string | null;
  error: EvalResult['error'];
  /** The judge's reasons, by scorer. */
  reasons?: Record<string, string> | undefined;
}

/** How one item's score moved since the earlier results. */
export interface ScoreChange {
  key: string;
  before: number | null;
  after: number | null;
}

/** The comparison with an earlier results file (by the first scorer). */
export interface EvalComparison {
  /** The earlier results file, as given. */
  file: string;
  scorer: string | undefined;
  /** Accuracy over the items both runs finished: before, and now. */
  before: number | null;
  after: number | null;
  better: ScoreChange[];
  worse: ScoreChange[];
  unchanged: number;
  /** Items the earlier file does not have. */
  added: number;
}

/** The text of a value for a diff: strings as they are, anything else as JSON. */
function shown(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  return JSON.stringify(value);
}

const MAX_LINE = 200;
const MAX_LINES = 12;

function cut(line: string): string {
  const clean = terminalText(line);
  return clean.length > MAX_LINE ? `${clean.slice(0, MAX_LINE)}…` : clean;
}

/**
 * The difference between what was expected and the reply: `- expected` / `+ reply` lines, the lines both share
 * as `  ` context (a longest-common-subsequence diff of their lines; each cut to 200 characters, at most 12).
 */
export function diffLines(expected: unknown, reply: string | null): string[] {
  const a = shown(expected).split('\n');
  const b = (reply ?? '').split('\n');
  // Texts of a few hundred lines at most: a table of common-subsequence lengths is enough.
  const n = a.length;
  const m = b.length;
  if (n * m > 250_000) return [`- ${cut(a.join(' '))}`, `+ ${cut(b.join(' '))}`];
  const table: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i]![j] =
        a[i] === b[j] ? table[i + 1]![j + 1]! + 1 : Math.max(table[i + 1]![j]!, table[i]![j + 1]!);
    }
  }
  const lines: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      lines.push(`  ${cut(a[i]!)}`);
      i++;
      j++;
    } else if (i < n && (j === m || table[i + 1]![j]! >= table[i]![j + 1]!)) lines.push(`- ${cut(a[i++]!)}`);
    else lines.push(`+ ${cut(b[j++]!)}`);
  }
  return lines.length > MAX_LINES
    ? [...lines.slice(0, MAX_LINES), `  … ${lines.length - MAX_LINES} more lines`]
    : lines;
}

function scoresText(scores: Record<string, number | null>): string {
  return Object.entries(scores)
    .map(([name, score]) => `${name} ${score === null ? '-' : Number(score.toFixed(3))}`)
    .join(', ');
}

/** The failed items for the terminal: each one's key, scores, error or judge's reason, and its diff. */
export function failuresText(failed: readonly FailedItem[], limit: number): string {
  if (failed.length === 0 || limit <= 0) return '';
  const out: string[] = [`failed: ${failed.length} item${failed.length === 1 ? '' : 's'}`];
  for (const item of failed.slice(0, limit)) {
    out.push(`\n${terminalText(item.key)} (line ${item.line}): ${scoresText(item.scores)}`);
    if (item.error !== null) out.push(`  ${item.error.stage} error: ${cut(item.error.message)}`);
    for (const [name, reason] of Object.entries(item.reasons ?? {})) {
      if (reason !== '') out.push(`  ${name}: ${cut(reason)}`);
    }
    if (item.reply !== null) for (const line of diffLines(item.expected, item.reply)) out.push(`  ${line}`);
  }
  if (failed.length > limit) out.push(`\n… and ${failed.length - limit} more (see the results file)`);
  return `${out.join('\n')}\n`;
}

/** The scores of a stored result, by scorer name (an unnamed one as `score`). */
export function scoresOf(result: EvalResult): Record<string, number | null> {
  if (result.scores !== undefined && result.scores !== null) return result.scores;
  return { [result.scorer ?? 'score']: result.score };
}

/** Compares this run's results with an earlier file's, item by item, by `scorer` (the first one). */
export function compareResults(
  file: string,
  scorer: string | undefined,
  now: ReadonlyMap<string, StoredResult>,
  earlier: ReadonlyMap<string, StoredResult>,
  keys: readonly string[],
): EvalComparison {
  const pick = (result: StoredResult): number | null => {
    const scores = scoresOf(result);
    const value = scorer !== undefined && scorer in scores ? scores[scorer] : result.score;
    return value ?? (result.error === null ? null : 0);
  };
  const better: ScoreChange[] = [];
  const worse: ScoreChange[] = [];
  let unchanged = 0;
  let added = 0;
  let sumBefore = 0;
  let sumAfter = 0;
  let both = 0;
  for (const key of keys) {
    const current = now.get(key);
    if (current === undefined) continue;
    const previous = earlier.get(key);
    if (previous === undefined) {
      added++;
      continue;
    }
    const before = pick(previous);
    const after = pick(current);
    both++;
    sumBefore += before ?? 0;
    sumAfter += after ?? 0;
    if ((after ?? 0) > (before ?? 0)) better.push({ key, before, after });
    else if ((after ?? 0) < (before ?? 0)) worse.push({ key, before, after });
    else unchanged++;
  }
  return {
    file,
    scorer,
    before: both === 0 ? null : sumBefore / both,
    after: both === 0 ? null : sumAfter / both,
    better,
    worse,
    unchanged,
    added,
  };
}

function percent(value: number | null): string {
  return value === null ? '-' : `${(value * 100).toFixed(1)}%`;
}

/** The comparison for the terminal. */
export function comparisonText(comparison: EvalComparison): string {
  const { before, after } = comparison;
  const delta =
    before === null || after === null
      ? ''
      : ` (${after >= before ? '+' : ''}${((after - before) * 100).toFixed(1)})`;
  const out = [
    `compared with ${terminalText(comparison.file)}: accuracy ${percent(before)} -> ${percent(after)}${delta}; ${comparison.better.length} better, ${comparison.worse.length} worse, ${comparison.unchanged} unchanged${comparison.added > 0 ? `, ${comparison.added} new` : ''}`,
  ];
  const score = (value: number | null) => (value === null ? '-' : String(Number(value.toFixed(3))));
  for (const change of comparison.worse)
    out.push(`  worse   ${terminalText(change.key)}: ${score(change.before)} -> ${score(change.after)}`);
  for (const change of comparison.better)
    out.push(`  better  ${terminalText(change.key)}: ${score(change.before)} -> ${score(change.after)}`);
  return `${out.join('\n')}\n`;
}

function xml(text: string): string {
  return (
    text
      // Characters XML 1.0 cannot hold at all.
      // biome-ignore lint/suspicious/noControlCharactersInRegex: these are what is removed
      .replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]/g, '')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
  );
}

/**
 * Writes a JUnit XML report: one test case per item of the data file (named by its id, or `line N`), failed
 * below the pass score (with its scores, the judge's reasons and the diff), in error when it has an error,
 * skipped when the run stopped before it.
 */
export async function writeJUnit(
  path: string,
  data: string,
  keys: readonly { key: string; line: number }[],
  results: ReadonlyMap<string, StoredResult>,
  failed: ReadonlyMap<string, FailedItem>,
  summary: { accuracy: number; errors: number },
): Promise<void> {
  const suite = basename(data);
  const cases: string[] = [];
  let failures = 0;
  let errors = 0;
  let skipped = 0;
  let time = 0;
  for (const { key, line } of keys) {
    const result = results.get(key);
    const seconds = result?.latencyMs === null || result === undefined ? 0 : result.latencyMs / 1000;
    time += seconds;
    const head = `    <testcase classname="${xml(`lagent eval.${suite}`)}" name="${xml(key)}" time="${seconds.toFixed(3)}"`;
    if (result === undefined) {
      skipped++;
      cases.push(`${head}>\n      <skipped message="not run (the run stopped before it)"/>\n    </testcase>`);
      continue;
    }
    const item = failed.get(key);
    if (item === undefined) {
      cases.push(`${head}/>`);
      continue;
    }
    const body = [
      `line ${line}: ${scoresText(item.scores)}`,
      ...Object.entries(item.reasons ?? {}).map(([name, reason]) => `${name}: ${reason}`),
      ...(item.reply === null ? [] : diffLines(item.expected, item.reply)),
    ].join('\n');
    if (item.error !== null) {
      errors++;
      cases.push(
        `${head}>\n      <error message="${xml(item.error.message)}" type="${xml(item.error.name)}">${xml(body)}</error>\n    </testcase>`,
      );
    } else {
      failures++;
      cases.push(
        `${head}>\n      <failure message="${xml(`scored ${scoresText(item.scores)}`)}">${xml(body)}</failure>\n    </testcase>`,
      );
    }
  }
  const counts = `tests="${keys.length}" failures="${failures}" errors="${errors}" skipped="${skipped}" time="${time.toFixed(3)}"`;
  const report = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="lagent eval" ${counts}>`,
    `  <testsuite name="${xml(suite)}" ${counts}>`,
    `    <properties><property name="accuracy" value="${summary.accuracy}"/></properties>`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
  await writeFile(path, report);
}
