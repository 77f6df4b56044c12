import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startCli } from './helpers';

/**
 * `lagent serve` and `lagent ui` serving an agent module that imports another copy of lagent-ts (a global
 * `lagent` serving a project with its own copy): the built package, copied into a temporary project's
 * node_modules. Its messages are not instances of this copy's AgentMessage; the servers recognise them by
 * their shape, and hand the agent messages it can read.
 */

let project: string;
let agentModule: string;
/**
 * The CLI runs from source under tsx, which would map `lagent-ts` to these sources by the project's tsconfig
 * paths: the children get a tsconfig without them, so the module's import finds its own copy.
 */
let env: Record<string, string>;

beforeAll(() => {
  if (!existsSync(`${ROOT}dist/index.js`)) {
    execFileSync(process.execPath, [`${ROOT}node_modules/tsup/dist/cli-default.js`], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  }
  project = mkdtempSync(join(tmpdir(), 'lagent-other-copy-'));
  const copy = join(project, 'node_modules', 'lagent-ts');
  mkdirSync(copy, { recursive: true });
  cpSync(`${ROOT}dist`, join(copy, 'dist'), { recursive: true });
  cpSync(`${ROOT}package.json`, join(copy, 'package.json'));
  // The copy's own dependencies: the ones installed here.
  symlinkSync(`${ROOT}node_modules`, join(copy, 'node_modules'), 'dir');
  writeFileSync(join(project, 'tsconfig.json'), '{}');
  env = { TSX_TSCONFIG_PATH: join(project, 'tsconfig.json') };
  agentModule = join(project, 'agent.mjs');
  writeFileSync(
    agentModule,
    `import { AsyncAgent, AsyncStreamingAgent, AgentMessage } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';

// Proof that this module runs its own copy: the path its AgentMessage came from.
export const copyOf = import.meta.resolve('lagent-ts');

export default function create({ streaming }) {
  const llm = new AsyncMockLLM({ chunkSize: 3, responses: (messages) => 'echo: ' + String(messages.at(-1)?.content) });
  return streaming ? new AsyncStreamingAgent({ llm, name: 'copied' }) : new AsyncAgent({ llm, name: 'copied' });
}
`,
  );
}, 600_000);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

/** A server-sent event stream as `[event, data]` pairs. */
function parseEvents(text: string): [string, any][] {
  return text
    .split('\n\n')
    .filter((block) => /^event: /m.test(block))
    .map((block) => [/^event: (.*)$/m.exec(block)![1]!, JSON.parse(/^data: (.*)$/m.exec(block)![1]!)]);
}

async function exercise(base: string, headers: Record<string, string>) {
  const json = { 'content-type': 'application/json', ...headers };
  const answer = await fetch(`${base}/chat_completion`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({
      message: [{ content: 'hello', sender: 'user', extra_info: { k: 1 } }],
      session_id: 's',
    }),
  });
  const text = await answer.text();
  expect(answer.status, text).toBe(200);
  expect(JSON.parse(text)).toMatchObject({ content: 'echo: hello', sender: 'copied', stream_state: 0 });

  const streamed = await fetch(`${base}/chat_completion/stream`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ message: ['streamed words'], session_id: 's' }),
  });
  expect(streamed.status).toBe(200);
  const events = parseEvents(await streamed.text());
  expect(events.at(-1)).toEqual(['message', expect.objectContaining({ content: 'echo: streamed words' })]);
  expect(events.filter(([name]) => name === 'chunk' || name === 'delta').length).toBeGreaterThan(2);

  const memory = (await (await fetch(`${base}/memory/s`, { headers })).json()) as {
    memory: { content: unknown }[];
  };
  expect(memory.memory.map((message) => message.content)).toEqual([
    'hello',
    'echo: hello',
    'streamed words',
    'echo: streamed words',
  ]);
}

describe('an agent module with its own copy of lagent-ts', () => {
  it('lagent serve answers its calls, plain and streamed, and reads its memory', async () => {
    const { copyOf } = (await import(agentModule)) as { copyOf: string };
    expect(copyOf).toContain(project);
    const cli = await startCli(['serve', '--agent', agentModule, '--port', '0'], /listening on http/, {
      env,
    });
    try {
      await exercise(/(http:\/\/\S+)/.exec(cli.line)![1]!, {});
    } finally {
      expect(await cli.stop('SIGTERM')).toBe(0);
    }
  }, 60_000);

  it('lagent ui answers them too, with its secret, and says what needs the project’s own copy', async () => {
    const cli = await startCli(['ui', '--agent', agentModule, '--port', '0'], /^lagent ui: .* at http/, {
      env,
    });
    try {
      const pageUrl = /(http:\/\/\S+)/.exec(cli.line)![1]!;
      const secret = decodeURIComponent(pageUrl.split('#token=')[1] ?? '');
      await exercise(new URL(pageUrl).origin, secret ? { authorization: `Bearer ${secret}` } : {});
      expect(cli.output().stderr).toMatch(/another copy of lagent-ts.*tree/);
    } finally {
      expect(await cli.stop('SIGTERM')).toBe(0);
    }
  }, 60_000);
});
