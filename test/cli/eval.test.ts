import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { AgentMessage, AsyncAgent } from 'lagent-ts';
import { AsyncMockLLM, type FakeOpenAIServer, type FakeRequest, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentLike } from '#src/cli/agent-like';
import { runEval } from '#src/cli/eval';
import { exactScorer, includesScorer, loadScorer } from '#src/cli/eval-scorer';
import { percentile } from '#src/cli/eval-summary';
import { childEnv, FIXTURES, NODE_ARGS, ROOT, runCli } from './helpers';

/** `lagent eval`: the scorers and the summary in process, the command end to end in child processes. */

let fake: FakeOpenAIServer;
let dir: string;

const lastUser = (request: FakeRequest): string => String(request.body?.messages?.at(-1)?.content ?? '');

beforeAll(async () => {
  fake = await startFakeOpenAI();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-eval-'));
  fake.setScript((request) => `answer to ${lastUser(request)}`);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const modelFlags = () => ['--model', 'fake-model', '--base-url', fake.baseURL, '--api-key', 'test-key'];

function jsonl(path: string): any[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

function writeData(lines: unknown[], name = 'data.jsonl'): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `${lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n')}\n`,
  );
  return path;
}

/** The JSON summary: the last line of stdout. */
function summaryOf(stdout: string): any {
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

const quiet = () => ({ progress: false, log: new PassThrough().resume() });

/** An agent on a scripted model that answers `reply(question)`. */
function mockAgent(reply: (question: string) => string): AgentLike {
  return new AsyncAgent({
    llm: new AsyncMockLLM({ responses: (messages) => reply(String(messages.at(-1)?.content)) }),
  }) as unknown as AgentLike;
}

describe('eval scorers and summary (in process)', () => {
  it('exact trims and keeps case; includes ignores case; a list of answers matches any', async () => {
    expect(await exactScorer('  Paris \n', 'Paris', {})).toBe(true);
    expect(await exactScorer('paris', 'Paris', {})).toBe(false);
    expect(await exactScorer('The capital is Paris', 'Paris', {})).toBe(false);
    expect(await exactScorer('42', 42, {})).toBe(true);
    expect(await exactScorer('Lutetia', ['Paris', 'Lutetia'], {})).toBe(true);
    expect(await includesScorer('The capital is PARIS.', ' paris ', {})).toBe(true);
    expect(await includesScorer('The capital is Rome.', ['paris', 'lutetia'], {})).toBe(false);
    expect(() => exactScorer('x', { answer: 'x' }, {})).toThrow(/must be a string, a number, or a list/);
    expect(await loadScorer('exact')).toBe(exactScorer);
    await expect(loadScorer(join(dir, 'missing.js'))).rejects.toThrow(/is not a file/);
    const noFunction = join(dir, 'no-function.mjs');
    writeFileSync(noFunction, 'export const answer = 42;\n');
    await expect(loadScorer(noFunction)).rejects.toThrow(/must export a function/);
  });

  it('scores with each scorer, and keeps the reply with a clear error when a scorer throws or returns a bad score', async () => {
    const input = writeData([
      { id: 'a', input: 'paris?', expected: 'Paris' },
      { id: 'b', question: 'rome?', answer: 'rome' },
      { id: 'c', prompt: 'oslo?', target: ['Oslo', 'Christiania'] },
    ]);
    const agent = mockAgent((question) => `Paris ${question}`.replace('paris?', '').trim());
    const exact = await runEval(agent, {
      input,
      output: join(dir, 'exact.jsonl'),
      scorer: exactScorer,
      ...quiet(),
    });
    expect(exact).toMatchObject({ items: 3, scored: 3, errors: 0, accuracy: 1 / 3, ran: 3, skipped: 0 });
    expect(jsonl(join(dir, 'exact.jsonl')).map((line) => [line.id, line.score])).toEqual([
      ['a', 1],
      ['b', 0],
      ['c', 0],
    ]);
    const includes = await runEval(agent, {
      input,
      output: join(dir, 'includes.jsonl'),
      scorer: includesScorer,
      ...quiet(),
    });
    // "Paris rome?" contains "rome"; "Paris oslo?" contains "Oslo" ignoring case.
    expect(includes).toMatchObject({ scored: 3, accuracy: 1 });

    const calls: unknown[][] = [];
    const custom = await runEval(agent, {
      input,
      output: join(dir, 'custom.jsonl'),
      scorer: async (reply, expected, line) => {
        calls.push([reply, expected, line.id]);
        if (line.id === 'b') throw new Error('no opinion on rome');
        return line.id === 'c' ? 1.5 : 0.25;
      },
      ...quiet(),
    });
    expect(custom).toMatchObject({ items: 3, scored: 1, errors: 2, accuracy: 0.25 / 3 });
    expect(calls).toContainEqual(['Paris', 'Paris', 'a']);
    const byId = new Map(jsonl(join(dir, 'custom.jsonl')).map((line) => [line.id, line]));
    expect(byId.get('b')).toMatchObject({
      reply: 'Paris rome?',
      score: null,
      error: { stage: 'scorer', name: 'Error', message: 'the scorer failed: no opinion on rome' },
    });
    expect(byId.get('c').error.message).toContain(
      'the scorer returned 1.5; a score is true, false or a number from 0 to 1',
    );
  });

  it("sums the reply's extraInfo.usage: tokens, and the cost only when every item gave it", async () => {
    let n = 0;
    const agent: AgentLike = {
      call: async () => {
        n++;
        const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15, modelCalls: 1, toolCalls: 0 };
        return new AgentMessage({
          sender: 'agent',
          content: 'yes',
          extraInfo: { usage: n === 3 ? usage : { ...usage, usd: 0.001 } },
        });
      },
      stateDict: () => ({}),
    };
    const input = writeData(Array.from({ length: 3 }, (_, i) => ({ id: i, input: 'q', expected: 'yes' })));
    const output = join(dir, 'out.jsonl');
    const first = await runEval(agent, { input, output, scorer: exactScorer, concurrency: 1, ...quiet() });
    expect(first.tokens).toEqual({ prompt: 30, completion: 15, total: 45 });
    expect(first.usd).toBeNull();
    expect(jsonl(output)[0].usage).toEqual({
      promptTokens: 10,
      completionTokens: 5,
      totalTokens: 15,
      modelCalls: 1,
      toolCalls: 0,
      usd: 0.001,
    });
    n = 0;
    const log = new PassThrough();
    let table = '';
    log.on('data', (chunk: Buffer) => {
      table += chunk.toString();
    });
    const all = await runEval(agent, {
      input: writeData(
        [
          { id: 0, input: 'q', expected: 'yes' },
          { id: 1, input: 'q', expected: 'yes' },
        ],
        'two.jsonl',
      ),
      output: join(dir, 'two-out.jsonl'),
      scorer: exactScorer,
      concurrency: 1,
      progress: false,
      log,
    });
    expect(all.usd).toBeCloseTo(0.002);
    expect(table).toMatch(/cost USD\s+0\.0020/);
    expect(table).toMatch(/accuracy\s+100\.0%/);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50)).toBe(5);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)).toBe(10);
    expect(percentile([7], 95)).toBe(7);
  });

  it('shows the cached prompt and reasoning tokens the models reported', async () => {
    const agent: AgentLike = {
      call: async () =>
        new AgentMessage({
          sender: 'agent',
          content: 'yes',
          extraInfo: {
            usage: {
              promptTokens: 2000,
              completionTokens: 100,
              totalTokens: 2100,
              cachedPromptTokens: 1536,
              reasoningTokens: 64,
            },
          },
        }),
      stateDict: () => ({}),
    };
    const log = new PassThrough();
    let table = '';
    log.on('data', (chunk: Buffer) => {
      table += chunk.toString();
    });
    const output = join(dir, 'cached-out.jsonl');
    const summary = await runEval(agent, {
      input: writeData([{ id: 0, input: 'q', expected: 'yes' }], 'cached.jsonl'),
      output,
      scorer: exactScorer,
      concurrency: 1,
      progress: false,
      log,
    });
    expect(summary.tokens).toEqual({
      prompt: 2000,
      completion: 100,
      total: 2100,
      cached: 1536,
      reasoning: 64,
    });
    expect(jsonl(output)[0].usage).toMatchObject({ cachedPromptTokens: 1536, reasoningTokens: 64 });
    expect(table).toMatch(/tokens cached prompt\s+1536\n/);
    expect(table).toMatch(/tokens reasoning\s+64\n/);
  });
});

describe('eval resuming (in process)', () => {
  /** An agent that answers `answer to <question>` and counts its calls. */
  function countingAgent() {
    const counter = { calls: 0 };
    const agent = mockAgent((question) => {
      counter.calls++;
      return `answer to ${question}`;
    });
    return { agent, counter };
  }

  it('repairs a last line cut short by a crash and runs that item again; items without an id go by line number', async () => {
    const input = writeData([
      { input: 'one', expected: 'answer to one' },
      { input: 'two', expected: 'answer to two' },
      { input: 'three', expected: 'answer to three' },
    ]);
    const output = join(dir, 'out.jsonl');
    const { agent, counter } = countingAgent();
    await runEval(agent, { input, output, scorer: exactScorer, ...quiet() });
    expect(counter.calls).toBe(3);
    const lines = readFileSync(output, 'utf8').trim().split('\n');
    const second = lines.find((line) => JSON.parse(line).line === 2)!;
    // A crash cut the last line (line 3's result) short.
    const rest = lines.filter((line) => line !== second && JSON.parse(line).line !== 3);
    writeFileSync(output, `${[...rest, second].join('\n')}\n${second.slice(0, 20)}`);
    const again = await runEval(agent, { input, output, scorer: exactScorer, ...quiet() });
    expect(counter.calls).toBe(4);
    expect(again).toMatchObject({ items: 3, scored: 3, accuracy: 1, ran: 1, skipped: 2 });
    expect(jsonl(output).map((line) => line.line)).toEqual([1, 2, 3]);
  });

  it('scores stored replies again, without the agent, when the scorer has another name', async () => {
    const input = writeData([
      { id: 'a', input: 'Paris', expected: 'paris' },
      { id: 'b', input: 'Rome', expected: 'rome' },
    ]);
    const output = join(dir, 'out.jsonl');
    const { agent, counter } = countingAgent();
    const exact = await runEval(agent, {
      input,
      output,
      scorer: exactScorer,
      scorerName: 'exact',
      ...quiet(),
    });
    expect(exact.accuracy).toBe(0);
    const same = await runEval(agent, {
      input,
      output,
      scorer: exactScorer,
      scorerName: 'exact',
      ...quiet(),
    });
    expect(same).toMatchObject({ ran: 0, skipped: 2, accuracy: 0 });
    const includes = await runEval(agent, {
      input,
      output,
      scorer: includesScorer,
      scorerName: 'includes',
      ...quiet(),
    });
    expect(includes).toMatchObject({ ran: 2, skipped: 0, accuracy: 1 });
    expect(counter.calls).toBe(2);
    expect(
      jsonl(output)
        .slice(-2)
        .map((line) => [line.scorer, line.reply, line.score]),
    ).toEqual([
      ['includes', 'answer to Paris', 1],
      ['includes', 'answer to Rome', 1],
    ]);
  });

  it('stops on the signal without recording the calls it aborted, and the next run does them', async () => {
    const input = writeData(
      Array.from({ length: 6 }, (_, i) => ({ id: i, input: `q${i}`, expected: `a${i}` })),
    );
    const output = join(dir, 'out.jsonl');
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
    const stopped = await runEval(agent, {
      input,
      output,
      scorer: exactScorer,
      concurrency: 1,
      signal: controller.signal,
      ...quiet(),
    });
    expect(stopped).toMatchObject({ items: 6, scored: 2, errors: 0, interrupted: true, ran: 2 });
    expect(jsonl(output).map((line) => line.id)).toEqual([0, 1]);
    const rest = await runEval(
      mockAgent((question) => question.replace('q', 'a')),
      {
        input,
        output,
        scorer: exactScorer,
        ...quiet(),
      },
    );
    expect(rest).toMatchObject({ items: 6, scored: 6, accuracy: 1, ran: 4, skipped: 2, interrupted: false });
  });
});

describe('lagent eval', () => {
  it('is killed (SIGKILL) in the middle of 50 items and a second run finishes: every item once, a summary of all 50', async () => {
    const data = writeData(
      Array.from({ length: 50 }, (_, i) => ({
        id: `q${i}`,
        question: `question ${i}`,
        answer: i % 2 === 0 ? `answer to question ${i}` : 'something else',
      })),
    );
    const output = join(dir, 'results.jsonl');
    let kill: () => void = () => {};
    fake.setScript(async (request, index) => {
      if (index === 20) kill();
      await new Promise((resolve) => setTimeout(resolve, index >= 20 ? 2000 : 30));
      return `answer to ${lastUser(request)}`;
    });
    const child = spawn(
      process.execPath,
      [...NODE_ARGS, 'eval', data, '--scorer', 'exact', '-o', output, '--concurrency', '4', ...modelFlags()],
      { env: childEnv(), cwd: ROOT, stdio: ['ignore', 'ignore', 'ignore'] },
    );
    kill = () => child.kill('SIGKILL');
    const signal = await new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('close', (_code, s) => resolve(s)),
    );
    expect(signal).toBe('SIGKILL');
    const before = readFileSync(output, 'utf8');
    const kept = before.split('\n').filter((line) => line.endsWith('}')).length;
    expect(kept).toBeGreaterThanOrEqual(14);
    expect(kept).toBeLessThanOrEqual(20);

    fake.setScript((request) => `answer to ${lastUser(request)}`);
    const requestsBefore = fake.requests.length;
    const summaryFile = join(dir, 'summary.json');
    const rest = await runCli([
      'eval',
      data,
      '--scorer',
      'exact',
      '-o',
      output,
      '--summary-json',
      summaryFile,
      ...modelFlags(),
    ]);
    expect(rest.code).toBe(0);
    const results = jsonl(output);
    expect(results.map((line) => line.id).sort()).toEqual(
      Array.from({ length: 50 }, (_, i) => `q${i}`).sort(),
    );
    expect(fake.requests.length - requestsBefore).toBe(50 - kept);
    const summary = summaryOf(rest.stdout);
    expect(summary).toMatchObject({
      items: 50,
      scored: 50,
      errors: 0,
      accuracy: 0.5,
      skipped: kept,
      ran: 50 - kept,
    });
    expect(JSON.parse(readFileSync(summaryFile, 'utf8'))).toEqual(summary);
    // Tokens come from the model's usage of each item's session, and sum to the summary's.
    const total = results.reduce((sum, line) => sum + line.usage.totalTokens, 0);
    expect(total).toBeGreaterThan(0);
    expect(summary.tokens.total).toBe(total);
    // The model has no price: its tokens count, its cost is 0 and said to be unknown.
    expect(summary.usd).toBe(0);
    expect(summary.unpriced).toEqual(['fake-model']);
    expect(summary.latencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(summary.latencyMs.p95).toBeGreaterThanOrEqual(summary.latencyMs.p50);
    expect(rest.stderr).toMatch(/items\s+50\n/);
    expect(rest.stderr).toMatch(/accuracy\s+50\.0%/);
    expect(rest.stderr).toMatch(/cost USD\s+0\.0000 \(no price for fake-model\)\n/);
    expect(rest.stderr).toMatch(new RegExp(`tokens total\\s+${total}\\n`));
  }, 40_000);

  it('gives bad lines, a missing field and a throwing scorer module a clear error each, loses nothing, and rescores on the next run', async () => {
    const data = writeData([
      { id: 1, input: 'the sky', expected: 'answer to the sky' },
      'this is not json',
      { id: 2, input: 'no expected answer' },
      { id: 3, expected: 'no question' },
      { id: 4, input: 'the sea', expected: 'answer sea', explode: true },
      { id: 1, input: 'the same id', expected: 'x' },
      { id: 5, input: 'half', expected: 'answer nothing' },
    ]);
    const output = join(dir, 'results.jsonl');
    const scorer = `${FIXTURES}eval-scorer.ts`;
    const result = await runCli(['eval', data, '--scorer', scorer, '-o', output, ...modelFlags()]);
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stderr).toMatch(/eval: 7\/7 \(5 errors\), [\d.]+\/s, ETA 0s/);
    const byLine = new Map(jsonl(output).map((line) => [line.line, line]));
    expect(byLine.size).toBe(7);
    expect(byLine.get(1)).toMatchObject({ id: 1, score: 1, reply: 'answer to the sky', error: null });
    expect(byLine.get(2)).toMatchObject({
      input: 'this is not json',
      score: null,
      error: { stage: 'input', name: 'InvalidLine' },
    });
    expect(byLine.get(2).error.message).toContain('malformed JSON');
    expect(byLine.get(3)).toMatchObject({ id: 2, error: { stage: 'input' } });
    expect(byLine.get(3).error.message).toContain(
      'the expected answer is missing: give one of "expected", "answer", "target"',
    );
    expect(byLine.get(4).error.message).toContain(
      'the question is missing: give one of "input", "question", "prompt"',
    );
    expect(byLine.get(5)).toMatchObject({
      id: 4,
      reply: 'answer to the sea',
      score: null,
      error: { stage: 'scorer', message: 'the scorer failed: cannot score line 4' },
    });
    expect(byLine.get(6).error.message).toBe('duplicate id 1');
    expect(byLine.get(7)).toMatchObject({ id: 5, score: 0.5, error: null });
    const summary = summaryOf(result.stdout);
    expect(summary).toMatchObject({ items: 7, scored: 2, errors: 5, accuracy: 1.5 / 7 });

    // With the scorer fixed, the next run scores the stored reply without calling the model again.
    const requests = fake.requests.length;
    const again = await runCli(['eval', data, '--scorer', scorer, '-o', output, ...modelFlags()], {
      env: { EVAL_SCORER_FIXED: '1' },
    });
    expect(again.code).toBe(2);
    expect(fake.requests.length).toBe(requests);
    expect(summaryOf(again.stdout)).toMatchObject({ items: 7, scored: 3, errors: 4, ran: 1, skipped: 6 });
    const last = jsonl(output).at(-1);
    expect(last).toMatchObject({ id: 4, reply: 'answer to the sea', score: 1, error: null });
    // The invalid lines were not written twice.
    expect(jsonl(output)).toHaveLength(8);
  });

  it('says clearly when --scorer names nothing usable or the data file is missing', async () => {
    const data = writeData([{ input: 'x', expected: 'y' }]);
    const bad = await runCli([
      'eval',
      data,
      '--scorer',
      'fuzzy',
      '-o',
      join(dir, 'r.jsonl'),
      ...modelFlags(),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(
      'lagent: --scorer must be exact, includes or a module file; fuzzy is not a file\n',
    );
    const missing = await runCli([
      'eval',
      join(dir, 'none.jsonl'),
      '--scorer',
      'exact',
      '-o',
      join(dir, 'r.jsonl'),
      ...modelFlags(),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`lagent: data file not found: ${join(dir, 'none.jsonl')}\n`);
    expect(existsSync(join(dir, 'r.jsonl'))).toBe(false);
  });

  it('records the model calls with --record and runs again from them with --replay, reaching no model', async () => {
    const data = writeData(
      Array.from({ length: 4 }, (_, i) => ({ id: i, input: `item ${i}`, expected: `answer to item ${i}` })),
    );
    const recording = join(dir, 'run.jsonl');
    const first = await runCli([
      'eval',
      data,
      '--scorer',
      'exact',
      '-o',
      join(dir, 'a.jsonl'),
      '--record',
      recording,
      ...modelFlags(),
    ]);
    expect(first.code).toBe(0);
    expect(summaryOf(first.stdout)).toMatchObject({ items: 4, accuracy: 1 });
    const requests = fake.requests.length;
    fake.setScript(() => ({ status: 500, error: { message: 'the model must not be reached' } }));
    const replayed = await runCli([
      'eval',
      data,
      '--scorer',
      'exact',
      '-o',
      join(dir, 'b.jsonl'),
      '--replay',
      recording,
      ...modelFlags(),
    ]);
    expect(replayed.code).toBe(0);
    expect(fake.requests.length).toBe(requests);
    expect(summaryOf(replayed.stdout)).toMatchObject({ items: 4, scored: 4, accuracy: 1 });
    expect(
      jsonl(join(dir, 'b.jsonl'))
        .map((line) => line.reply)
        .sort(),
    ).toEqual(
      jsonl(join(dir, 'a.jsonl'))
        .map((line) => line.reply)
        .sort(),
    );
  });
});
