import { readFile } from 'node:fs/promises';
import { AsyncAgent } from '../agents/async-agent';
import type { AsyncBaseLLM } from '../llms/base-llm';
import type { AgentMessage } from '../schema/agent-message';
import { isPlainObject } from '../utils/is';
import { CliError, messageOf } from './errors';
import type { EvalUsage } from './eval-results';

/*
 * The LLM-judge scorer of `lagent eval`: a model reads the rubric, the question, the expected answer and the
 * agent's reply, and answers a score from 0 to 1 with its reason. Each judgement is a budgeted call
 * (`budget: {}` counts), so what the judge spent is known per item and in the summary, apart from the agent's.
 */

/** What one scorer says of one reply: the score, and for the judge its reason and what it spent. */
export interface ScoreResult {
  score: number;
  reason?: string | undefined;
  usage?: EvalUsage | undefined;
}

const INSTRUCTION = `You grade the answer an AI assistant gave, against a rubric.
You get the rubric, the question, the expected answer (a reference; it may be empty) and the assistant's answer.
Judge only what the rubric asks. Reply with one JSON object and nothing else:
{"score": <a number from 0 to 1: 1 fully meets the rubric, 0 does not at all>, "reason": "<one short sentence>"}`;

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value ?? null);
}

/** The `{ score, reason }` a judge's reply holds (its first JSON object), or why it holds none. */
export function readVerdict(reply: string): { score: number; reason: string } {
  const start = reply.indexOf('{');
  const end = reply.lastIndexOf('}');
  let value: unknown;
  try {
    value = start >= 0 && end > start ? JSON.parse(reply.slice(start, end + 1)) : undefined;
  } catch {
    value = undefined;
  }
  const score = isPlainObject(value) ? value.score : undefined;
  if (typeof score !== 'number' || !(score >= 0 && score <= 1)) {
    const shown = reply.length > 200 ? `${reply.slice(0, 200)}...` : reply;
    throw new Error(`the judge did not answer {"score": 0..1, "reason": ...}; it said: ${shown}`);
  }
  const reason = isPlainObject(value) && typeof value.reason === 'string' ? value.reason : '';
  return { score, reason };
}

function usageOf(reply: AgentMessage): EvalUsage | undefined {
  const usage = (reply.extraInfo as { usage?: Record<string, unknown> } | null)?.usage;
  if (usage === null || typeof usage !== 'object' || typeof usage.totalTokens !== 'number') return undefined;
  const result: EvalUsage = {
    promptTokens: Number(usage.promptTokens) || 0,
    completionTokens: Number(usage.completionTokens) || 0,
    totalTokens: usage.totalTokens,
  };
  if (typeof usage.modelCalls === 'number') result.modelCalls = usage.modelCalls;
  if (typeof usage.usd === 'number') result.usd = usage.usd;
  if (Array.isArray(usage.unpriced) && usage.unpriced.length > 0)
    result.unpriced = usage.unpriced as string[];
  return result;
}

/** The rubric `--judge` gives: its text, or `@file` for a file's. */
export async function readRubric(spec: string): Promise<string> {
  if (!spec.startsWith('@')) {
    if (spec.trim() === '') throw new CliError('--judge needs a rubric: its text, or @file');
    return spec;
  }
  try {
    const rubric = await readFile(spec.slice(1), 'utf8');
    if (rubric.trim() === '') throw new Error('it is empty');
    return rubric;
  } catch (error) {
    throw new CliError(`cannot read the rubric ${spec.slice(1)}: ${messageOf(error)}`, { cause: error });
  }
}

/**
 * A scorer that asks `llm` to grade each reply against `rubric`; each call is budgeted so its usage (and cost,
 * for a model with a price) comes back with the score.
 */
export function judgeScorer(options: { rubric: string; llm: AsyncBaseLLM }) {
  const judge = new AsyncAgent({ name: 'judge', llm: options.llm, template: INSTRUCTION, memory: null });
  // Each judgement on a session of its own: judgements of items in flight at once do not wait for each other.
  let calls = 0;
  return async (
    reply: string,
    expected: unknown,
    line: Record<string, unknown>,
    input: unknown,
  ): Promise<ScoreResult> => {
    const question = [
      `Rubric:\n${options.rubric.trim()}`,
      `Question:\n${text(input)}`,
      `Expected answer:\n${text(expected)}`,
      `Assistant's answer:\n${reply}`,
    ].join('\n\n');
    void line;
    const answer = await judge.call(question, { budget: {}, sessionId: `judge-${++calls}` });
    const verdict = readVerdict(typeof answer.content === 'string' ? answer.content : text(answer.content));
    return { ...verdict, usage: usageOf(answer) };
  };
}
