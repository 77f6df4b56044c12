import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const fixture = fileURLToPath(new URL('./fixtures/agent-per-round.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Functions of the library's call path, by the names V8's trace gives them (names no Node internal uses).
 * The mock model's timer queue (`Latency#settleDue`) is scaffolding, not the call path: compiled early it
 * keeps a round's promise machinery and is thrown away with it, which says nothing about the agents.
 */
const CALL_PATH = [
  'callAsync',
  'runTurn',
  'finishTurn',
  'remember',
  'inputsOf',
  'toMessages',
  'toAgentMessage',
  'messageOf',
  'promptOf',
  'requireLLM',
  '#append',
  'linkChain',
  'buildReply',
  'modelReplyOf',
];

describe('the call path across agents that are made and dropped (keepShape)', () => {
  it('is not deoptimised when every agent, session, message and turn of a round has died', async () => {
    const { stdout } = await run(
      process.execPath,
      // Optimising compiles run on the main thread: which functions finish compiling before the fixture
      // ends then depends on the calls made, not on how busy the machine's other cores are.
      [
        '--expose-gc',
        '--no-concurrent-recompilation',
        '--trace-opt',
        '--trace-deopt',
        '--import',
        'tsx',
        fixture,
      ],
      { cwd: root, timeout: 60_000, maxBuffer: 64 * 2 ** 20 },
    );
    expect(stdout).toContain('round 5 done');
    const lines = stdout.split('\n');
    const nameOf = (line: string) => /<(?:JSFunction|SharedFunctionInfo) ([^ >]+)/.exec(line)?.[1];
    // The rounds ran optimised code of the call path, so there was something to lose (which functions
    // V8 optimises on their own, rather than inlined into their callers, changes with the code)...
    const optimised = new Set(
      lines.filter((line) => /^\[completed (?:optimizing|compiling) .*TURBOFAN/.test(line)).map(nameOf),
    );
    expect(CALL_PATH.filter((name) => optimised.has(name)).length).toBeGreaterThanOrEqual(5);
    // ...and none of it was thrown away because a class's hidden class died with its instances.
    const lost = lines
      .filter((line) => line.includes('reason: weak objects'))
      .map(nameOf)
      .filter((name) => name !== undefined && CALL_PATH.includes(name));
    expect(lost).toEqual([]);
  }, 70_000);
});
