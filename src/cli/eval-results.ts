import { existsSync } from 'node:fs';
import { appendFile, readFile, truncate } from 'node:fs/promises';
import { isPlainObject } from '../utils/is';
import { lineKey } from './eval-data';
import { rawMember } from './json-member';

/** Tokens and cost of one item: the reply's `extraInfo.usage`, or what the agent's models counted. */
export interface EvalUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  modelCalls?: number | undefined;
  toolCalls?: number | undefined;
  /** Cost in US dollars, when known. */
  usd?: number | undefined;
  /** Prompt tokens read from the provider's prompt cache (part of `promptTokens`), when reported. */
  cachedPromptTokens?: number | undefined;
  /** Prompt tokens written to the prompt cache, when reported. */
  cacheWriteTokens?: number | undefined;
  /** Completion tokens spent reasoning (part of `completionTokens`), when reported. */
  reasoningTokens?: number | undefined;
  /** Models called without a known price (their tokens count, their cost does not). */
  unpriced?: string[] | undefined;
}

/** Why an item has no score: its line (`input`), the agent's call (`agent`) or the scorer (`scorer`). */
export interface EvalError {
  stage: 'input' | 'agent' | 'scorer';
  name: string;
  message: string;
}

/** One line of the results file (its `id`, when the data line has one, comes first as written). */
export interface EvalResult {
  line: number;
  input?: unknown;
  expected?: unknown;
  /** The name of the (first) scorer that scored the reply, when the run named it. */
  scorer?: string | undefined;
  /** The reply's text; null when the agent did not answer. */
  reply: string | null;
  /** The first scorer's score, from 0 to 1; null when it could not score (the item has an error). */
  score: number | null;
  /** Every scorer's score by name (null: that scorer failed), when the run named its scorers. */
  scores?: Record<string, number | null> | undefined;
  /** Why the LLM judge scored as it did, by scorer name. */
  reasons?: Record<string, string> | undefined;
  /** What the judge's calls spent on this item (apart from the agent's `usage`). */
  judgeUsage?: EvalUsage | null | undefined;
  /** The agent's call, in milliseconds; null when it did not run. */
  latencyMs: number | null;
  usage: EvalUsage | null;
  error: EvalError | null;
}

/** A result read back, with the key of its item. */
export interface StoredResult extends EvalResult {
  key: string;
}

/** The result line of `key`: `{"id": <as written>, ...}` for an item with an id. */
export function resultText(id: string | undefined, result: EvalResult): string {
  const body = JSON.stringify(result);
  return id === undefined ? body : `{"id":${id},${body.slice(1)}`;
}

function readResult(text: string): StoredResult | undefined {
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(record) || typeof record.line !== 'number') return undefined;
  const id =
    typeof record.id === 'string'
      ? JSON.stringify(record.id)
      : typeof record.id === 'number'
        ? rawMember(text, 'id')
        : undefined;
  const { id: _id, ...rest } = record;
  return { ...(rest as unknown as EvalResult), key: id ?? lineKey(record.line) };
}

/**
 * The results already in `path`, the last line of each item winning. A last line without its newline was cut
 * short by a crash while it was written: a whole record gets its newline, anything else is cut off (its item
 * runs again), so the file stays one record per line (with `repair: false`, the file is only read).
 */
export async function readResults(
  path: string,
  options: { repair?: boolean | undefined } = {},
): Promise<Map<string, StoredResult>> {
  const results = new Map<string, StoredResult>();
  if (!existsSync(path)) return results;
  const bytes = await readFile(path);
  const end = bytes.lastIndexOf(0x0a) + 1;
  for (const line of bytes.subarray(0, end).toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    const result = readResult(line);
    if (result !== undefined) results.set(result.key, result);
  }
  if (end < bytes.length) {
    const result = readResult(bytes.subarray(end).toString('utf8'));
    if (options.repair === false) {
      if (result !== undefined) results.set(result.key, result);
    } else if (result === undefined) await truncate(path, end);
    else {
      results.set(result.key, result);
      await appendFile(path, '\n');
    }
  }
  return results;
}
