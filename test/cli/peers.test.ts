import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/processes';
import { childEnv, NODE_ARGS, ROOT } from './helpers';

/*
 * A command or an example that needs an optional peer which is not installed stops at once, saying what to
 * install for that command: `install fastify to use lagent ui (npm install fastify)`, never a class name from
 * deep inside or an unrelated error later. The peers are hidden by a resolve hook, as if never installed.
 */

const HIDE = fileURLToPath(new URL('../helpers/hide-packages.mjs', import.meta.url));

function run(args: string[], hidden: string[]) {
  return runProcess(process.execPath, ['--import', HIDE, ...args], {
    env: childEnv({ LAGENT_HIDE_PACKAGES: hidden.join(','), OPENAI_API_KEY: 'unused' }),
    cwd: ROOT,
    timeoutMs: 60_000,
  });
}

describe('missing optional peers', () => {
  it.each([
    ['ui', ['ui', '--port', '0'], ['fastify'], 'install fastify to use lagent ui (npm install fastify)'],
    [
      'serve',
      ['serve', '--port', '0'],
      ['fastify'],
      'install fastify to use lagent serve (npm install fastify)',
    ],
    [
      'worker',
      ['worker'],
      ['bullmq', 'ioredis'],
      'install bullmq and ioredis to use lagent worker (npm install bullmq ioredis)',
    ],
  ])(
    'lagent %s says what to install for it, before loading the agent',
    async (_name, args, hidden, says) => {
      const result = await run([...NODE_ARGS, ...args], hidden);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`lagent: ${says}`);
      expect(result.stderr).not.toContain('HTTPAgentServer');
      expect(result.stderr).not.toContain('cannot listen');
      expect(result.stdout).toBe('');
    },
    70_000,
  );

  it('the deep-research example names its peers instead of failing later with a SyntaxError', async () => {
    const result = await run(
      ['--import', 'tsx', 'examples/deep-research/main.ts'],
      ['@mozilla/readability', 'linkedom'],
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      'examples/deep-research needs @mozilla/readability and linkedom, optional peers of lagent-ts: npm install @mozilla/readability linkedom',
    );
    expect(result.stderr).not.toContain('SyntaxError');
  }, 70_000);
});
