import { expect, it } from 'vitest';
import { FIXTURES, startCli } from './helpers';

/**
 * `lagent serve` with an agent module that exports `resourceId(request)`: each call reads the memory of the
 * user the module recognised, never the one a body names.
 */

const AGENT = `${FIXTURES}resource-agent.ts`;

it("serves each user their own memory, from the agent module's resourceId export", async () => {
  const cli = await startCli(['serve', '--agent', AGENT, '--port', '0'], /listening on http:/);
  try {
    const base = /(http:\/\/\S+)/.exec(cli.line)![1]!;
    const say = async (user: string, sessionId: string, message: string, extra = {}) => {
      const response = await fetch(`${base}/chat_completion`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-user-token': user },
        body: JSON.stringify({ message, session_id: sessionId, ...extra }),
      });
      expect(response.status).toBe(200);
      return String(((await response.json()) as { content: unknown }).content);
    };
    await say('token-alice', 'a1', 'My locker code at the harbour gym is 4719.');
    await say('token-bob', 'b1', 'My locker code at the harbour gym is 8823.');
    const alice = await say('token-alice', 'a2', 'What is my locker code at the harbour gym?');
    expect(alice).toContain('4719');
    expect(alice).not.toContain('8823');
    // A body that names alice changes nothing: bob reads his own memory.
    const bob = await say('token-bob', 'b2', 'What is my locker code at the harbour gym?', {
      resource_id: 'alice',
    });
    expect(bob).toContain('8823');
    expect(bob).not.toContain('4719');
  } finally {
    expect(await cli.stop('SIGTERM')).toBe(0);
  }
}, 60_000);
