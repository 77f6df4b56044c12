import { describe, expect, it } from 'vitest';
import { FIXTURES, runCli, startCli } from './helpers';

/**
 * `lagent serve --protocols` and `lagent ui --protocols`: which protocols the server speaks besides Lagent's own
 * (all by default).
 */

describe('lagent serve --protocols', () => {
  it('serves every protocol by default and says where; --protocols picks some', async () => {
    const all = await startCli(
      ['serve', '--agent', `${FIXTURES}echo-agent.ts`, '--port', '0'],
      /also speaks/,
    );
    try {
      expect(all.output().stdout).toContain(
        'also speaks openai (POST /v1/chat/completions), ai-sdk (POST /api/chat), ag-ui (POST /ag-ui), a2a (GET /.well-known/agent-card.json)',
      );
      const base = /(http:\/\/\S+)/.exec(all.output().stdout)![1]!;
      const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string }[] };
      expect(models.data.map((model) => model.id)).toEqual(['echo']);
      expect((await fetch(`${base}/.well-known/agent-card.json`)).status).toBe(200);
    } finally {
      await all.stop();
    }
    const some = await startCli(
      ['serve', '--agent', `${FIXTURES}echo-agent.ts`, '--port', '0', '--protocols', 'openai'],
      /also speaks/,
    );
    try {
      expect(some.output().stdout).toContain('also speaks openai (POST /v1/chat/completions)\n');
      const base = /(http:\/\/\S+)/.exec(some.output().stdout)![1]!;
      const completion = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'cli' },
        body: JSON.stringify({ model: 'echo', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(
        ((await completion.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message
          .content,
      ).toBe('echo:hi#1');
      expect((await fetch(`${base}/.well-known/agent-card.json`)).status).toBe(404);
    } finally {
      await some.stop();
    }
  }, 60_000);

  it('an unknown protocol is refused before the agent loads', async () => {
    const result = await runCli([
      'serve',
      '--agent',
      `${FIXTURES}echo-agent.ts`,
      '--port',
      '0',
      '--protocols',
      'openai,mcp',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      '--protocols: unknown protocol "mcp" (known: openai, ai-sdk, ag-ui, a2a, or all, none)',
    );
  });
});

describe('lagent ui --protocols', () => {
  it("serves every protocol by default behind the page's secret; --protocols none serves none", async () => {
    const all = await startCli(
      ['ui', '--agent', `${FIXTURES}echo-agent.ts`, '--port', '0', '--token', 'page-secret'],
      /also speaks/,
    );
    try {
      expect(all.output().stdout).toContain(
        'lagent ui: also speaks openai (POST /v1/chat/completions), ai-sdk (POST /api/chat), ag-ui (POST /ag-ui), a2a (GET /.well-known/agent-card.json)',
      );
      const base = new URL(/(http:\/\/\S+)/.exec(all.output().stdout)![1]!).origin;
      expect((await fetch(`${base}/v1/models`)).status).toBe(401);
      const models = await fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer page-secret' } });
      expect(((await models.json()) as { data: { id: string }[] }).data.map((model) => model.id)).toEqual([
        'echo',
      ]);
    } finally {
      await all.stop();
    }
    const none = await startCli(
      [
        'ui',
        '--agent',
        `${FIXTURES}echo-agent.ts`,
        '--port',
        '0',
        '--token',
        'page-secret',
        '--protocols',
        'none',
      ],
      /^lagent ui: .* at http/,
    );
    try {
      expect(none.output().stdout).not.toContain('also speaks');
      const base = new URL(/(http:\/\/\S+)/.exec(none.output().stdout)![1]!).origin;
      const models = await fetch(`${base}/v1/models`, { headers: { authorization: 'Bearer page-secret' } });
      expect(models.status).toBe(404);
    } finally {
      await none.stop();
    }
  }, 60_000);
});
