import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FakeOpenAIServer, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers';

/** Which model the built-in agent asks for: `--model`, else `LAGENT_MODEL`, else `OPENAI_MODEL`, else the default. */

let fake: FakeOpenAIServer;
let dir: string;

beforeAll(async () => {
  fake = await startFakeOpenAI({ script: () => 'ok' });
  dir = mkdtempSync(join(tmpdir(), 'lagent-model-env-'));
});

afterAll(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs one `lagent batch` line whose message is `tag` and returns the model its request named. */
async function modelFor(tag: string, args: string[], env: Record<string, string>): Promise<unknown> {
  const input = join(dir, `${tag}.jsonl`);
  writeFileSync(input, `${JSON.stringify({ id: tag, message: tag })}\n`);
  const result = await runCli(
    ['batch', input, '-o', join(dir, `${tag}.out.jsonl`), '--base-url', fake.baseURL, ...args],
    { env },
  );
  expect(result.code, result.stderr).toBe(0);
  const request = fake.requests.find((entry) => entry.body?.messages?.at(-1)?.content === tag);
  return request?.body?.model;
}

describe('the model of the built-in agent', () => {
  it('is OPENAI_MODEL when neither --model nor LAGENT_MODEL is given; LAGENT_MODEL and --model come first', async () => {
    const [fromOpenAI, fromLagent, fromFlag, fromDefault] = await Promise.all([
      modelFor('openai', [], { OPENAI_MODEL: 'model-from-openai-env' }),
      modelFor('lagent', [], {
        OPENAI_MODEL: 'model-from-openai-env',
        LAGENT_MODEL: 'model-from-lagent-env',
      }),
      modelFor('flag', ['--model', 'model-from-flag'], {
        OPENAI_MODEL: 'model-from-openai-env',
        LAGENT_MODEL: 'model-from-lagent-env',
      }),
      modelFor('default', [], {}),
    ]);
    expect(fromOpenAI).toBe('model-from-openai-env');
    expect(fromLagent).toBe('model-from-lagent-env');
    expect(fromFlag).toBe('model-from-flag');
    expect(fromDefault).toBe('gpt-4o-mini');
  }, 40_000);
});
