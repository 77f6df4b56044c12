import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { AsyncAgent, AsyncStreamingAgent } from 'lagent-ts';
import { AsyncMockLLM, type FakeOpenAIServer, type FakeRequest, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentLike } from '#src/cli/agent-like';
import { runChat } from '#src/cli/chat';
import { comparedCharacters } from '../helpers/compared-text';
import { CLI, childEnv, FIXTURES, ROOT } from './helpers';

/**
 * `lagent chat` in a real terminal: tmux runs the REPL, the test types with `send-keys` and reads the screen with
 * `capture-pane`. The model is a fake OpenAI server in this process that streams a slow reply on request.
 */

const run = promisify(execFile);
const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const SOCKET = `lagent-cli-test-${process.pid}`;

let fake: FakeOpenAIServer;
let dir: string;

const lastUser = (request: FakeRequest): string => String(request.body?.messages?.at(-1)?.content ?? '');

function tmux(...args: string[]): Promise<{ stdout: string }> {
  return run('tmux', ['-L', SOCKET, ...args], { env: childEnv() });
}

async function screen(session: string): Promise<string> {
  return (await tmux('capture-pane', '-p', '-t', session)).stdout;
}

/** Waits until the pane shows what `check` looks for, and gives the screen. */
async function waitFor(
  session: string,
  check: (text: string) => boolean,
  timeoutMs = 15_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let text = '';
  while (Date.now() < deadline) {
    text = await screen(session);
    if (check(text)) return text;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the terminal never showed what was expected; it shows:\n${text}`);
}

const shows = (needle: string) => (text: string) => text.includes(needle);
const quote = (value: string) => `'${value.replaceAll("'", "'\\''")}'`;

/** Starts `lagent chat ...args` in a new tmux session; the pane says EXITED <code> when the command ends. */
async function startChat(session: string, args: string[]): Promise<void> {
  const command = [process.execPath, '--import', 'tsx', CLI, 'chat', ...args].map(quote).join(' ');
  await tmux(
    'new-session',
    '-d',
    '-s',
    session,
    '-x',
    '120',
    '-y',
    '40',
    '-c',
    ROOT,
    `${command}; echo "EXITED $?"; sleep 60`,
  );
  await waitFor(session, (text) => /^> ?$/m.test(text));
}

beforeAll(async () => {
  if (!hasTmux) return;
  dir = mkdtempSync(join(tmpdir(), 'lagent-chat-'));
  fake = await startFakeOpenAI({
    script: (request) => {
      const question = lastUser(request);
      // A slow reply that never ends: 300 words, 5 characters every 100 ms (30 s), then the stream stays open.
      if (question.includes('slow'))
        return { content: 'word '.repeat(300), chunkSize: 5, chunkDelayMs: 100, hang: true };
      return `echo: ${question} [${request.body.messages.length} messages]`;
    },
  });
});

afterAll(async () => {
  if (!hasTmux) return;
  await tmux('kill-server').catch(() => {});
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!hasTmux)('lagent chat in a terminal', () => {
  it('streams replies, stops one on Ctrl-C and stays, and saves, resets and loads the conversation', async () => {
    const session = 'main';
    await startChat(session, ['--model', 'fake', '--base-url', fake.baseURL, '--api-key', 'test-key']);

    await tmux('send-keys', '-t', session, 'hello', 'Enter');
    await waitFor(session, shows('echo: hello [1 messages]'));

    // The slow reply shows up piece by piece.
    await tmux('send-keys', '-t', session, 'be slow', 'Enter');
    const partial = await waitFor(session, shows('word word word'));
    await waitFor(
      session,
      (text) => (text.match(/word/g) ?? []).length > (partial.match(/word/g) ?? []).length,
    );

    // Ctrl-C stops the reply (its request is dropped: nothing more comes), not the program.
    await tmux('send-keys', '-t', session, 'C-c');
    await waitFor(session, shows('[stopped]'));
    await expect.poll(() => fake.requests.at(-1)?.aborted).toBe(true);

    // The stopped question left no trace: the model sees hello, its answer, and the new question.
    await tmux('send-keys', '-t', session, 'again', 'Enter');
    await waitFor(session, shows('echo: again [3 messages]'));

    const saved = join(dir, 'state.json');
    await tmux('send-keys', '-t', session, `/save ${saved}`, 'Enter');
    await waitFor(session, shows('[saved] 4 message(s)'));
    const state = JSON.parse(readFileSync(saved, 'utf8'));
    expect(state.memory.map((message: { content: string }) => message.content)).toEqual([
      'hello',
      'echo: hello [1 messages]',
      'again',
      'echo: again [3 messages]',
    ]);
    expect(state.memory[0]).toHaveProperty('stream_state');

    await tmux('send-keys', '-t', session, '/reset', 'Enter');
    await waitFor(session, shows('[reset]'));
    await tmux('send-keys', '-t', session, 'fresh', 'Enter');
    await waitFor(session, shows('echo: fresh [1 messages]'));

    await tmux('send-keys', '-t', session, `/load ${saved}`, 'Enter');
    await waitFor(session, shows('[loaded] 4 message(s)'));
    await tmux('send-keys', '-t', session, 'resumed', 'Enter');
    await waitFor(session, shows('echo: resumed [5 messages]'));
    expect(fake.requests.at(-1)?.body.messages.map((m: { content: string }) => m.content)).toEqual([
      'hello',
      'echo: hello [1 messages]',
      'again',
      'echo: again [3 messages]',
      'resumed',
    ]);

    // A bad command and a missing file are reported; the REPL goes on.
    await tmux('send-keys', '-t', session, `/load ${join(dir, 'missing.json')}`, 'Enter');
    await waitFor(session, shows('[error] ENOENT'));

    // Ctrl-C with text at the prompt drops the text; at an empty prompt it leaves, with exit code 0.
    const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';
    await tmux('send-keys', '-t', session, 'half-typed');
    await waitFor(session, (text) => lastLine(text) === '> half-typed');
    await tmux('send-keys', '-t', session, 'C-c');
    await waitFor(session, (text) => lastLine(text) === '>');
    expect(await screen(session)).not.toContain('EXITED');
    await tmux('send-keys', '-t', session, 'C-c');
    await waitFor(session, shows('EXITED 0'));
  });

  it('approves and declines a tool call waiting for approval; a typed message is held, not a silent decline', async () => {
    const session = 'approval';
    await startChat(session, ['--agent', `${FIXTURES}approval-agent.ts`]);
    await tmux('send-keys', '-t', session, 'delete /tmp/a', 'Enter');
    await waitFor(session, shows('Delete {"path":"/tmp/a"} (id call_1)'));
    // "yes" would decline the call if it were sent: the REPL says so and sends nothing.
    await tmux('send-keys', '-t', session, 'yes', 'Enter');
    const held = await waitFor(session, shows('[waiting] Delete still waits for a decision'));
    expect(held).not.toContain('echo: yes');
    await tmux('send-keys', '-t', session, '/pending', 'Enter');
    await waitFor(session, (text) => (text.match(/\(id call_1\)/g) ?? []).length >= 2);
    await tmux('send-keys', '-t', session, '/approve', 'Enter');
    await waitFor(session, shows('Done: deleted /tmp/a'));
    expect(await screen(session)).toContain('[approved] Delete {"path":"/tmp/a"} (id call_1)');

    await tmux('send-keys', '-t', session, 'delete /tmp/b', 'Enter');
    await waitFor(session, shows('(id call_2)'));
    await tmux('send-keys', '-t', session, '/decline keep it', 'Enter');
    const declined = await waitFor(session, shows('Done: The user declined this call of Delete: keep it'));
    expect(declined).toContain('[declined] Delete {"path":"/tmp/b"} (id call_2): keep it');
    expect(declined).not.toContain('deleted /tmp/b');
    await tmux('send-keys', '-t', session, 'C-d');
    await waitFor(session, shows('EXITED 0'));
  });

  it('runs an agent module and leaves on Ctrl-D', async () => {
    const session = 'module';
    await startChat(session, ['--agent', `${FIXTURES}echo-agent.ts`]);
    expect(await screen(session)).toContain('lagent chat with echo');
    await tmux('send-keys', '-t', session, 'hi there', 'Enter');
    await waitFor(session, shows('echo:hi there#1'));
    await tmux('send-keys', '-t', session, 'C-d');
    await waitFor(session, shows('EXITED 0'));
  });
});

describe.skipIf(!hasTmux)('lagent batch in a terminal', () => {
  it('draws a progress bar with the rate and the ETA', async () => {
    const session = 'batch';
    const input = join(dir, 'in.jsonl');
    writeFileSync(
      input,
      `${Array.from({ length: 5 }, (_, i) => JSON.stringify({ id: i, message: `q${i}` })).join('\n')}\n`,
    );
    const args = ['batch', input, '-o', join(dir, 'out.jsonl'), '--agent', `${FIXTURES}echo-agent.ts`];
    const command = [process.execPath, '--import', 'tsx', CLI, ...args].map(quote).join(' ');
    await tmux(
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      '120',
      '-y',
      '10',
      '-c',
      ROOT,
      `${command}; echo "EXITED $?"; sleep 60`,
    );
    const text = await waitFor(session, shows('EXITED'));
    expect(text).toMatch(/batch [█░]+ 100% \| 5\/5 \| [\d.]+\/s \| ETA 0s \| 0 failed/);
    expect(text).toContain('batch: 5 done, 0 failed');
    expect(text).toContain('EXITED 0');
  });
});

describe('lagent chat and what it prints (in process)', () => {
  /** Runs the REPL on piped streams: types `lines`, then Ctrl-D; gives what it printed. */
  async function chat(agent: AgentLike, lines: string[], showReasoning = false) {
    const input = new PassThrough();
    const output = new PassThrough();
    const errors = new PassThrough();
    let out = '';
    let err = '';
    output.on('data', (chunk) => {
      out += chunk;
    });
    errors.on('data', (chunk) => {
      err += chunk;
    });
    const done = runChat(agent, { input, output, errorOutput: errors, showReasoning });
    for (const line of lines) input.write(`${line}\n`);
    input.end();
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the chat is stuck; it printed:\n${out}\n${err}`)), 5000);
    });
    try {
      await Promise.race([done, stuck]);
    } finally {
      clearTimeout(timer);
    }
    return { out, err };
  }

  it("shows a reasoning model's thinking before the answer with --reasoning, and not without", async () => {
    const script = () => [{ reasoning: 'Hmm, \x1b[31mthink.', content: 'Answer.' }];
    const streaming = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: script(), chunkSize: 4 }),
    });
    expect((await chat(streaming, ['q'], true)).out).toContain('Hmm, think.\nAnswer.\n');
    const plain = new AsyncAgent({ llm: new AsyncMockLLM({ responses: script() }) });
    expect((await chat(plain, ['q'], true)).out).toContain('Hmm, think.\nAnswer.\n');
    const quiet = new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: script() }) });
    const { out } = await chat(quiet, ['q']);
    expect(out).toContain('Answer.');
    expect(out).not.toContain('think');
  });

  it('prints a reply without its escape sequences and control characters, even cut across chunks', async () => {
    const reply =
      '\x1b]0;pwned\x07Hello \x1b[31mred\x1b[0m\tdone\r\x1b[2K\x1b]52;c;ZXZpbA==\x1b\\ \x9b2Jend\x07\x08\nnext line';
    const agent = new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: [reply], chunkSize: 3 }) });
    const { out } = await chat(agent, ['hi']);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for control characters
    expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
    expect(out).toContain('Hello red\tdone end\nnext line\n');
  });

  it('answers calls waiting for approval: /pending, /approve (edited), /decline with a reason; a typed message asks first', async () => {
    const { default: createAgent } = await import('./fixtures/approval-agent');
    const agent = createAgent() as unknown as AgentLike;
    const { out, err } = await chat(agent, [
      'delete /tmp/a',
      'yes',
      '/pending',
      '/approve',
      'delete /tmp/b /tmp/c',
      '/approve',
      '/approve call_2 {"path": "/tmp/b2"}',
      '/decline not that one',
      'delete /tmp/d',
      'hello',
      'hello',
    ]);
    // The call waits, named with its arguments and id; "yes" is not sent (it would decline it) but held.
    expect(out).toContain(
      '[waiting for approval]\n  Delete {"path":"/tmp/a"} (id call_1)\n/approve [JSON], /decline [REASON]\n',
    );
    expect(out).not.toContain('Waiting for approval:');
    expect(err).toContain(
      '[waiting] Delete still waits for a decision: /approve or /decline; type the message again to send it and decline it\n',
    );
    expect(out).not.toContain('echo: yes');
    expect(out).toContain(
      '[approved] Delete {"path":"/tmp/a"} (id call_1)\n[tool] Delete {"path":"/tmp/a"}\n[result] deleted /tmp/a\nDone: deleted /tmp/a\n',
    );
    // Two wait: /approve must name one; the round runs once both are decided, the edited call with its arguments.
    expect(err).toContain('[error] 2 calls wait: /approve ID (or all); /pending lists them\n');
    expect(out).toContain(
      '[approved] Delete {"path":"/tmp/b"} (id call_2) with {"path":"/tmp/b2"}\n[waiting] still to decide: call_3\n',
    );
    expect(out).toContain('[declined] Delete {"path":"/tmp/c"} (id call_3): not that one\n');
    expect(out).toMatch(
      /\[result\] deleted \/tmp\/b2\n\[result\] error: The user declined this call of Delete: not that one/,
    );
    // The repeated message is sent, and the decline it makes is said.
    expect(out).toMatch(
      /\[declined\] Delete \{"path":"\/tmp\/d"\} \(id call_4\): you sent a new message\n\[tool\] Delete .*\n\[result\] error: The user declined this call of Delete: the user sent a new message\. It was not run\.\necho: hello\n/,
    );
    expect(out.match(/echo: hello/g)).toHaveLength(1);
    expect(
      await (agent as unknown as { pendingInterrupts(id: number): Promise<unknown[]> }).pendingInterrupts(0),
    ).toEqual([]);
  });

  it('prints a long streamed reply from its deltas: no chunk is compared with what was printed', async () => {
    const reply = 'abcdefghij'.repeat(2_000);
    const agent = new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: [reply], chunkSize: 4 }) });
    let out = '';
    // 5,000 chunks: comparing each with what was printed would read 50 million characters.
    const compared = await comparedCharacters(async () => {
      out = (await chat(agent, ['hi'])).out;
    });
    expect(out).toContain(`${reply}\n`);
    expect(compared).toBeLessThanOrEqual(4 * reply.length);
  });

  it.skipIf(spawnSync('mkfifo', ['--version']).status !== 0)(
    'refuses to /load or /save anything but a regular file, instead of blocking',
    async () => {
      const fifoDir = mkdtempSync(join(tmpdir(), 'lagent-chat-fifo-'));
      try {
        const fifo = join(fifoDir, 'pipe');
        expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
        const agent = new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: ['ok'] }) });
        const saved = join(fifoDir, 'state.json');
        const { out, err } = await chat(agent, [
          `/load ${fifo}`,
          `/save ${fifo}`,
          '/load /dev/zero',
          'hello',
          `/save ${saved}`,
          `/load ${saved}`,
        ]);
        expect(err).toContain(
          `[error] ${fifo} is not a regular file\n[error] ${fifo} is not a regular file\n`,
        );
        expect(err).toContain('[error] /dev/zero is not a regular file');
        expect(out).toContain(`[saved] 2 message(s) to ${saved}`);
        expect(out).toContain(`[loaded] 2 message(s) from ${saved}`);
      } finally {
        rmSync(fifoDir, { recursive: true, force: true });
      }
    },
  );
});
