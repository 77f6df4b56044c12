// examples/mcp.ts runs on its own (as `npx tsx examples/mcp.ts` does), exits by itself and leaves no server.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isRunning, root } from './helpers';

function runExample(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/mcp.ts'], {
      cwd: root,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('examples/mcp.ts', () => {
  it('calls server-everything and its own served tool, then exits', { timeout: 40_000 }, async () => {
    const { code, stdout, stderr } = await runExample();
    expect(code, stderr).toBe(0);
    expect(stdout).toContain('get-sum(20, 22) -> The sum of 20 and 22 is 42.');
    expect(stdout).toContain('Invalid arguments for everything.get-sum');
    expect(stdout).toContain('remote.weather(Paris) -> Sunny in Paris, 21 °C');
    const pid = Number(/pid (\d+)\) stopped/.exec(stdout)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(isRunning(pid)).toBe(false);
  });
});
