import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeOpenAIServer, type FakeRequest, startFakeOpenAI } from 'lagent-ts/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { childEnv, FIXTURES, NODE_ARGS, ROOT, runCli } from './helpers';

/** `lagent batch` and `lagent chat` with --record and --replay, end to end: the CLI in child processes. */

let fake: FakeOpenAIServer | undefined;
let dir: string;

const lastUser = (request: FakeRequest): string => String(request.body?.messages?.at(-1)?.content ?? '');

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-record-cli-'));
  fake = await startFakeOpenAI();
  let n = 0;
  // Answers are numbered in arrival order, so a second run against the server would answer differently.
  fake.setScript((request) => {
    const question = lastUser(request);
    if (question.includes('FAIL')) return { status: 400, error: { message: `refused: ${question}` } };
    n++;
    return { content: `answer #${n} to ${question}`, chunkSize: 3 };
  });
});

afterEach(async () => {
  await fake?.close();
  fake = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const modelFlags = (baseURL: string) => [
  '--model',
  'fake-model',
  '--base-url',
  baseURL,
  '--api-key',
  'test-key',
];

function writeInput(questions: string[]): string {
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, questions.map((message, id) => `${JSON.stringify({ id, message })}\n`).join(''));
  return input;
}

/** Runs `lagent chat ...args` with `lines` typed on its stdin; gives what it printed. */
function chat(
  args: string[],
  lines: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_ARGS, 'chat', ...args], {
      cwd: ROOT,
      env: childEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(lines.map((line) => `${line}\n`).join(''));
  });
}

describe('lagent batch --record / --replay', () => {
  it('replays a recorded run with the server stopped: the same output and errors, byte for byte', async () => {
    const input = writeInput(['first question', 'second', 'FAIL this one', 'last one']);
    const recording = join(dir, 'run.jsonl');
    const recorded = join(dir, 'recorded.jsonl');
    const baseURL = fake!.baseURL;
    const first = await runCli([
      'batch',
      input,
      '-o',
      recorded,
      '--concurrency',
      '1',
      '--no-progress',
      '--record',
      recording,
      ...modelFlags(baseURL),
    ]);
    expect(first.code).toBe(2); // one line failed
    expect(readFileSync(recorded, 'utf8')).toContain('answer #3 to last one');
    expect(readFileSync(recording, 'utf8').trim().split('\n')).toHaveLength(4);

    await fake!.close();
    fake = undefined;
    const replayed = join(dir, 'replayed.jsonl');
    const second = await runCli([
      'batch',
      input,
      '-o',
      replayed,
      '--concurrency',
      '1',
      '--no-progress',
      '--replay',
      recording,
      ...modelFlags(baseURL),
    ]);
    expect(second.code).toBe(2);
    expect(readFileSync(replayed)).toEqual(readFileSync(recorded));
    expect(readFileSync(join(dir, 'replayed.errors.jsonl'))).toEqual(
      readFileSync(join(dir, 'recorded.errors.jsonl')),
    );

    // No API key and no server needed; many lines at once give the same lines (in the order they finish).
    const concurrent = join(dir, 'concurrent.jsonl');
    const third = await runCli([
      'batch',
      input,
      '-o',
      concurrent,
      '--concurrency',
      '4',
      '--no-progress',
      '--replay',
      recording,
    ]);
    expect(third.code).toBe(2);
    const sorted = (path: string) => readFileSync(path, 'utf8').trim().split('\n').sort();
    expect(sorted(concurrent)).toEqual(sorted(recorded));
  });

  it('a question not recorded fails its line with the closest recorded request', async () => {
    const recording = join(dir, 'run.jsonl');
    const input = writeInput(['What is the capital of France?']);
    await runCli([
      'batch',
      input,
      '-o',
      join(dir, 'a.jsonl'),
      '--no-progress',
      '--record',
      recording,
      ...modelFlags(fake!.baseURL),
    ]);
    const changed = writeInput(['What is the capital of Spain?']);
    const result = await runCli([
      'batch',
      changed,
      '-o',
      join(dir, 'b.jsonl'),
      '--no-progress',
      '--replay',
      recording,
    ]);
    expect(result.code).toBe(2);
    const [failure] = readFileSync(join(dir, 'b.errors.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(failure.name).toBe('ReplayMissError');
    expect(failure.error).toMatch(
      /closest one: message 0 \(user\) differs: recorded .*France.*, got .*Spain/,
    );
  });

  it('records and replays every model of an agent tree from an --agent module, each from its own calls', async () => {
    const recording = join(dir, 'run.jsonl');
    const input = writeInput(['one', 'two']);
    const agent = ['--agent', `${FIXTURES}two-models-agent.ts`];
    const recorded = join(dir, 'recorded.jsonl');
    const first = await runCli([
      'batch',
      input,
      '-o',
      recorded,
      '-c',
      '1',
      '--no-progress',
      '--record',
      recording,
      ...agent,
    ]);
    expect(first.code, first.stderr).toBe(0);
    expect(readFileSync(recorded, 'utf8')).toContain('review(draft(one))');
    const labels = readFileSync(recording, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).label);
    expect(labels.sort()).toEqual(['drafter.llm', 'drafter.llm', 'reviewer.llm', 'reviewer.llm']);

    const replayed = join(dir, 'replayed.jsonl');
    const second = await runProcessDown([
      'batch',
      input,
      '-o',
      replayed,
      '-c',
      '1',
      '--no-progress',
      '--replay',
      recording,
      ...agent,
    ]);
    expect(second.code, second.stderr).toBe(0);
    expect(readFileSync(replayed)).toEqual(readFileSync(recorded));
  });

  it('refuses --record with --replay', async () => {
    const input = writeInput(['x']);
    const result = await runCli([
      'batch',
      input,
      '-o',
      join(dir, 'o.jsonl'),
      '--record',
      'a.jsonl',
      '--replay',
      'b.jsonl',
      ...modelFlags(fake!.baseURL),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--record and --replay cannot be combined');
  });
});

/** `lagent ...args` with the fixture's models failing: a replay that answers never reached them. */
function runProcessDown(args: string[]) {
  return runCli(args, { env: { LAGENT_TEST_MODELS_DOWN: '1' } });
}

describe('lagent chat --record / --replay', () => {
  it('replays a streamed conversation without the server: the same text on stdout', async () => {
    const recording = join(dir, 'chat.jsonl');
    const baseURL = fake!.baseURL;
    const lines = ['hello there', 'and a follow-up'];
    const first = await chat(['--record', recording, ...modelFlags(baseURL)], lines);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('answer #2 to and a follow-up');
    await fake!.close();
    fake = undefined;
    const second = await chat(['--replay', recording, ...modelFlags(baseURL)], lines);
    expect(second.code, second.stderr).toBe(0);
    // Where the REPL prints its "> " prompts depends on when piped lines arrive; the replies are the same.
    const replies = (stdout: string) => stdout.replaceAll('> ', '').trimEnd();
    expect(replies(second.stdout)).toBe(replies(first.stdout));
    expect(replies(second.stdout)).toContain('answer #1 to hello there\nanswer #2 to and a follow-up');
  });
});
