import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes';
import { FIXTURES, runCli, startCli } from './helpers';

/** `lagent serve` keeps a server without a token on loopback, and passes the Host and Origin allowances on. */

const AGENT = `${FIXTURES}echo-agent.ts`;

function status(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
  });
}

describe('lagent serve: exposure', () => {
  it.each([['0.0.0.0'], ['::']])(
    'refuses --host %s without a token, before loading the agent',
    async (host) => {
      const result = await runCli([
        'serve',
        '--agent',
        `${FIXTURES}does-not-exist.ts`,
        '--host',
        host,
        '--port',
        '0',
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `^lagent: refusing to serve on ${host.replace(/\./g, '\\.')} without a token: .*--token.*LAGENT_TOKEN`,
        ),
      );
    },
  );

  it('serves on loopback without a token; --allowed-hosts and --allowed-origins reach the server', async () => {
    const cli = await startCli(
      [
        'serve',
        '--agent',
        AGENT,
        '--port',
        '0',
        '--host',
        'localhost',
        '--allowed-hosts',
        'agents.internal, other.internal',
        '--allowed-origins',
        'https://app.example',
      ],
      /listening on http:/,
    );
    try {
      const url = /(http:\/\/\S+)/.exec(cli.line)![1]!;
      const health = `${url}/health_check`;
      expect(await status(health, {})).toBe(200);
      expect(await status(health, { host: 'other.internal' })).toBe(200);
      expect(await status(health, { host: 'rebind.evil.example' })).toBe(403);
      expect(await status(health, { origin: 'https://app.example' })).toBe(200);
      expect(await status(health, { origin: 'https://evil.example' })).toBe(403);
    } finally {
      expect(await cli.stop('SIGTERM')).toBe(0);
    }
  });

  it("prints a client's session id and text on stderr escaped: no terminal escape reaches the operator", async () => {
    const cli = await startCli(
      ['serve', '--agent', `${FIXTURES}failing-agent.ts`, '--port', '0'],
      /listening on http:/,
    );
    try {
      const url = /(http:\/\/\S+)/.exec(cli.line)![1]!;
      const response = await fetch(`${url}/chat_completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // Clear the screen, retitle the window, forge a log line.
        body: JSON.stringify({
          message: ['hi\x1b]0;owned\x07'],
          session_id: 'x\x1b[2J\nHTTPAgentServer: all good',
        }),
      });
      expect(response.status).toBe(500);
      await waitFor(() => cli.output().stderr.includes('failed'));
      const { stderr } = cli.output();
      // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be there
      expect(stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
      expect(stderr).toContain(
        '(session x\\x1b[2J\\nHTTPAgentServer: all good) failed: Error: cannot answer hi\\x1b]0;owned\\x07',
      );
      expect(stderr.split('\n').filter((line) => line.startsWith('HTTPAgentServer'))).toHaveLength(1);
    } finally {
      await cli.stop();
    }
  });
});
