import { spawn, spawnSync } from 'node:child_process';
import { existsSync, linkSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { AsyncAgent, type SessionId } from 'lagent-ts';
import { AsyncMockLLM, type FakeOpenAIServer, type FakeRequest, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AgentLike } from '#src/cli/agent-like';
import { runBatch } from '#src/cli/batch';
import { sessionKey } from '#src/schema/session';
import { childEnv, FIXTURES, NODE_ARGS, ROOT, runCli } from './helpers';

/** `lagent batch` end to end: the CLI in a child process, the model a fake OpenAI server in this process. */

let fake: FakeOpenAIServer;
let dir: string;
let inFlight = 0;
let maxInFlight = 0;

const lastUser = (request: FakeRequest): string => String(request.body?.messages?.at(-1)?.content ?? '');

beforeAll(async () => {
  fake = await startFakeOpenAI();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-batch-'));
  inFlight = 0;
  maxInFlight = 0;
  // Each question takes 150 ms; a question containing FAIL gets a 400 (not retried).
  fake.setScript(async (request) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 150));
    inFlight--;
    const question = lastUser(request);
    if (question.includes('FAIL')) return { status: 400, error: { message: `refused: ${question}` } };
    return `answer to ${question}`;
  });
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

function writeInput(lines: unknown[]): string {
  const path = join(dir, 'in.jsonl');
  writeFileSync(
    path,
    `${lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n')}\n`,
  );
  return path;
}

describe('lagent batch', () => {
  it('answers every line, writes { id, message } in Lagent shape, and runs lines concurrently', async () => {
    const input = writeInput(
      Array.from({ length: 8 }, (_, i) => ({ id: `q${i}`, message: `question ${i}` })),
    );
    const output = join(dir, 'out.jsonl');
    const result = await runCli(['batch', input, '-o', output, '--concurrency', '4', ...modelFlags()]);
    expect(result.stderr).toContain('batch: 8 done, 0 failed');
    expect(result.code).toBe(0);
    const lines = jsonl(output);
    expect(lines.map((line) => line.id).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `q${i}`).sort());
    for (const line of lines) {
      expect(line.message.content).toBe(`answer to question ${line.id.slice(1)}`);
      expect(line.message.sender).toBe('assistant');
      expect(line.message).toHaveProperty('stream_state');
      expect(line.message).not.toHaveProperty('streamState');
    }
    expect(maxInFlight).toBe(4);
    // Each line runs on its own session: the model saw only that line's question.
    for (const request of fake.requests.slice(-8)) {
      expect(request.body.messages.filter((m: { role: string }) => m.role === 'user')).toHaveLength(1);
    }
    expect(readFileSync(join(dir, 'out.errors.jsonl'), 'utf8')).toBe('');
  });

  it('resumes: ids already in the output are skipped, and a line cut short by a crash runs again', async () => {
    const input = writeInput([
      { id: 1, message: 'one' },
      { id: 2, message: 'two' },
      { id: 3, message: 'three' },
    ]);
    const output = join(dir, 'out.jsonl');
    // A previous run answered id 1 and was killed while writing id 2.
    writeFileSync(
      output,
      `${JSON.stringify({ id: 1, message: { content: 'old answer' } })}\n{"id": 2, "mess`,
    );
    const before = fake.requests.length;
    const result = await runCli(['batch', input, '-o', output, '--concurrency', '1', ...modelFlags()]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('2 done');
    expect(result.stderr).toContain('1 already in');
    expect(fake.requests.slice(before).map(lastUser)).toEqual(['two', 'three']);
    const lines = readFileSync(output, 'utf8').split('\n');
    const parsed = lines.flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return [];
      }
    });
    expect(parsed.map((line) => line.id)).toEqual([1, 2, 3]);
    expect(parsed[0].message.content).toBe('old answer');

    // A third run has nothing to do.
    const again = await runCli(['batch', input, '-o', output, ...modelFlags()]);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('0 done, 0 failed, 3 already in');
    expect(fake.requests.length).toBe(before + 2);
  });

  it('writes failures and malformed lines to the errors file, and exits 2', async () => {
    const input = writeInput([
      { id: 'a', message: 'fine' },
      { id: 'b', message: 'please FAIL' },
      'this is not json',
      { message: 'no id here' },
      { id: 'a', message: 'duplicate' },
      { id: 'c', message: 42 },
      { id: 'd', message: [{ sender: 'user', content: 'as a message object' }] },
    ]);
    const output = join(dir, 'results.jsonl');
    const errors = join(dir, 'failures.jsonl');
    const result = await runCli(['batch', input, '-o', output, '-e', errors, ...modelFlags()]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`failures in ${errors}`);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(
      jsonl(output)
        .map((line) => line.id)
        .sort(),
    ).toEqual(['a', 'd']);
    const failures = jsonl(errors);
    const byLine = new Map(failures.map((failure) => [failure.line, failure]));
    expect(byLine.get(2)).toMatchObject({ id: 'b', name: 'LLMRequestError' });
    expect(byLine.get(2).error).toContain('refused: please FAIL');
    expect(byLine.get(3)).toMatchObject({ name: 'InvalidLine', input: 'this is not json' });
    expect(byLine.get(3).error).toContain('malformed JSON');
    expect(byLine.get(4).error).toContain('"id" is missing');
    expect(byLine.get(5)).toMatchObject({ id: 'a', error: 'duplicate id "a"' });
    expect(byLine.get(6)).toMatchObject({ id: 'c', name: 'InvalidLine' });
    expect(failures).toHaveLength(5);

    // The next run retries the failed line (and rewrites the errors file).
    fake.setScript((request) => `fixed: ${lastUser(request)}`);
    const retry = await runCli(['batch', input, '-o', output, '-e', errors, ...modelFlags()]);
    expect(retry.code).toBe(2); // the invalid lines are still invalid
    expect(jsonl(output).find((line) => line.id === 'b').message.content).toBe('fixed: please FAIL');
    expect(jsonl(errors).map((failure) => failure.line)).toEqual([3, 4, 5, 6]);
  });

  it('runs an agent module, and prints progress lines when stderr is not a terminal', async () => {
    const input = writeInput(Array.from({ length: 3 }, (_, i) => ({ id: i, message: `m${i}` })));
    const output = join(dir, 'out.jsonl');
    const result = await runCli(['batch', input, '-o', output, '--agent', `${FIXTURES}echo-agent.ts`]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/batch: 3\/3 \(0 failed\), [\d.]+\/s, ETA 0s/);
    expect(jsonl(output).map((line) => line.message.content)).toEqual([
      'echo:m0#1',
      'echo:m1#1',
      'echo:m2#1',
    ]);
    const quiet = await runCli([
      'batch',
      input,
      '-o',
      join(dir, 'q.jsonl'),
      '--no-progress',
      '-a',
      `${FIXTURES}echo-agent.ts`,
    ]);
    expect(quiet.stderr).not.toContain('/s, ETA');
  });

  it('stops on SIGINT without recording the calls it aborted (exit 130), and the next run finishes', async () => {
    const input = writeInput(Array.from({ length: 6 }, (_, i) => ({ id: i, message: `slow ${i}` })));
    const output = join(dir, 'out.jsonl');
    let sendSignal: () => void = () => {};
    let signalled = false;
    fake.setScript(async (request, index) => {
      // The first two answer at once; the third request is the moment to stop the run.
      if (index === 2 && !signalled) {
        signalled = true;
        sendSignal();
      }
      if (index >= 2) await new Promise((resolve) => setTimeout(resolve, 2000));
      return `answer to ${lastUser(request)}`;
    });
    const child = spawn(
      process.execPath,
      [...NODE_ARGS, 'batch', input, '-o', output, '--concurrency', '1', ...modelFlags()],
      { env: childEnv(), cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    sendSignal = () => child.kill('SIGINT');
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(130);
    expect(stderr).toContain('stopped: run again to continue');
    expect(jsonl(output).map((line) => line.id)).toEqual([0, 1]);
    expect(readFileSync(join(dir, 'out.errors.jsonl'), 'utf8')).toBe('');

    fake.setScript((request) => `answer to ${lastUser(request)}`);
    const rest = await runCli(['batch', input, '-o', output, ...modelFlags()]);
    expect(rest.code).toBe(0);
    expect(rest.stderr).toContain('4 done, 0 failed, 2 already in');
    expect(
      jsonl(output)
        .map((line) => line.id)
        .sort(),
    ).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it.skipIf(spawnSync('python3', ['--version']).status !== 0)(
    '--tools python builds a function-calling agent with the real interpreter',
    async () => {
      fake.setScript((request) => {
        const result = request.body.messages.find((message: { role: string }) => message.role === 'tool');
        if (result === undefined) {
          return {
            toolCalls: [
              { name: request.body.tools[0].function.name, arguments: { command: 'print(6 * 7)' } },
            ],
          };
        }
        return `the interpreter printed ${String(result.content).trim()}`;
      });
      const input = writeInput([{ id: 'math', message: 'what is 6 * 7?' }]);
      const output = join(dir, 'out.jsonl');
      const result = await runCli(['batch', input, '-o', output, '--tools', 'python', ...modelFlags()]);
      expect(result.code).toBe(0);
      expect(fake.requests.at(-2)?.body.tools.map((tool: any) => tool.function.name)).toEqual([
        'IPythonInteractive',
      ]);
      expect(jsonl(output)[0].message.content).toBe('the interpreter printed 42');
    },
  );

  it('says clearly when the input file is missing, or is also the output', async () => {
    const result = await runCli([
      'batch',
      join(dir, 'missing.jsonl'),
      '-o',
      join(dir, 'out.jsonl'),
      ...modelFlags(),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`lagent: input file not found: ${join(dir, 'missing.jsonl')}\n`);
    expect(existsSync(join(dir, 'out.jsonl'))).toBe(false);
    const input = writeInput([{ id: 1, message: 'x' }]);
    const same = await runCli(['batch', input, '-o', input, ...modelFlags()]);
    expect(same.code).toBe(1);
    expect(same.stderr).toBe('lagent: the output file must not be the input file\n');
    expect(readFileSync(input, 'utf8')).toBe('{"id":1,"message":"x"}\n');
  });
});

describe('lagent batch: the files it writes', () => {
  it.skipIf(spawnSync('mkfifo', ['--version']).status !== 0)(
    'refuses a FIFO or /dev/stdout as the output at once, instead of waiting for a reader forever',
    async () => {
      const input = writeInput([{ id: 1, message: 'x' }]);
      const requests = fake.requests.length;
      const fifo = join(dir, 'out.fifo');
      expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
      const toFifo = await runCli(['batch', input, '-o', fifo, ...modelFlags()], { timeoutMs: 15_000 });
      expect(toFifo.code).toBe(1);
      expect(toFifo.stderr).toBe(
        `lagent: the output file ${fifo} is not a regular file (a FIFO, a device or a directory cannot be written and read back)\n`,
      );
      const errorsToFifo = await runCli(
        ['batch', input, '-o', join(dir, 'out.jsonl'), '-e', fifo, ...modelFlags()],
        {
          timeoutMs: 15_000,
        },
      );
      expect(errorsToFifo.code).toBe(1);
      expect(errorsToFifo.stderr).toMatch(/the errors file .* is not a regular file/);
      const toStdout = await runCli(['batch', input, '-o', '/dev/stdout', ...modelFlags()], {
        timeoutMs: 15_000,
      });
      expect(toStdout.code).toBe(1);
      expect(toStdout.stderr).toMatch(/the output file \/dev\/stdout is a symbolic link/);
      // Refused before any line ran.
      expect(fake.requests).toHaveLength(requests);
    },
  );
});

describe('lagent batch: links (in process)', () => {
  const quiet = { progress: false, log: new PassThrough().resume() };
  const agent: AgentLike = new AsyncAgent({ llm: new AsyncMockLLM({ responses: () => 'ok' }) }) as never;
  const INPUT = '{"id":1,"message":"x"}\n';

  it('never truncates the input: --errors naming a link to it, or another name of it, is refused', async () => {
    const input = writeInput([{ id: 1, message: 'x' }]);
    const link = join(dir, 'errors.jsonl');
    symlinkSync(input, link);
    await expect(
      runBatch(agent, { input, output: join(dir, 'out.jsonl'), errors: link, ...quiet }),
    ).rejects.toThrow(`the errors file ${link} is a symbolic link`);
    const hard = join(dir, 'hard.jsonl');
    linkSync(input, hard);
    await expect(
      runBatch(agent, { input, output: join(dir, 'out.jsonl'), errors: hard, ...quiet }),
    ).rejects.toThrow(`the errors file ${hard} is also the input file`);
    await expect(runBatch(agent, { input: hard, output: input, ...quiet })).rejects.toThrow(
      `the output file ${input} is also the input file`,
    );
    expect(readFileSync(input, 'utf8')).toBe(INPUT);
  });

  it('does not write through a link: an output naming one is refused and its target left as it was', async () => {
    const input = writeInput([{ id: 1, message: 'x' }]);
    const target = join(dir, 'elsewhere.txt');
    writeFileSync(target, 'precious\n');
    const link = join(dir, 'out.jsonl');
    symlinkSync(target, link);
    await expect(runBatch(agent, { input, output: link, ...quiet })).rejects.toThrow(
      `the output file ${link} is a symbolic link`,
    );
    expect(readFileSync(target, 'utf8')).toBe('precious\n');
    expect(existsSync(join(dir, 'out.errors.jsonl'))).toBe(false);
    // A plain file there is written as before.
    rmSync(link);
    const summary = await runBatch(agent, { input, output: link, ...quiet });
    expect(summary.done).toBe(1);
    expect(readFileSync(link, 'utf8')).toMatch(/^\{"id":1,"message":\{/);
  });
});

describe('lagent batch ids and resuming (in process)', () => {
  /** A real agent on a scripted model, recording the session of every call. */
  function recordingAgent() {
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: (messages) => `seen ${messages.length}` }),
    });
    const sessions: unknown[] = [];
    const recording: AgentLike = {
      call: (input, options) => {
        sessions.push(options.sessionId);
        return agent.call(input as never, options);
      },
      stateDict: (sessionId) => agent.stateDict(sessionId),
      reset: (sessionId) => agent.reset(sessionId),
    };
    return { agent: recording, sessions };
  }
  const quiet = { progress: false, log: new PassThrough().resume() };

  it('keeps ids as their JSON text: 1e400, 20-digit ids, and 1 versus "1"', async () => {
    const input = join(dir, 'in.jsonl');
    writeFileSync(
      input,
      [
        '{"id": 1e400, "message": "huge"}',
        '{"id": 12345678901234567890, "message": "twenty digits"}',
        '{"id": 12345678901234567891, "message": "twenty digits, next"}',
        '{"id": 1, "message": "number one"}',
        '{"id": "1", "message": "string one"}',
        '{"message": "before the id", "id": -0.5e-3}',
        '{"message": "a quoted \\"id\\": 9, {[ inside", "id": 8}',
      ].join('\n'),
    );
    const output = join(dir, 'out.jsonl');
    const { agent, sessions } = recordingAgent();
    const first = await runBatch(agent, { input, output, concurrency: 3, ...quiet });
    expect(first).toMatchObject({ done: 7, failed: 0, skipped: 0 });
    const ids = readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.slice(0, line.indexOf(',"message"')));
    expect(ids.sort()).toEqual(
      [
        '{"id":1e400',
        '{"id":12345678901234567890',
        '{"id":12345678901234567891',
        '{"id":1',
        '{"id":"1"',
        '{"id":-0.5e-3',
        '{"id":8',
      ].sort(),
    );
    // Every line ran on its own session.
    expect(new Set(sessions.map((id) => sessionKey(id as SessionId))).size).toBe(7);
    // A second run has nothing left to answer.
    const second = await runBatch(agent, { input, output, ...quiet });
    expect(second).toMatchObject({ done: 0, failed: 0, skipped: 7 });
    expect(sessions).toHaveLength(7);
  });

  it('repairs a last line cut short by a crash, and answers that line again', async () => {
    const input = writeInput([
      { id: 1, message: 'one' },
      { id: 2, message: 'two' },
    ]);
    const output = join(dir, 'out.jsonl');
    writeFileSync(output, '{"id":1,"message":{"content":"old"}}\n{"id":2,"message":{"cont');
    const { agent } = recordingAgent();
    expect(await runBatch(agent, { input, output, ...quiet })).toMatchObject({ done: 1, skipped: 1 });
    const lines = readFileSync(output, 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    const records = lines.slice(0, -1).map((line) => JSON.parse(line));
    expect(records.map((record) => record.id)).toEqual([1, 2]);
    expect(records[1].message.content).toBe('seen 1');

    // A whole last record that only lacks its newline is kept.
    writeFileSync(output, '{"id":1,"message":{"content":"old"}}\n{"id":2,"message":{"content":"kept"}}');
    expect(await runBatch(agent, { input, output, ...quiet })).toMatchObject({ done: 0, skipped: 2 });
    expect(readFileSync(output, 'utf8')).toBe(
      '{"id":1,"message":{"content":"old"}}\n{"id":2,"message":{"content":"kept"}}\n',
    );
  });
});
