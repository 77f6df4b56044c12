import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { AgentMessage } from 'lagent-ts';
import { type FakeOpenAIServer, type FakeRequest, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentLike } from '#src/cli/agent-like';
import { runEval } from '#src/cli/eval';
import { readVerdict } from '#src/cli/eval-judge';
import { diffLines } from '#src/cli/eval-report';
import { exactScorer, named } from '#src/cli/eval-scorer';
import { FIXTURES, runCli } from './helpers';

/**
 * `lagent eval` as a CI gate: usage and cost per item and in total, accuracy over the items done (and how many
 * are left), `--threshold` (exit 1 below it), failed items listed with their diff, several scorers per run,
 * the LLM judge (its cost counted apart), `--compare` with an earlier run, a JUnit report, scorers recorded by
 * name. The agent and the judge are models of a fake OpenAI server with list-priced names (gpt-4o-mini for the
 * agent, gpt-4.1 for the judge), so costs are known exactly.
 */

let fake: FakeOpenAIServer;
let dir: string;

const lastUser = (request: FakeRequest): string => String(request.body?.messages?.at(-1)?.content ?? '');
const isJudge = (request: FakeRequest) =>
  String(request.body?.messages?.[0]?.content ?? '').includes('You grade');

/** The agent: 1,000 prompt and 500 completion tokens per call at gpt-4o-mini's price ($0.00045). */
const AGENT_USAGE = { prompt_tokens: 1000, completion_tokens: 500 };
const AGENT_USD = (1000 * 0.15 + 500 * 0.6) / 1e6;
/** The judge: 2,000 and 100 tokens per judgement at gpt-4.1's price ($0.0048). */
const JUDGE_USAGE = { prompt_tokens: 2000, completion_tokens: 100 };
const JUDGE_USD = (2000 * 2 + 100 * 8) / 1e6;

/** Answers: the agent says "answer to <question>", except for questions in `wrong`. */
function script(wrong: ReadonlySet<string> = new Set(), verdict = (_answer: string) => 1) {
  fake.setScript((request) => {
    if (isJudge(request)) {
      const answer = /Assistant's answer:\n([\s\S]*)$/.exec(lastUser(request))?.[1] ?? '';
      const score = verdict(answer);
      return { content: JSON.stringify({ score, reason: `graded ${answer}` }), usage: JUDGE_USAGE };
    }
    const question = lastUser(request);
    return {
      content: wrong.has(question) ? `no idea about ${question}` : `answer to ${question}`,
      usage: AGENT_USAGE,
    };
  });
}

const model = () => ['--model', 'gpt-4o-mini', '--base-url', fake.baseURL, '--api-key', 'test-key'];

function jsonl(path: string): any[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

function data(count: number, name = 'data.jsonl'): string {
  const path = join(dir, name);
  const lines = Array.from({ length: count }, (_, i) => ({
    id: `q${i}`,
    input: `question ${i}`,
    expected: `answer to question ${i}`,
  }));
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  return path;
}

const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!);

beforeAll(async () => {
  fake = await startFakeOpenAI();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-eval-ci-'));
  script();
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('lagent eval for CI', () => {
  it('counts usage and cost per item and in total; --threshold exits 1 below it, 0 at or above', async () => {
    const input = data(4);
    script(new Set(['question 1', 'question 3']));
    const output = join(dir, 'results.jsonl');
    const below = await runCli([
      'eval',
      input,
      '--scorer',
      'exact',
      '-o',
      output,
      '--threshold',
      '0.75',
      ...model(),
    ]);
    expect(below.code).toBe(1);
    const summary = summaryOf(below.stdout);
    expect(summary).toMatchObject({ items: 4, done: 4, left: 0, accuracy: 0.5, passed: false });
    expect(summary.thresholds).toEqual([{ min: 0.75, accuracy: 0.5, passed: false }]);
    expect(summary.tokens).toEqual({ prompt: 4000, completion: 2000, total: 6000 });
    expect(summary.usd).toBeCloseTo(4 * AGENT_USD, 10);
    for (const result of jsonl(output)) {
      expect(result.usage).toMatchObject({ promptTokens: 1000, completionTokens: 500, modelCalls: 1 });
      expect(result.usage.usd).toBeCloseTo(AGENT_USD, 10);
    }
    expect(below.stderr).toMatch(/cost USD\s+0\.0018\n/);
    expect(below.stderr).toMatch(/threshold\s+FAILED: 50\.0% < 75\.0%/);
    // The failed items, with what was expected and what came.
    expect(below.stderr).toContain('failed: 2 items');
    expect(below.stderr).toContain(
      '"q1" (line 2): exact 0\n  - answer to question 1\n  + no idea about question 1',
    );

    // The same results (nothing runs again) against a threshold they meet; a named one, and a percentage.
    const met = await runCli([
      'eval',
      input,
      '--scorer',
      'exact',
      '-o',
      output,
      '--threshold',
      'exact=50%',
      ...model(),
    ]);
    expect(met.code).toBe(0);
    expect(summaryOf(met.stdout)).toMatchObject({ ran: 0, skipped: 4, passed: true });
    const unknown = await runCli([
      'eval',
      input,
      '--scorer',
      'exact',
      '-o',
      output,
      '--threshold',
      'judge=0.5',
      ...model(),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('--threshold judge=0.5: no scorer is named judge (the scorers: exact)');
  }, 60_000);

  it('several scorers per run, by name (a module by its path, not an absolute one); a new scorer only rescores', async () => {
    const input = data(3);
    script(new Set(['question 2']));
    const output = join(dir, 'results.jsonl');
    const scorer = 'test/cli/fixtures/eval-scorer.ts';
    const first = await runCli([
      'eval',
      input,
      '--scorer',
      'exact',
      '--scorer',
      scorer,
      '-o',
      output,
      ...model(),
    ]);
    expect(first.code).toBe(0);
    const results = jsonl(output);
    expect(results[0]).toMatchObject({ scorer: 'exact', scores: { exact: 1, [scorer]: 1 } });
    expect(results[2].scores).toEqual({ exact: 0, [scorer]: 0.5 });
    expect(readFileSync(output, 'utf8')).not.toContain(FIXTURES);
    expect(summaryOf(first.stdout).scorers).toEqual({ exact: 2 / 3, [scorer]: 2.5 / 3 });
    const requests = fake.requests.length;
    const again = await runCli([
      'eval',
      input,
      '--scorer',
      'exact',
      '--scorer',
      'includes',
      '-o',
      output,
      ...model(),
    ]);
    expect(again.code).toBe(0);
    expect(fake.requests.length).toBe(requests);
    expect(summaryOf(again.stdout)).toMatchObject({ ran: 3, scorers: { exact: 2 / 3, includes: 2 / 3 } });
    expect(jsonl(output).at(-1).scores).toEqual({ exact: 0, includes: 0 });
  }, 60_000);

  it('an LLM judge scores each reply against a rubric, with its reason; its cost is counted apart', async () => {
    const input = data(3);
    script(new Set(), (answer) => (answer.endsWith('2') ? 0 : 0.5));
    writeFileSync(join(dir, 'rubric.md'), 'The answer names the question it answers.\n');
    const output = join(dir, 'results.jsonl');
    const junit = join(dir, 'junit.xml');
    const args = [
      'eval',
      input,
      '--scorer',
      'exact',
      '--judge',
      `@${join(dir, 'rubric.md')}`,
      '--judge-model',
      'gpt-4.1',
    ];
    const run = await runCli([...args, '--pass-score', '0.5', '--junit', junit, '-o', output, ...model()]);
    expect(run.code).toBe(0);
    const judged = fake.requests.filter(isJudge);
    expect(judged).toHaveLength(3);
    expect(judged[0]!.body.model).toBe('gpt-4.1');
    expect(lastUser(judged[0]!)).toContain('Rubric:\nThe answer names the question it answers.');
    expect(lastUser(judged[0]!)).toMatch(/Question:\nquestion \d\n\nExpected answer:\nanswer to question \d/);
    const results = jsonl(output);
    expect(results.find((r) => r.id === 'q2')).toMatchObject({
      scores: { exact: 1, judge: 0 },
      reasons: { judge: 'graded answer to question 2' },
    });
    for (const result of results) {
      expect(result.usage.usd).toBeCloseTo(AGENT_USD, 10);
      expect(result.judgeUsage).toMatchObject({ promptTokens: 2000, completionTokens: 100 });
      expect(result.judgeUsage.usd).toBeCloseTo(JUDGE_USD, 10);
    }
    const summary = summaryOf(run.stdout);
    expect(summary.usd).toBeCloseTo(3 * AGENT_USD, 10);
    expect(summary.judge.tokens).toBe(3 * 2100);
    expect(summary.judge.usd).toBeCloseTo(3 * JUDGE_USD, 10);
    expect(summary.scorers).toEqual({ exact: 1, judge: 1 / 3 });
    expect(summary.failed).toBe(1);
    expect(run.stderr).toMatch(/judge cost USD\s+0\.0144\n/);
    expect(run.stderr).toContain('  judge: graded answer to question 2');
    // The JUnit report: three cases, the one below the pass score failed with its scores and the judge's reason.
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(/<testsuites name="lagent eval" tests="3" failures="1" errors="0" skipped="0"/);
    expect(xml).toContain('<testcase classname="lagent eval.data.jsonl" name="&quot;q2&quot;"');
    expect(xml).toMatch(
      /<failure message="scored exact 1, judge 0">line 3: exact 1, judge 0\njudge: graded answer to question 2/,
    );

    // A judge that does not answer a score is a scorer error for that item, with what it said.
    fake.setScript((request) =>
      isJudge(request) ? { content: 'I think it is fine.' } : { content: `answer to ${lastUser(request)}` },
    );
    const broken = await runCli([...args, '-o', join(dir, 'broken.jsonl'), ...model()]);
    expect(broken.code).toBe(2);
    expect(jsonl(join(dir, 'broken.jsonl'))[0].error.message).toBe(
      'the scorer judge failed: the judge did not answer {"score": 0..1, "reason": ...}; it said: I think it is fine.',
    );
  }, 60_000);

  it('--compare says what got better or worse since an earlier run, item by item', async () => {
    const input = data(4);
    script(new Set(['question 0', 'question 1']));
    const before = join(dir, 'before.jsonl');
    expect((await runCli(['eval', input, '--scorer', 'exact', '-o', before, ...model()])).code).toBe(0);
    script(new Set(['question 1', 'question 3']));
    const after = join(dir, 'after.jsonl');
    const run = await runCli([
      'eval',
      input,
      '--scorer',
      'exact',
      '-o',
      after,
      '--compare',
      before,
      ...model(),
    ]);
    expect(run.code).toBe(0);
    const { compare } = summaryOf(run.stdout);
    expect(compare).toMatchObject({
      file: before,
      scorer: 'exact',
      before: 0.5,
      after: 0.5,
      unchanged: 2,
      added: 0,
    });
    expect(compare.better).toEqual([{ key: '"q0"', before: 0, after: 1 }]);
    expect(compare.worse).toEqual([{ key: '"q3"', before: 1, after: 0 }]);
    expect(run.stderr).toContain(
      `compared with ${before}: accuracy 50.0% -> 50.0% (+0.0); 1 better, 1 worse, 2 unchanged`,
    );
    expect(run.stderr).toContain('  worse   "q3": 1 -> 0');
    const missing = await runCli([
      'eval',
      input,
      '--scorer',
      'exact',
      '-o',
      after,
      '--compare',
      join(dir, 'none.jsonl'),
      ...model(),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('the results file to compare with is not found');
  }, 60_000);
});

describe('eval summaries (in process)', () => {
  const quiet = () => ({ progress: false, log: new PassThrough().resume() });

  it('a stopped run reports its accuracy over the items done, and how many are left', async () => {
    const path = join(dir, 'six.jsonl');
    writeFileSync(
      path,
      `${Array.from({ length: 6 }, (_, i) => JSON.stringify({ id: i, input: `q${i}`, expected: `a${i}` })).join('\n')}\n`,
    );
    const controller = new AbortController();
    let calls = 0;
    const agent: AgentLike = {
      call: (_input, options) => {
        calls++;
        if (calls === 3) controller.abort();
        const signal = options.signal as AbortSignal;
        return new Promise((resolve, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener('abort', () => reject(signal.reason));
          if (calls < 3) resolve(new AgentMessage({ sender: 'agent', content: `a${calls - 1}` }));
        });
      },
      stateDict: () => ({}),
    };
    const summary = await runEval(agent, {
      input: path,
      output: join(dir, 'out.jsonl'),
      scorers: [named('exact', exactScorer)],
      concurrency: 1,
      signal: controller.signal,
      ...quiet(),
    });
    // Two of six done, both right: 100% of what was done, four left (not 2/6 = 33%).
    expect(summary).toMatchObject({ items: 6, done: 2, left: 4, accuracy: 1, interrupted: true });
  });

  it('diffs the lines of the expected answer and the reply; reads a judge verdict', () => {
    expect(diffLines('one\ntwo\nthree', 'one\n2\nthree')).toEqual(['  one', '- two', '+ 2', '  three']);
    expect(diffLines({ answer: 42 }, '42')).toEqual(['- {"answer":42}', '+ 42']);
    expect(readVerdict('Sure: {"score": 0.75, "reason": "mostly"}')).toEqual({
      score: 0.75,
      reason: 'mostly',
    });
    expect(() => readVerdict('{"score": 7}')).toThrow(/did not answer/);
  });
});
