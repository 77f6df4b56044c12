/**
 * Tools the tests share: small, deterministic stand-ins for the calculator, weather, echo and code-interpreter
 * tools that agents, executors and model clients are exercised with. A test that depends on a special
 * behaviour (a tool that throws, waits, records its calls or has an unusual schema) defines its own.
 */

import { ActionReturn, asyncTool, tool, toolkit } from 'lagent-ts';
import { z } from 'zod';

/** The toolkit `Calculator` with one API, `add` (`Calculator.add`; `Calculator__add` on the wire). */
export const calculator = toolkit({
  name: 'Calculator',
  description: 'Arithmetic',
  apis: {
    add: {
      description: 'a + b',
      parameters: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }) => a + b,
    },
  },
});

/** The single tool `add`: `{ a, b }` gives `a + b`. */
export const add = tool({
  name: 'add',
  description: 'a + b',
  parameters: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }) => a + b,
});

/** `add` as an async tool. */
export const asyncAdd = asyncTool({
  name: 'add',
  description: 'a + b',
  parameters: z.object({ a: z.number(), b: z.number() }),
  run: async ({ a, b }) => a + b,
});

/** The tool `Weather`: `{ city }` gives `Sunny in <city>`. */
export const weather = tool({
  name: 'Weather',
  description: 'Current weather of a city',
  parameters: z.object({ city: z.string() }),
  run: ({ city }) => `Sunny in ${city}`,
});

/** The tool `echo`: `{ text }` gives the text back. */
export const echo = tool({
  name: 'echo',
  parameters: z.object({ text: z.string() }),
  run: ({ text }) => text,
});

/** A stand-in code interpreter that runs nothing: `{ command }` gives `ran <command>`. */
export const fakePython = tool({
  name: 'IPythonInteractive',
  description: 'Runs Python code',
  parameters: z.object({ command: z.string() }),
  run: ({ command }) => `ran ${command}`,
});

/** `fakePython` as an async tool. */
export const asyncFakePython = asyncTool({
  name: 'AsyncIPythonInteractive',
  description: 'Runs Python code',
  parameters: z.object({ command: z.string() }),
  run: async ({ command }) => `ran ${command}`,
});

/**
 * The one `ActionReturn` an executor's reply holds (a text call's result), failing the test when it holds
 * anything else: its type is `ActionReturn | ActionReturn[]` until the call's kind is known.
 */
export function resultOf(message: { content: unknown }): ActionReturn {
  if (!(message.content instanceof ActionReturn)) {
    throw new Error(`expected one ActionReturn, got ${Object.prototype.toString.call(message.content)}`);
  }
  return message.content;
}
