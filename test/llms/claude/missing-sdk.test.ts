import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/without-anthropic-sdk.mjs', import.meta.url));
const entry = fileURLToPath(new URL('../../../src/llms/index.ts', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('AsyncClaudeAPI without @anthropic-ai/sdk', () => {
  it('the entry imports, and the first call is a ConfigurationError saying what to install', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', fixture, entry], {
      cwd: root,
      timeout: 60_000,
    });
    expect(stdout.trim()).toBe(
      "ConfigurationError: install @anthropic-ai/sdk to use AsyncClaudeAPI (npm install @anthropic-ai/sdk): Cannot find package '@anthropic-ai/sdk'",
    );
  }, 70_000);
});
