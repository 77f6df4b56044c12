import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/processes';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/approval.ts', () => {
  it('pauses before the deletion, saves the session, and resumes it in fresh agents: declined, then approved', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.OPENAI_API_KEY;
    delete env.OPENAI_BASE_URL;
    const { code, stdout, stderr } = await runProcess(
      process.execPath,
      ['--import', 'tsx', 'examples/approval.ts'],
      { cwd: root, env, timeoutMs: 30_000 },
    );
    expect(stderr).not.toMatch(/Error|at .+:\d+:\d+/);
    expect(code).toBe(0);
    expect(stdout).toContain('paused (reply type: interrupt); waiting for approval of:');
    expect(stdout).toContain(`call_1: DeleteFile({"name":"old.log"}) at path ''`);
    expect(stdout).toContain('files while paused: notes.txt, old.log');
    const saved = /saved the paused session to (.+)/.exec(stdout)?.[1];
    expect(saved).toMatch(/session\.json$/);
    const [declined, approved] = stdout.split('=== Approved, in another fresh agent ===') as [string, string];
    // Declined: the tool did not run, the model read the reason, the file is still there.
    expect(declined).toContain(
      '[ActionExecutor] The user declined this call of DeleteFile: keep it until Friday',
    );
    expect(declined).toContain('answer: I left old.log in place.');
    expect(declined).toMatch(/files now: notes\.txt, old\.log\n/);
    // Approved in another fresh agent from the same saved session: the tool ran once, the file is gone.
    expect(approved).toContain('[ActionExecutor] deleted old.log');
    expect(approved).toContain('answer: Deleted old.log; notes.txt is still there.');
    expect(approved).toMatch(/files now: notes\.txt\n/);
    // The history of each resumed session: the question, the call, its answer, the reply; no resume message.
    expect(approved.match(/^ {2}\[/gm)).toHaveLength(4);
    // The example removed its temporary directory.
    expect(existsSync(dirname(saved!))).toBe(false);
  }, 40_000);
});
