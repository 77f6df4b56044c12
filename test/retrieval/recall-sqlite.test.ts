import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

/*
 * Semantic recall over an SQLiteStore session store and an SQLiteVectorStore in the same file, across
 * processes (fixtures/recall-child.ts): a process is killed (SIGKILL) after it committed a turn and while that
 * turn's embedding is under way; the next process embeds it before its first recall, exactly once.
 */

const child = fileURLToPath(new URL('./fixtures/recall-child.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'lagent-recall-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FACT = 'My locker code at the harbour gym is 4719.';
const QUESTION = 'What is my locker code at the harbour gym?';
const CHAT = [
  'The weather was lovely on the walk along the river today',
  'I watched a film about penguins and glaciers last night',
  'We are painting the kitchen a pale shade of green this weekend',
  'My neighbour adopted a very loud parrot called Captain',
  'The bakery on the corner started selling sourdough pretzels',
  'I have been reading a novel set in a lighthouse in Norway',
  'Our football team lost again, three goals to nil',
  'I finally fixed the squeaky hinge on the garden gate',
];

interface Asked {
  recalled: string | null;
  embedded: string[];
  count: number;
  positions: number[];
  messages: number;
}

/** Starts the plant process; resolves once its turn is committed and being embedded, then kills it. */
function plantAndKill(db: string): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const process_ = spawn(process.execPath, ['--import', 'tsx', child, db, 'plant'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    process_.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    process_.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
      if (stdout.includes('"committed":true')) process_.kill('SIGKILL');
    });
    process_.on('error', reject);
    process_.on('close', (code, signal) => {
      if (signal === 'SIGKILL') resolve(signal);
      else reject(new Error(`plant process ended ${code}: ${stderr}`));
    });
  });
}

function ask(db: string, texts: string[]): Promise<Asked> {
  return new Promise((resolve, reject) => {
    const process_ = spawn(process.execPath, ['--import', 'tsx', child, db, 'ask', ...texts], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    process_.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk;
    });
    process_.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk;
    });
    process_.on('error', reject);
    process_.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Asked);
      else reject(new Error(`ask process ended ${code}: ${stderr}`));
    });
  });
}

it('a turn committed by a process killed before its embedding is embedded once by the next, and recalled', async () => {
  const db = join(dir, 'crash.db');
  expect(await plantAndKill(db)).toBe('SIGKILL');

  // The next process: the fact was committed (the session has it) but never indexed; its first recall
  // catches up, then the fact falls out of the window and is recalled.
  const second = await ask(db, [...CHAT, QUESTION]);
  const messages = 2 + 2 * CHAT.length + 2;
  expect(second.messages).toBe(messages);
  expect(second.recalled).toContain(`user: ${FACT}`);
  expect(second.embedded.filter((text) => text === FACT)).toHaveLength(1);
  // Every committed message once: positions 0..n-1, no doubles.
  expect(second.count).toBe(messages);
  expect(second.positions).toEqual(Array.from({ length: messages }, (_, index) => index));

  // A third process: the index persisted, nothing is embedded again but its own turn and query.
  const third = await ask(db, [QUESTION]);
  expect(third.recalled).toContain(`user: ${FACT}`);
  expect(third.embedded).toEqual([QUESTION, QUESTION, 'Noted.']);
  expect(third.count).toBe(messages + 2);
  expect(third.positions).toEqual(Array.from({ length: messages + 2 }, (_, index) => index));
}, 60_000);
