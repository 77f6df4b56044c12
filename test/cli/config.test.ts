import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeOpenAIServer, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from './helpers';

/**
 * `--config agent.json`: the agent described in JSON (createAgent's rules), served by `lagent serve` in a child
 * process; the model is a fake OpenAI server in this process, the tool a class of lagent-ts/tools named in JSON.
 */

let fake: FakeOpenAIServer;
let dir: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  dir = mkdtempSync(join(tmpdir(), 'lagent-config-'));
});

afterAll(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(name: string, config: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof config === 'string' ? config : JSON.stringify(config));
  return path;
}

describe('lagent serve --config', () => {
  it('serves the function-calling agent a JSON file describes, with the tools it names', async () => {
    const config = writeConfig('agent.json', {
      type: 'AsyncFunctionCallingAgent',
      name: 'researcher',
      template: 'You look things up.',
      llm: { type: 'AsyncGPTAPI', model: 'config-model', baseURL: fake.baseURL, apiKey: 'k' },
      actions: [{ type: 'AsyncArxivSearch' }],
    });
    fake.setScript((request) => {
      // The agent offers the tool the config named, with the system prompt and model it gave.
      const tools = (request.body.tools ?? []).map((tool: any) => tool.function.name);
      return `model=${request.body.model} system=${request.body.messages[0].content} tools=${tools.join(',')}`;
    });
    const cli = await startCli(['serve', '--config', config, '--port', '0'], /listening on http:/);
    try {
      expect(cli.line).toContain('researcher listening on http://127.0.0.1:');
      const url = /(http:\/\/\S+)/.exec(cli.line)![1]!;
      const response = await fetch(`${url}/chat_completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: ['hello'], session_id: 1 }),
      });
      expect(response.status).toBe(200);
      const reply = (await response.json()) as { content: string; sender: string };
      expect(reply.sender).toBe('researcher');
      expect(reply.content).toMatch(/^model=config-model system=You look things up\. tools=ArxivSearch/);
    } finally {
      expect(await cli.stop('SIGTERM')).toBe(0);
    }
  });

  it('says what is wrong with a bad file, and refuses --config with --agent or model flags', async () => {
    // Six processes, started together: each is a cold start of the CLI.
    const [missing, broken, unknown, notAgent, both, withModel] = await Promise.all([
      runCli(['serve', '--config', join(dir, 'nope.json')]),
      runCli(['serve', '--config', writeConfig('broken.json', '{"type": ')]),
      runCli([
        'serve',
        '--config',
        writeConfig('unknown.json', { type: 'AsyncAgent', llm: { type: 'AsyncGptApi', model: 'm' } }),
      ]),
      runCli([
        'serve',
        '--config',
        writeConfig('llm.json', { type: 'AsyncGPTAPI', model: 'm', apiKey: 'k' }),
      ]),
      runCli(['chat', '--config', 'a.json', '--agent', 'b.js']),
      runCli(['chat', '--config', 'a.json', '--model', 'x']),
    ]);
    expect(missing.stderr).toMatch(/^lagent: agent config not found: /);
    expect(broken.stderr).toMatch(/^lagent: cannot read agent config .*broken\.json: .*JSON/);
    expect(unknown.stderr).toContain(
      'llm.type: unknown type "AsyncGptApi" (not a class of lagent-ts or lagent-ts/tools); did you mean "AsyncGPTAPI"?',
    );
    expect(notAgent.stderr).toMatch(/does not describe an agent/);
    expect(both.stderr).toMatch(/--agent and --config cannot be combined/);
    expect(withModel.stderr).toMatch(/--config cannot be combined with --model/);
    for (const result of [missing, broken, unknown, notAgent, both, withModel]) {
      expect(result.code).toBe(1);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  }, 60_000);
});
