/**
 * The Python interpreter the examples use: the real `IPythonInteractive` (one sandboxed process per session)
 * when Python 3 runs here, else a stand-in that explains how to get Python and evaluates only
 * `print(<arithmetic>)`, so the examples still run.
 */
import { ActionStatusCode, type BaseAction, tool } from 'lagent-ts';
import { IPythonInteractive } from 'lagent-ts/tools';
import { z } from 'zod';

/** A stand-in with IPythonInteractive's name and API: prints the value of a last line `print(<arithmetic>)`. */
function standIn(): BaseAction & { close(): void } {
  const action = tool({
    name: 'IPythonInteractive',
    description: 'Runs Python code in a Jupyter-like session and returns what it prints.',
    parameters: z.object({ command: z.string().describe('The Python code to run') }),
    run: ({ command }) => {
      const last = command.trim().split('\n').at(-1) ?? '';
      const expression = /^print\(([\d\s+\-*/().]+)\)$/.exec(last)?.[1];
      if (!expression)
        throw new Error('NameError: this stand-in interpreter only evaluates print(<arithmetic>)');
      return `${Function(`"use strict"; return (${expression});`)()}\n`;
    },
  });
  return Object.assign(action, { close() {} });
}

/** The real interpreter when Python runs here (said on stdout), else the stand-in (and how to get Python). */
export function pythonInterpreter(): BaseAction & { close(): void } {
  const python = new IPythonInteractive({ timeout: 20_000 });
  const probe = python.call({ command: 'import sys; print(sys.version.split()[0])' }, 'run');
  if (probe.state === ActionStatusCode.SUCCESS) {
    console.log(`(code runs in a real Python ${probe.toText().trim()} session: IPythonInteractive)`);
    return python;
  }
  python.close();
  console.log(`(Python is not available, so a stand-in interpreter runs the code: ${probe.errmsg})`);
  return standIn();
}
