import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const hasRedisServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** Runs `examples/queue.ts` as `npx tsx` would: it must finish by itself, leaving nothing running. */
function runExample(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/queue.ts'], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

const modelFree = () => {
  const env = { ...process.env };
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'REDIS_URL']) delete env[name];
  return env;
};

describe('examples/queue.ts', () => {
  it.runIf(hasRedisServer)('serves a sub-agent from two workers on its own redis-server', async () => {
    const { code, output } = await runExample(modelFree());
    expect(output).toContain('two workers are taking jobs from the queue "experts"');
    expect(output).toMatch(/alice: \[coordinator\] The expert says: In Redis/);
    expect(output).toMatch(/expert: One at a time, in call order/);
    expect(output).toContain('workers closed');
    expect(code).toBe(0);
  });

  it('says so and exits 0 when Redis is not reachable', async () => {
    const { code, output } = await runExample({ ...modelFree(), REDIS_URL: 'redis://127.0.0.1:1' });
    expect(output).toMatch(/Redis is not reachable: could not connect to Redis at 127\.0\.0\.1:1/);
    expect(code).toBe(0);
  });
});
