import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/processes';
import { CLI, childEnv, FIXTURES, ROOT, runCli } from './helpers';

/** The command line's help and its errors: one clear line on stderr, no stack trace, a non-zero exit code. */

const dir = mkdtempSync(join(tmpdir(), 'lagent-cli-'));

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const noStack = (stderr: string) => expect(stderr).not.toMatch(/\n\s+at /);

describe('lagent --help', () => {
  it('lists the commands, the agent flags and the tools', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['chat', 'serve', 'worker', 'batch'])
      expect(result.stdout).toMatch(new RegExp(`\\n  ${command} `));
    expect(result.stdout).toContain('--agent ./my-agent.ts');
    expect(result.stdout).toContain('python');
    // Commander wraps help at 80 columns without a terminal.
    const flat = (text: string) => text.replace(/\s+/g, ' ');
    const batch = await runCli(['batch', '--help']);
    expect(flat(batch.stdout)).toContain('--concurrency <n>');
    expect(flat(batch.stdout)).toContain('(default: 4)');
    expect(flat(batch.stdout)).toContain('(env: OPENAI_API_KEY)');
    const serve = await runCli(['serve', '--help']);
    expect(flat(serve.stdout)).toContain('(default: "127.0.0.1")');
    expect(flat(serve.stdout)).toContain('(env: LAGENT_TOKEN)');
  });

  it('runs through a symlink to the entry file, as node_modules/.bin/lagent is', async () => {
    const link = join(dir, 'lagent.ts');
    symlinkSync(CLI, link);
    const result = await runProcess(process.execPath, ['--import', 'tsx', link, '--version'], {
      env: childEnv(),
      cwd: ROOT,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('examples/agents/assistant.ts', () => {
  it('is an agent module the commands load (the mock model without OPENAI_* variables)', async () => {
    const input = join(dir, 'questions.jsonl');
    writeFileSync(input, '{"id": "q", "message": "what is lagent?"}\n');
    const output = join(dir, 'answers.jsonl');
    const result = await runCli(['batch', input, '-o', output, '--agent', 'examples/agents/assistant.ts']);
    expect(result.code).toBe(0);
    expect(JSON.parse(readFileSync(output, 'utf8')).message).toMatchObject({
      sender: 'assistant',
      content: '(mock model, turn 1) You asked: what is lagent?',
    });
  });
});

describe('lagent errors', () => {
  it('an unknown flag', async () => {
    const result = await runCli(['chat', '--bogus']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("error: unknown option '--bogus'");
    noStack(result.stderr);
  });

  it('an unknown command', async () => {
    const result = await runCli(['dance']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("unknown command 'dance'");
  });

  it('a bad flag value', async () => {
    const result = await runCli(['serve', '--port', 'http']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--port must be an integer from 0 to 65535');
    const concurrency = await runCli(['batch', 'in.jsonl', '-o', 'out.jsonl', '--concurrency', '0']);
    expect(concurrency.code).toBe(1);
    expect(concurrency.stderr).toContain('--concurrency must be an integer from 1');
  });

  it('a missing agent module', async () => {
    const result = await runCli(['chat', '--agent', './no/such/agent.ts']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('lagent: agent module not found: ./no/such/agent.ts\n');
  });

  it('an agent module without a default export', async () => {
    const result = await runCli(['serve', '--agent', `${FIXTURES}no-default.ts`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('has no default export');
    noStack(result.stderr);
  });

  it('--agent together with model flags', async () => {
    const result = await runCli(['chat', '--agent', `${FIXTURES}echo-agent.ts`, '--model', 'gpt-4o']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--agent cannot be combined with --model');
  });

  it('an unknown tool', async () => {
    const result = await runCli(['chat', '--tools', 'python,teleport', '--api-key', 'k']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'lagent: unknown tool "teleport" in --tools (known: python, browser, arxiv)\n',
    );
  });

  it('no API key for the built-in agent', async () => {
    const result = await runCli(['chat'], { env: { OPENAI_API_KEY: '' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('lagent: no API key: pass --api-key or set OPENAI_API_KEY');
  });

  it('an unreachable model: batch records it per line, exit code 2', async () => {
    const input = join(dir, 'in.jsonl');
    writeFileSync(input, '{"id": 1, "message": "hi"}\n');
    const output = join(dir, 'out.jsonl');
    const result = await runCli([
      'batch',
      input,
      '-o',
      output,
      '--base-url',
      'http://127.0.0.1:1/v1',
      '--api-key',
      'k',
    ]);
    expect(result.code).toBe(2);
    noStack(result.stderr);
    const failure = JSON.parse(readFileSync(join(dir, 'out.errors.jsonl'), 'utf8'));
    expect(failure).toMatchObject({ id: 1, name: 'LLMRequestError' });
    expect(failure.error).toContain('could not reach the server');
  });

  it('an unreachable Redis', async () => {
    const result = await runCli([
      'worker',
      '--agent',
      `${FIXTURES}echo-agent.ts`,
      '--redis',
      'redis://127.0.0.1:1',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^lagent: cannot start the worker on redis:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
    noStack(result.stderr);
  });
});
