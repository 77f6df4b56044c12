import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ActionStatusCode } from 'lagent-ts';
import {
  AsyncIPythonInteractive,
  AsyncIPythonInteractiveManager,
  AsyncPythonInterpreter,
  extractCode,
  IPythonInteractiveManager,
} from 'lagent-ts/tools';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach, eventually, testOptions } from './helpers';

const FIND_NUMBERS = [
  'def find_numbers():',
  '    positive_factors = [1, 3, 7, 9, 21, 63]',
  '    negative_factors = [-1, -3, -7, -9, -21, -63]',
  '    positive_numbers = [63 / factor for factor in positive_factors]',
  '    negative_numbers = [-63 / factor for factor in negative_factors]',
  '    product = positive_numbers[0] * negative_numbers[0]',
  '    return product',
  '',
  'result = find_numbers()',
  'print(result)',
].join('\n');

const { closing: make } = cleanupAfterEach();

/**
 * Python that marks its session as started (the file `started` in the session's directory, where a session
 * may write), then waits for the test to say go (the file `go` there). Sessions are sandboxed apart: only the
 * test sees them all.
 */
const HOLD = [
  'import os, time',
  "open('started', 'w').close()",
  "while not os.path.exists('go'):",
  '    time.sleep(0.01)',
  "os.remove('started'); os.remove('go')",
].join('\n');

/** Waits until every session directory says its run started, then tells them all to go on. */
async function release(dirs: string[]): Promise<void> {
  await expect.poll(() => dirs.every((dir) => existsSync(join(dir, 'started')))).toBe(true);
  for (const dir of dirs) writeFileSync(join(dir, 'go'), '');
}

/** The session's working directory (its runs' current directory). */
async function sessionDir(tool: AsyncIPythonInteractive, sessionId: number | string): Promise<string> {
  return (await run(tool, 'import os; print(os.getcwd())', sessionId)).toText().trim();
}

async function run(
  tool: AsyncIPythonInteractive | AsyncPythonInterpreter,
  command: string,
  sessionId: number | string = 0,
) {
  return tool.call({ command }, 'run', { sessionId });
}

describe.each([
  ['plain exec', false],
  ['IPython', true],
] as const)('AsyncIPythonInteractive (%s)', (_label, ipython) => {
  it('keeps state per session and isolates sessions', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython })));
    await Promise.all([1, 2, 3].map((id) => run(python, `x = ${id} * 10`, id)));
    const answers = await Promise.all([1, 2, 3].map((id) => run(python, 'x + 1', id)));
    expect(answers.map((answer) => answer.toText().trim())).toEqual(['11', '21', '31']);
    const fresh = await run(python, 'x', 4);
    expect(fresh.state).toBe(ActionStatusCode.API_ERROR);
    expect(fresh.errmsg).toContain("NameError: name 'x' is not defined");
    expect(python.pids()).toHaveLength(4);
    expect(new Set(python.pids()).size).toBe(4);
  });

  it('shows prints and the value of a final expression, in order; a None value shows nothing', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython })));
    expect((await run(python, 'print("a")\nimport sys\nprint("b", file=sys.stderr)\n6 * 7')).toText()).toBe(
      'a\nb\n42\n',
    );
    expect((await run(python, 'None')).toText()).toBe('');
    expect((await run(python, 'print("only")')).toText()).toBe('only\n');
  });

  it('runs a find_numbers program (a function, a loop, prints)', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython })));
    expect((await run(python, FIND_NUMBERS)).toText().trim()).toBe('3969.0');
  });

  it('returns tracebacks as API_ERROR without colour, keeping what was printed, and the session', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython })));
    await run(python, 'y = 5');
    const failed = await run(python, 'print("before")\n1 / 0');
    expect(failed.state).toBe(ActionStatusCode.API_ERROR);
    expect(failed.errmsg).toContain('before');
    expect(failed.errmsg).toContain('ZeroDivisionError');
    expect(failed.errmsg).not.toContain('\u001b[');
    expect((await run(python, 'print("\\x1b[31mred\\x1b[0m plain")')).toText()).toBe('red plain\n');
    const syntax = await run(python, 'def (');
    expect(syntax.errmsg).toContain('SyntaxError');
    expect((await run(python, 'y')).toText().trim()).toBe('5');
  });
});

describe('AsyncIPythonInteractive', () => {
  it('uses IPython when it is importable and plain exec when asked', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions()));
    const ipython = await run(python, 'get_ipython().__class__.__name__');
    expect(ipython.toText()).toContain('InteractiveShell');
    const plain = make(new AsyncIPythonInteractive(testOptions({ ipython: false })));
    expect((await run(plain, "'get_ipython' in dir(__builtins__)")).toText().trim()).toBe('False');
  });

  it('runs calls on one session one at a time, in call order; sessions run in parallel', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython: false })));
    await run(python, 'log = []', 1);
    const dirs = await Promise.all([sessionDir(python, 1), sessionDir(python, 2)]);
    // Each session's first run waits until both have started: run one after another, the first would wait
    // for a start that never comes.
    const calls = [
      run(python, `${HOLD}\nlog.append(1)`, 1),
      run(python, 'log.append(2); log', 1),
      run(python, HOLD, 2),
    ];
    await release(dirs);
    const [first, second, other] = await Promise.all(calls);
    expect([first!.state, other!.state]).toEqual([ActionStatusCode.SUCCESS, ActionStatusCode.SUCCESS]);
    expect(second!.toText().trim()).toBe('[1, 2]');
  });

  it('cuts output at maxOutputChars with a note, also for endless printing', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython: false, maxOutputChars: 100 })));
    const long = await run(python, 'print("x" * 1000)');
    expect(long.toText()).toMatch(/^x{100}\n\.\.\. \[output truncated at 100 characters\]$/);
    const endless = make(
      new AsyncIPythonInteractive(testOptions({ ipython: false, maxOutputChars: 50, timeout: 1500 })),
    );
    const flood = await run(endless, 'while True:\n    print("spam")');
    expect(flood.state).toBe(ActionStatusCode.API_ERROR);
    expect(flood.errmsg).toContain('timed out after 1.5 s');
    expect(flood.errmsg).toContain('[output truncated at 50 characters]');
    expect((await run(endless, 'print("fresh")')).toText()).toBe('fresh\n');
  });

  it('ends the least recently used idle session past maxSessions', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython: false, maxSessions: 2 })));
    await run(python, 'v = "a"', 'a');
    await run(python, 'v = "b"', 'b');
    await run(python, 'v', 'a'); // a is now the most recently used
    await run(python, 'v = "c"', 'c');
    expect(python.pids()).toHaveLength(2);
    expect((await run(python, 'v', 'a')).toText().trim()).toBe("'a'");
    expect((await run(python, 'v', 'b')).errmsg).toContain('NameError');
  });

  it('ends a session idle for idleTimeout', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython: false, idleTimeout: 200 })));
    await run(python, 'z = 1');
    const [pid] = python.pids();
    expect(await eventually(() => !existsSync(`/proc/${pid}`), 3000)).toBe(true);
    expect((await run(python, 'z')).errmsg).toContain('NameError');
  });

  it('reset() ends one session; close() ends all, removes session directories and refuses later calls', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython: false })));
    await run(python, 'w = 1', 1);
    const dir = (await run(python, 'import os; os.getcwd()', 2)).toText().trim().slice(1, -1);
    expect(existsSync(dir)).toBe(true);
    python.reset(1);
    expect((await run(python, 'w', 1)).errmsg).toContain('NameError');
    const pids = python.pids();
    python.close();
    expect(await eventually(() => pids.every((pid) => !existsSync(`/proc/${pid}`)))).toBe(true);
    expect(await eventually(() => !existsSync(dir))).toBe(true);
    const after = await run(python, 'print(1)');
    expect(after.state).toBe(ActionStatusCode.API_ERROR);
    expect(after.errmsg).toContain('was closed');
  });

  it('takes code from a fenced block or a JSON object', async () => {
    expect(extractCode('Let me compute:\n```python\nprint(2)\n```\nDone.')).toBe('print(2)\n');
    expect(extractCode('{"code": "print(3)"}')).toBe('print(3)');
    expect(extractCode('{1: 2}')).toBe('{1: 2}');
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython: false })));
    expect((await run(python, 'Here:\n```py\nprint("fenced")\n```')).toText()).toBe('fenced\n');
  });
});

describe('AsyncPythonInterpreter', () => {
  it("answers with solution() in fresh globals each call, as Lagent's interpreter does", async () => {
    const python = make(new AsyncPythonInterpreter(testOptions()));
    const answer = await run(
      python,
      '```python\nimport math\ndef solution():\n    return math.factorial(5)\n```',
    );
    expect(answer.toText()).toBe('120');
    const stale = await run(python, 'print(math)\ndef solution():\n    return 1');
    expect(stale.state).toBe(ActionStatusCode.API_ERROR);
    expect(stale.errmsg).toContain("NameError: name 'math' is not defined");
    const missing = await run(python, 'x = 1');
    expect(missing.errmsg).toContain("name 'solution' is not defined");
  });

  it('takes the answer from stdout, a symbol, or another expression', async () => {
    const fromStdout = make(new AsyncPythonInterpreter(testOptions({ answerFromStdout: true })));
    expect((await run(fromStdout, FIND_NUMBERS)).toText()).toBe('3969.0');
    const symbol = make(new AsyncPythonInterpreter(testOptions({ answerSymbol: 'answer' })));
    expect((await run(symbol, 'answer = [1, 2]')).toText()).toBe('[1, 2]');
    const expression = make(new AsyncPythonInterpreter(testOptions({ answerExpr: 'main(3)' })));
    expect((await run(expression, 'def main(n):\n    return n * n')).toText()).toBe('9');
  });
});

// The snippet of docs/guide/built-in-tools.md, run as written.
describe('docs: built-in tools', () => {
  it('Python interpreters', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ timeout: 10_000 })));
    await python.call({ command: 'import math\nr = 3' }, 'run', { sessionId: 'alice' });
    expect((await python.call({ command: 'math.pi * r ** 2' }, 'run', { sessionId: 'alice' })).toText()).toBe(
      '28.274333882308138\n',
    );
  });
});

describe('cancellation', () => {
  it('an aborted call kills its run and rejects; the session starts afresh', async () => {
    const python = make(new AsyncIPythonInteractive(testOptions({ ipython: false })));
    await run(python, 'kept = 1');
    const dir = await sessionDir(python, 0);
    const controller = new AbortController();
    // The run says it started, then waits for a go that never comes: only the abort ends it.
    const call = python.call({ command: HOLD }, 'run', { signal: controller.signal });
    await expect.poll(() => existsSync(join(dir, 'started'))).toBe(true);
    controller.abort(new Error('stop'));
    await expect(call).rejects.toThrow('stop');
    expect((await run(python, 'kept')).errmsg).toContain('NameError');
  });
});

describe('IPythonInteractiveManager', () => {
  it('runs a batch of commands over their sessions concurrently, keeping each session between batches', async () => {
    const manager = make(
      new AsyncIPythonInteractiveManager({ ...testOptions({ ipython: false }), maxWorkers: 3 }),
    );
    const names = ['a', 'b', 'c'];
    const dirs = (
      await manager.run(
        names.map(() => 'import os; print(os.getcwd())'),
        names,
      )
    ).map((result) => result.toText().trim());
    // Each command waits until all three have started: run one after another, the first would wait for
    // starts that never come.
    const batch = manager.run(
      names.map((name) => `${HOLD}\nx = "${name}"`),
      names,
    );
    await release(dirs);
    const first = await batch;
    expect(first.map((result) => result.state)).toEqual(names.map(() => ActionStatusCode.SUCCESS));
    const second = await manager.run(['x', 'x', 'x'], ['c', 'a', 'b']);
    expect(second.map((result) => result.toText().trim())).toEqual(["'c'", "'a'", "'b'"]);
    await expect(manager.run(['x'], ['a', 'b'])).rejects.toThrow('1 commands but 2 session ids');
  });

  it('has a sync twin that runs the batch in the bridge', () => {
    const manager = make(new IPythonInteractiveManager({ ...testOptions({ ipython: false }) }));
    const results = manager.run(['y = 2; y * 21', 'print("two")']);
    expect(results.map((result) => result.toText())).toEqual(['42\n', 'two\n']);
    expect(manager.run('y', 0).toText()).toBe('2\n');
  });
});
