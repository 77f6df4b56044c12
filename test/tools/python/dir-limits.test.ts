import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActionStatusCode } from 'lagent-ts';
import type { AsyncIPythonInteractive } from 'lagent-ts/tools';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from './helpers';

const { shell, removing } = cleanupAfterEach();

async function run(tool: AsyncIPythonInteractive, command: string) {
  return tool.call({ command }, 'run', { sessionId: 'writer' });
}

const MANY_FILES =
  'import os\nx = 42\nfor i in range(300):\n    open(f"f{i}", "w").close()\nprint("written")';

describe('the session directory is bounded', () => {
  it('a session that left more files than dirLimitFiles is reset before its next run, which says why', async () => {
    const python = shell({ dirLimitFiles: 100 });
    expect((await run(python, MANY_FILES)).toText()).toBe('written\n');
    const refused = await run(python, 'print(x)');
    expect(refused.state).not.toBe(ActionStatusCode.SUCCESS);
    expect(refused.toText()).toMatch(/more than 100 files or 1024 MiB.*session was reset/s);
    // The run after that starts afresh: the variables and the files are gone.
    const fresh = await run(python, 'import os\nprint(len(os.listdir(".")), "x" in globals())');
    expect(fresh.toText()).toBe('0 False\n');
  });

  it('counts bytes as well (dirLimitMB)', async () => {
    const python = shell({ dirLimitMB: 1 });
    await run(python, 'open("big", "wb").write(b"0" * (3 * 1024 * 1024))');
    expect((await run(python, 'print(1)')).toText()).toMatch(/more than 100000 files or 1 MiB/);
    expect((await run(python, 'print(1)')).toText()).toBe('1\n');
  });

  it('keeps a workDir session directory, and says where to remove files', async () => {
    const workDir = mkdtempSync(join(tmpdir(), 'lagent-dir-limits-'));
    removing(workDir);
    const python = shell({ dirLimitFiles: 100, workDir });
    await run(python, MANY_FILES);
    const refused = (await run(python, 'print(1)')).toText();
    expect(refused).toContain(`remove files from ${workDir}`);
    const [sessionDir] = readdirSync(workDir);
    expect(readdirSync(join(workDir, sessionDir!)).length).toBe(300);
  });

  it('within the limits nothing changes: the session keeps its state', async () => {
    const python = shell({ dirLimitFiles: 1000 });
    await run(python, MANY_FILES);
    expect((await run(python, 'print(x)')).toText()).toBe('42\n');
  });
});
