// examples/mcp.ts runs on its own (as `npx tsx examples/mcp.ts` does), exits by itself and leaves no server.
import { describe, expect, it } from 'vitest';
import { isRunning, runProcess } from '../helpers/processes';
import { root } from './helpers';

const runExample = () =>
  runProcess(process.execPath, ['--import', 'tsx', 'examples/mcp.ts'], { cwd: root, timeoutMs: 30_000 });

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
