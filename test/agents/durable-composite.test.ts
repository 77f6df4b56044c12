import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/processes';

/*
 * A three-level composite (an agent with its own forward -> a function-calling agent whose tool needs
 * approval -> that tool runs a sub-agent with tools) paused in one child process and resumed in another.
 * Each resume is a new child process that knows only what the first left on disk (a copy per case):
 * `state.json` (stateDict) or `store.db` (SQLiteStore for memories and journals).
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/composite-approval.ts', import.meta.url));
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

type Mode = 'state' | 'sqlite';
type Decision = 'approve' | 'decline' | 'edit' | 'supersede';
interface Outcome {
  type: string;
  content: string;
  interrupts: unknown[];
  memories: Record<string, string[]>;
  /** sqlite: the session's unfinished journals after the call (stateDict mode keeps none: undefined). */
  unfinished?: number;
}

async function child(args: string[]): Promise<string> {
  const { code, stdout, stderr } = await runProcess(process.execPath, ['--import', 'tsx', fixture, ...args], {
    cwd: root,
    timeoutMs: 30_000,
  });
  if (code !== 0) throw new Error(`the fixture failed (${code}): ${stderr}`);
  return stdout.trim().split('\n').at(-1)!;
}

/** The side effects recorded in `dir`, in order. */
function effectsIn(dir: string): string[] {
  const file = join(dir, 'effects.txt');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Pauses in one process; what it leaves in its directory is where every resume starts from. */
async function pause(mode: Mode) {
  const dir = mkdtempSync(join(tmpdir(), `lagent-composite-${mode}-`));
  dirs.push(dir);
  const paused = JSON.parse(await child([mode, 'pause', dir])) as {
    type: string;
    interrupts: unknown[];
    unfinished?: number;
  };
  writeFileSync(join(dir, 'interrupts.json'), JSON.stringify(paused.interrupts));
  return { dir, paused, effectsWhilePaused: effectsIn(dir) };
}

/** Resumes a copy of the paused process's directory with `decision` in a new process. */
async function resume(mode: Mode, from: string, decision: Decision) {
  const dir = `${from}-${decision}`;
  dirs.push(dir);
  cpSync(from, dir, { recursive: true });
  const outcome = JSON.parse(await child([mode, 'resume', dir, decision])) as Outcome;
  return { outcome, effects: effectsIn(dir) };
}

const PAUSE_EFFECTS: Record<Mode, string[]> = { state: [], sqlite: ['planner'] };
/** What the worker's model was asked to do (sqlite mode: through the planner). */
const ASKED: Record<Mode, string> = {
  state: 'Publish a note about Paris',
  sqlite: 'plan: Publish a note about Paris',
};

describe.each(['state', 'sqlite'] as const)(
  'a three-level composite paused in one process, resumed in another (%s)',
  (mode) => {
    let paused!: Awaited<ReturnType<typeof pause>>;
    const runs = {} as Record<Decision, Awaited<ReturnType<typeof resume>>>;
    // One pause, then every decision at once, each in a new process on its own copy of what the pause left.
    beforeAll(async () => {
      paused = await pause(mode);
      const decisions = ['approve', 'decline', 'edit', 'supersede'] as const;
      const results = await Promise.all(decisions.map((decision) => resume(mode, paused.dir, decision)));
      decisions.forEach((decision, i) => {
        runs[decision] = results[i]!;
      });
    }, 60_000);

    it('the pause: an interrupt with the worker path; nothing ran but what came before the tool', async () => {
      expect(paused.paused).toMatchObject({
        type: 'interrupt',
        interrupts: [
          {
            id: 'worker:call_1',
            kind: 'approval',
            path: 'worker',
            toolCall: { id: 'call_1', name: 'Publish', arguments: { topic: 'Paris' } },
          },
        ],
      });
      expect(paused.effectsWhilePaused).toEqual(PAUSE_EFFECTS[mode]);
      // sqlite: the paused call's journal waits, unfinished, for the resume.
      expect(paused.paused.unfinished).toBe(mode === 'sqlite' ? 1 : undefined);
    });

    it('approved: the tool and its sub-agent run once each in the new process; the earlier steps do not run again', async () => {
      const { outcome, effects } = runs.approve;
      expect(effects).toEqual([...PAUSE_EFFECTS[mode], 'publish:Paris', 'lookup:Paris']);
      expect(outcome.type).not.toBe('interrupt');
      expect(outcome.content).toBe('assistant: worker: published Paris with facts (Paris is a capital)');
      expect(outcome.memories.root).toEqual([
        'Publish a note about Paris',
        'assistant: worker: published Paris with facts (Paris is a capital)',
      ]);
      expect(outcome.memories.worker).toEqual([
        ASKED[mode],
        'worker: published Paris with facts (Paris is a capital)',
      ]);
      expect(outcome.memories.researcher).toEqual(['Find facts about Paris', 'facts (Paris is a capital)']);
      // sqlite: the resumed call finished its journal; nothing is left for recover() to replay.
      expect(outcome.unfinished).toBe(mode === 'sqlite' ? 0 : undefined);
    });

    it('approved with edited arguments: the tool and the sub-agent run once with them', async () => {
      const { outcome, effects } = runs.edit;
      expect(effects).toEqual([...PAUSE_EFFECTS[mode], 'publish:Rome', 'lookup:Rome']);
      // The worker's model reads that a person changed its arguments before the result.
      expect(outcome.content).toBe(
        'assistant: worker: The user edited the arguments of this call before approving it; it ran with the arguments shown.\npublished Rome with facts (Rome is a capital)',
      );
      expect(outcome.memories.researcher).toEqual(['Find facts about Rome', 'facts (Rome is a capital)']);
      expect(outcome.unfinished).toBe(mode === 'sqlite' ? 0 : undefined);
    });

    it('declined: neither the tool nor its sub-agent runs; the model reads the reason', async () => {
      const { outcome, effects } = runs.decline;
      expect(effects).toEqual(PAUSE_EFFECTS[mode]);
      expect(outcome.content).toMatch(/^assistant: worker: .*declined this call of Publish: not today/);
      expect(outcome.memories.root).toEqual(['Publish a note about Paris', outcome.content]);
      expect(outcome.memories.researcher ?? []).toEqual([]);
      expect(outcome.unfinished).toBe(mode === 'sqlite' ? 0 : undefined);
    });

    it('superseded by a new message: the waiting call is declined and the new message goes on', async () => {
      const { outcome, effects } = runs.supersede;
      expect(effects.filter((line) => line !== 'planner')).toEqual([]);
      expect(outcome.type).not.toBe('interrupt');
      expect(outcome.content).toMatch(/Never mind, tell me a joke/);
      expect(outcome.content).toMatch(/the user sent a new message/);
      expect(outcome.memories.root!.at(-1)).toBe(outcome.content);
      expect(outcome.memories.researcher ?? []).toEqual([]);
    });

    // A later recover() must not replay the superseded call (rolling the session's memory back to where
    // that call began): the superseding call finishes the journal it declined.
    if (mode === 'sqlite') {
      it('superseded: the declined call leaves no unfinished journal behind', () => {
        expect(runs.supersede.outcome.unfinished).toBe(0);
      });
    }
  },
);
