import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { AsyncFunctionCallingAgent, asyncTool } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runBatch } from '#src/cli/batch';
import { ROOT, runCli } from './helpers';

/*
 * `lagent batch` and interrupts, end to end (the CLI in a child process): a line whose reply is an interrupt
 * is recorded with its interrupts and the session's state, counted as waiting, not failed; a later run whose
 * input line carries decisions continues it (in a fresh process) and appends the answer.
 */

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-batch-interrupt-'));
  // The agent module: a function-calling agent whose Delete needs approval; each run of the tool is a line in RUNS.
  writeFileSync(
    join(dir, 'agent.ts'),
    `import { appendFileSync } from 'node:fs';
import { z } from '${ROOT}node_modules/zod/index.js';
import { AsyncFunctionCallingAgent, asyncTool } from '${ROOT}src/index';
import { AsyncMockLLM } from '${ROOT}src/testing/index';

export default function createAgent() {
  const remove = asyncTool({
    name: 'Delete',
    parameters: z.object({ path: z.string() }),
    needsApproval: ({ path }) => path.startsWith('/tmp/'),
    run: async ({ path }) => {
      appendFileSync(process.env.RUNS!, path + '\\n');
      return 'deleted ' + path;
    },
  });
  const llm = new AsyncMockLLM({
    responses: (messages) => {
      const last = messages.at(-1)!;
      if (last.role === 'tool') return 'done: ' + String(last.content);
      return { toolCalls: [{ id: 'del_1', name: 'Delete', arguments: { path: String(last.content) } }] };
    },
  });
  return new AsyncFunctionCallingAgent({ llm, actions: [remove], name: 'cleaner' });
}
`,
  );
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function jsonl(path: string): any[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

const lines = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;

describe('lagent batch: interrupts', () => {
  it('records a waiting line with its interrupts, counts it apart, and a run with decisions continues it', async () => {
    const input = join(dir, 'in.jsonl');
    const output = join(dir, 'out.jsonl');
    const runs = join(dir, 'runs.txt');
    const env = { RUNS: runs };
    const agent = ['--agent', join(dir, 'agent.ts'), '--no-progress'];
    writeFileSync(
      input,
      lines([
        { id: 1, message: '/tmp/a' },
        { id: 2, message: 'notes.txt' },
        { id: 3, message: '/tmp/c' },
      ]),
    );
    const first = await runCli(['batch', input, '-o', output, ...agent], { env });
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/1 done, 0 failed, 2 waiting for approval/);
    const recorded = jsonl(output);
    expect(recorded.map((r) => [r.id, r.message.type ?? null, r.interrupts?.map((i: any) => i.id)])).toEqual(
      expect.arrayContaining([
        [1, 'interrupt', ['del_1']],
        [2, null, undefined],
        [3, 'interrupt', ['del_1']],
      ]),
    );
    const waiting = recorded.find((r) => r.id === 1);
    expect(waiting.interrupts[0]).toEqual({
      id: 'del_1',
      kind: 'approval',
      path: '',
      toolCall: { id: 'del_1', name: 'Delete', arguments: { path: '/tmp/a' } },
    });
    expect(waiting.state).toBeTypeOf('object');
    expect(readFileSync(runs, 'utf8')).toBe('notes.txt\n');
    expect(readFileSync(join(dir, 'out.errors.jsonl'), 'utf8')).toBe('');

    // Run again without decisions: nothing runs, both still wait.
    const idle = await runCli(['batch', input, '-o', output, ...agent], { env });
    expect(idle.stderr).toMatch(/0 done, 0 failed, 2 waiting for approval.*1 already in/);
    expect(jsonl(output)).toHaveLength(3);

    // Decisions for 1 (approve) and 3 (decline): both finish; 2 is skipped.
    writeFileSync(
      input,
      lines([
        { id: 1, message: '/tmp/a', decisions: [{ id: 'del_1', approve: true }] },
        { id: 2, message: 'notes.txt' },
        { id: 3, message: '/tmp/c', decisions: [{ id: 'del_1', approve: false, reason: 'keep it' }] },
      ]),
    );
    const resumed = await runCli(['batch', input, '-o', output, ...agent], { env });
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(/2 done, 0 failed, 1 already in/);
    expect(resumed.stderr).not.toMatch(/waiting/);
    const after = jsonl(output);
    expect(after).toHaveLength(5);
    const last = (id: number) => after.filter((r) => r.id === id).at(-1);
    expect(last(1)).toEqual({ id: 1, message: expect.objectContaining({ content: 'done: deleted /tmp/a' }) });
    expect(last(3).message.content).toMatch(/^done: .*declined.*keep it/);
    expect(readFileSync(runs, 'utf8')).toBe('notes.txt\n/tmp/a\n');

    // Everything is answered now: a further run does nothing.
    const none = await runCli(['batch', input, '-o', output, ...agent], { env });
    expect(none.stderr).toMatch(/0 done, 0 failed, 3 already in/);
  }, 90_000);

  it('a line given decisions before it ever ran applies them to the interrupt it meets', async () => {
    const input = join(dir, 'in.jsonl');
    const output = join(dir, 'out.jsonl');
    const runs: string[] = [];
    writeFileSync(
      input,
      lines([{ id: 'x', message: '/tmp/x', decisions: [{ id: 'del_1', approve: true }] }]),
    );
    const summary = await runBatch(inProcessAgent(runs), { input, output, progress: false, log: quiet() });
    expect(summary).toMatchObject({ done: 1, failed: 0, waiting: 0 });
    expect(jsonl(output)).toEqual([
      { id: 'x', message: expect.objectContaining({ content: 'done: deleted /tmp/x' }) },
    ]);
    expect(runs).toEqual(['/tmp/x']);
  });

  it('malformed decisions are an invalid line, reported, nothing run', async () => {
    const input = join(dir, 'in.jsonl');
    const output = join(dir, 'out.jsonl');
    const runs: string[] = [];
    writeFileSync(input, lines([{ id: 1, message: '/tmp/a', decisions: [{ id: 'del_1' }] }]));
    const summary = await runBatch(inProcessAgent(runs), { input, output, progress: false, log: quiet() });
    expect(summary).toMatchObject({ done: 0, failed: 1, waiting: 0 });
    const [failure] = jsonl(join(dir, 'out.errors.jsonl'));
    expect(failure).toMatchObject({ id: 1, name: 'InvalidLine', error: expect.stringMatching(/decision 0/) });
    expect(runs).toEqual([]);
  });
});

/** The agent module's agent, made in this process. */
function inProcessAgent(runs: string[]) {
  const remove = asyncTool({
    name: 'Delete',
    parameters: z.object({ path: z.string() }),
    needsApproval: ({ path }) => path.startsWith('/tmp/'),
    run: async ({ path }) => {
      runs.push(path);
      return `deleted ${path}`;
    },
  });
  const llm = new AsyncMockLLM({
    responses: (messages) => {
      const last = messages.at(-1)!;
      if (last.role === 'tool') return `done: ${String(last.content)}`;
      return { toolCalls: [{ id: 'del_1', name: 'Delete', arguments: { path: String(last.content) } }] };
    },
  });
  return new AsyncFunctionCallingAgent({ llm, actions: [remove], name: 'cleaner' });
}

function quiet() {
  const log = new PassThrough();
  log.resume();
  return log;
}
