import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ActionExecutor, type ActionReturn, ActionStatusCode, AgentMessage } from 'lagent-ts';
import {
  AsyncIPythonInterpreter,
  IPythonInteractive,
  IPythonInterpreter,
  PythonInterpreter,
} from 'lagent-ts/tools';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach, eventually, testOptions } from './helpers';

const { closing: make } = cleanupAfterEach();

const PLOT =
  'import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title("squares")\nplt.show()\nprint("plotted")';
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

describe('AsyncIPythonInterpreter', () => {
  it('returns figures as image results saved in the session directory (Agg backend)', async () => {
    const python = make(new AsyncIPythonInterpreter(testOptions()));
    const result = await python.call({ command: PLOT }, 'run', { sessionId: 'charts' });
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(result.result![0]).toEqual({ type: 'text', content: 'plotted\n' });
    const images = result.result!.filter((item) => item.type === 'image');
    expect(images).toHaveLength(1);
    const path = images[0]!.content;
    expect(readFileSync(path).subarray(0, 4)).toEqual(PNG);
    const backend = await python.call({ command: 'import matplotlib; matplotlib.get_backend()' }, 'run', {
      sessionId: 'charts',
    });
    expect(backend.toText().toLowerCase()).toContain('agg');
    expect(backend.result).toHaveLength(1); // figures are closed once returned
    python.close();
    // Temporary session directories go with close(), removed in the background.
    expect(await eventually(() => !existsSync(path))).toBe(true);
  });

  it('keeps session directories under workDir', async () => {
    const workDir = mkdtempSync(join(tmpdir(), 'lagent-workdir-'));
    try {
      const python = make(new AsyncIPythonInterpreter(testOptions({ workDir })));
      const result = await python.call({ command: PLOT }, 'run', { sessionId: 7 });
      const path = result.result!.find((item) => item.type === 'image')!.content;
      expect(dirname(path)).toBe(join(workDir, 'session-7'));
      python.close();
      expect(readFileSync(path).subarray(0, 4)).toEqual(PNG);
    } finally {
      rmSync(workDir, { recursive: true, force: true });
    }
  });
});

describe('the sync twins (through the sync bridge)', () => {
  it('IPythonInteractive keeps state per session and restarts after a timeout', () => {
    const python = make(new IPythonInteractive(testOptions({ ipython: false, timeout: 1000 })));
    expect(python.name).toBe('IPythonInteractive');
    python.call({ command: 'a = [1]' }, 'run', { sessionId: 1 });
    python.call({ command: 'a = [2]' }, 'run', { sessionId: 2 });
    expect(python.call({ command: 'a' }, 'run', { sessionId: 1 }).toText()).toBe('[1]\n');
    const slow = python.call({ command: 'import time; time.sleep(10)' }, 'run', { sessionId: 2 });
    expect(slow.errmsg).toContain('timed out after 1 s');
    expect(python.call({ command: 'a' }, 'run', { sessionId: 2 }).errmsg).toContain('NameError');
    const bad = python.call({ code: 'x' }, 'run');
    expect(bad.state).toBe(ActionStatusCode.ARGS_ERROR);
  });

  it('PythonInterpreter answers with solution(), and an executor runs it as a tool', () => {
    const python = make(new PythonInterpreter(testOptions()));
    const executor = new ActionExecutor({ actions: [python] });
    const reply = executor.call(
      new AgentMessage({
        sender: 'assistant',
        content: {
          name: 'PythonInterpreter',
          parameters: { command: 'def solution():\n    return 2 ** 10' },
        },
      }),
    );
    expect((reply.content as ActionReturn).toText()).toBe('1024');
  });

  it('IPythonInterpreter returns figures; close() ends its processes', async () => {
    const python = make(new IPythonInterpreter(testOptions()));
    const result = python.call({ command: PLOT }, 'run');
    const image = result.result!.find((item) => item.type === 'image')!;
    expect(readFileSync(image.content).subarray(0, 4)).toEqual(PNG);
    const pid = Number(python.call({ command: 'import os; print(os.getpid())' }, 'run').toText());
    python.close();
    expect(await eventually(() => !existsSync(`/proc/${pid}`) || pid === 2)).toBe(true);
    expect(await eventually(() => !existsSync(image.content))).toBe(true);
  });
});
