import { z } from 'zod';
import { AsyncBaseAction } from '../../actions/base-action';
import type { ToolApiSpec, ToolContext } from '../../actions/types';
import { ActionReturn } from '../../schema/action-return';
import type { SessionId } from '../../schema/session';
import { ActionStatusCode } from '../../schema/status';
import { BridgedTool } from '../bridged-tool';
import { checkToolCompat, type ToolCompatMode } from '../compat';
import {
  PythonSessions,
  type PythonToolOptions,
  type ResolvedPythonOptions,
  resolvePythonOptions,
  type SessionRun,
} from './python-sessions';

// ESC [ ... final byte (CSI sequences such as colours), or ESC and one other byte.
const ANSI = new RegExp(`${String.fromCharCode(27)}(?:\\[[0-?]*[ -/]*[@-~]|[@-_])`, 'g');
const FENCED = /```[^\n]*\n([\s\S]*?)```/;

/**
 * The code in a model's `command`: the first fenced block when there is one, the `code` field of a JSON
 * object, else the text as it is.
 */
export function extractCode(command: string): string {
  const fenced = FENCED.exec(command);
  if (fenced) return fenced[1]!;
  const trimmed = command.trim();
  if (trimmed.startsWith('{')) {
    try {
      const parsed = JSON.parse(trimmed) as { code?: unknown };
      if (typeof parsed.code === 'string') return parsed.code;
    } catch {
      // not JSON: Python code that starts with a dict literal
    }
  }
  return command;
}

/** Output as the model sees it: ANSI colour stripped, cut at `max` characters with a note saying so. */
function clip(output: string, dropped: number, max: number): string {
  const text = output.replace(ANSI, '');
  if (text.length <= max && dropped === 0) return text;
  return `${text.slice(0, max)}\n... [output truncated at ${max} characters]`;
}

function seconds(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

/** The error text of a run that gave no outcome. */
function failureText(run: SessionRun, options: ResolvedPythonOptions): string {
  if (run.kind === 'error') return run.message;
  if (run.kind === 'done') return '';
  const before = run.output
    ? `\nOutput before it ended:\n${clip(run.output, run.dropped, options.maxOutputChars)}`
    : '';
  if (run.kind === 'timeout') {
    return `The code timed out after ${seconds(options.timeout)}; the session was restarted and its state lost.${before}`;
  }
  const why =
    run.exit === 'SIGXCPU'
      ? `it used more than its CPU time limit (${seconds(options.cpuTimeLimit)})`
      : run.exit === 'SIGKILL'
        ? 'it was killed (SIGKILL; often the system running out of memory)'
        : `it ended (${run.exit ?? 'unknown'})`;
  return `The Python process stopped: ${why}; the session was restarted and its state lost.${before}`;
}

const commandParameters = z.object({
  command: z.string().describe('Python code to run (a fenced ```python block is accepted)'),
});

/**
 * How Lagent's class of the same name describes its `run` (from its docstring and signature, as Lagent's
 * `tool_api` reads them), for `compat: 'lagent'`. The extra arguments Lagent lists are accepted and left unused.
 */
interface LagentInterpreter {
  /** Lagent's name of the async class (the sync twins keep the sync class's name). */
  asyncName: string;
  description: string;
  parameters: z.ZodObject;
}

const LAGENT_INTERACTIVE: LagentInterpreter = {
  asyncName: 'AsyncIPythonInteractive',
  description: 'Launch an IPython Interactive Shell to execute code.',
  parameters: z.object({
    command: z.string().describe('Python code snippet'),
    timeout: z
      .number()
      .int()
      .optional()
      .describe('timeout for execution.\nThis argument only works in the main thread. Defaults to ``None``.'),
  }),
};

const LAGENT_JUPYTER_DESCRIPTION =
  "When you send a message containing Python code to python, it will be executed in a stateful Jupyter notebook environment. python will respond with the output of the execution or time out after 60.0 seconds. The drive at '/mnt/data' can be used to save and persist user files. Internet access for this session is disabled. Do not make external web requests or API calls as they will fail.";
const lagentJupyterParameters = z.object({
  command: z.string().describe('Python code'),
  timeout: z.number().int().optional().describe('Upper bound of waiting time for Python script execution.'),
});

const LAGENT_INTERPRETER: LagentInterpreter = {
  asyncName: 'AsyncIPythonInterpreter',
  description: LAGENT_JUPYTER_DESCRIPTION,
  // Lagent's async class also takes the session (its executors pass it); here the context carries it.
  parameters: lagentJupyterParameters.extend({ session_id: z.string().optional() }),
};

/** How an interpreter runs code and reads its answer. */
interface InterpreterKind {
  mode: 'interactive' | 'script';
  ipython: boolean;
  figures: boolean;
}

/** What the async interpreters share: the session processes and the run → ActionReturn mapping. */
abstract class AsyncPythonTool extends AsyncBaseAction {
  /** The options after defaults. */
  readonly settings: ResolvedPythonOptions;
  /** @internal */
  protected readonly sessions: PythonSessions;
  readonly #kind: InterpreterKind;

  /** `'lagent'`: described and answering as Lagent's class (see {@link ToolCompatMode}). */
  readonly compat: ToolCompatMode | undefined;

  protected constructor(
    options: PythonToolOptions & { compat?: ToolCompatMode | undefined },
    kind: InterpreterKind,
    defaults: { name: string; description: string },
    lagent?: LagentInterpreter,
  ) {
    const compat = lagent !== undefined && checkToolCompat(defaults.name, options.compat);
    const description = options.description ?? lagent?.description;
    super(
      compat
        ? {
            name: options.name ?? lagent.asyncName,
            description,
            apis: {
              run: {
                description,
                parameters: lagent.parameters,
                run: (args: { command: string }, context: ToolContext) =>
                  (this as unknown as { run(a: unknown, c: ToolContext): Promise<ActionReturn> }).run(
                    args,
                    context,
                  ),
              },
            },
          }
        : { name: options.name ?? defaults.name, description: options.description ?? defaults.description },
    );
    this.compat = compat ? 'lagent' : undefined;
    this.settings = resolvePythonOptions(options);
    this.#kind = kind;
    this.sessions = new PythonSessions(this.name, this.settings, kind.mode, kind.ipython);
  }

  /** Runs `code` in the session's process. */
  protected async execute(
    code: string,
    context: ToolContext,
    extra: { answerExpr?: string | undefined; answerSymbol?: string | undefined; answerFromStdout?: boolean },
  ): Promise<ActionReturn> {
    const { maxOutputChars, cpuTimeLimit } = this.settings;
    const run = await this.sessions.run(
      context.sessionId,
      {
        code,
        maxBytes: maxOutputChars * 4,
        figures: this.#kind.figures,
        cpuSeconds: Math.max(1, Math.ceil(cpuTimeLimit / 1000)),
        ...extra,
      },
      context.signal,
    );
    if (run.kind !== 'done') {
      return new ActionReturn({ errmsg: failureText(run, this.settings), state: ActionStatusCode.API_ERROR });
    }
    const output = clip(run.output, run.dropped, maxOutputChars);
    if (run.error !== null) {
      const errmsg = this.#kind.mode === 'script' ? clip(run.error, 0, maxOutputChars) : output || run.error;
      return new ActionReturn({ errmsg, state: ActionStatusCode.API_ERROR });
    }
    return this.answer(run, output);
  }

  /** The successful result: the output, and the figures when there are any. */
  /** @internal */
  protected answer(run: Extract<SessionRun, { kind: 'done' }>, output: string): ActionReturn {
    return new ActionReturn({
      result: [
        // Lagent's shells give their output stripped: no trailing newline.
        { type: 'text', content: this.compat === 'lagent' ? output.trim() : output },
        ...run.images.map((path) => ({ type: 'image', content: path })),
      ],
    });
  }

  /** Ends one session (or all): the next call on it starts a fresh process. */
  reset(sessionId?: SessionId): void {
    if (sessionId === undefined) {
      for (const key of this.sessions.keys()) this.sessions.end(key);
    } else this.sessions.end(sessionId);
  }

  /** The pids of the live session processes. */
  pids(): number[] {
    return this.sessions.pids();
  }

  /** Ends every process this tool started and removes temporary session directories; later calls fail. */
  close(): void {
    this.sessions.close();
  }
}

const INTERACTIVE_DESCRIPTION =
  'Runs Python code in a stateful IPython shell (variables persist between calls) and returns what it ' +
  'prints, the value of a final expression, or the error and its traceback.';

/**
 * A live Python shell per session: state persists between calls, sessions are isolated, and the value of a
 * final expression is shown as IPython shows it. Uses IPython's `InteractiveShell` when it can be imported,
 * plain `exec` otherwise (`ipython: false` forces the plain runner, which starts faster). See
 * {@link PythonToolOptions} for limits and the sandbox.
 *
 * @example
 * const python = new AsyncIPythonInteractive({ timeout: 10_000 });
 * (await python.call({ command: 'x = 21' }, 'run', { sessionId: 1 }));
 * (await python.call({ command: 'x * 2' }, 'run', { sessionId: 1 })).toText(); // '42\n'
 * python.close();
 */
export class AsyncIPythonInteractive extends AsyncPythonTool {
  static override toolApis: Readonly<Record<string, ToolApiSpec>> = {
    run: { description: INTERACTIVE_DESCRIPTION, parameters: commandParameters },
  };

  constructor(options: IPythonInteractiveOptions = {}) {
    super(
      options,
      { mode: 'interactive', ipython: options.ipython ?? true, figures: false },
      { name: 'IPythonInteractive', description: INTERACTIVE_DESCRIPTION },
      LAGENT_INTERACTIVE,
    );
  }

  run({ command }: { command: string }, context: ToolContext): Promise<ActionReturn> {
    return this.execute(extractCode(command), context, {});
  }
}

/** Options of the IPython shells. */
export interface IPythonInteractiveOptions extends PythonToolOptions {
  /** Use IPython's shell when it can be imported. @default true */
  ipython?: boolean | undefined;
  /**
   * `'lagent'`: the tool describes itself as Lagent's class does (its name, description and parameters,
   * word for word, so a prompt listing it is Lagent's), and gives its output stripped of surrounding
   * whitespace, as Lagent's shells do (`243`, not `243\n`).
   */
  compat?: ToolCompatMode | undefined;
}

const INTERPRETER_DESCRIPTION =
  'Runs Python code in a stateful Jupyter-like environment (variables persist between calls) and returns ' +
  'its output; matplotlib figures are saved and returned as images. No network access.';

/**
 * {@link AsyncIPythonInteractive} plus figures: matplotlib runs with the Agg backend, and every figure left
 * open by a call is saved as a PNG in the session's working directory and returned as an `image` result
 * item (its path), as Lagent's interpreter does. `workDir` sets where session directories go (and keeps them).
 */
export class AsyncIPythonInterpreter extends AsyncPythonTool {
  static override toolApis: Readonly<Record<string, ToolApiSpec>> = {
    run: { description: INTERPRETER_DESCRIPTION, parameters: commandParameters },
  };

  constructor(options: IPythonInteractiveOptions = {}) {
    super(
      options,
      { mode: 'interactive', ipython: options.ipython ?? true, figures: true },
      { name: 'IPythonInterpreter', description: INTERPRETER_DESCRIPTION },
      LAGENT_INTERPRETER,
    );
  }

  run({ command }: { command: string }, context: ToolContext): Promise<ActionReturn> {
    return this.execute(extractCode(command), context, {});
  }
}

/** Options of {@link AsyncPythonInterpreter}. */
export interface PythonInterpreterOptions extends PythonToolOptions {
  /** The expression whose value is the answer, evaluated after the code. @default 'solution()' */
  answerExpr?: string | undefined;
  /** A global variable holding the answer (checked before `answerExpr`). */
  answerSymbol?: string | undefined;
  /** Take the answer from the last line the code prints instead. @default false */
  answerFromStdout?: boolean | undefined;
}

const SCRIPT_DESCRIPTION =
  'Runs a Python program and returns its answer. The code must define a function named solution() that ' +
  'returns the final answer, e.g.\n```python\ndef solution():\n    total = sum(range(10))\n    return total\n```';

/**
 * Lagent's `PythonInterpreter`: every call runs the code in fresh globals, then evaluates `answerExpr`
 * (default `solution()`) or reads `answerSymbol`, or, with `answerFromStdout`, takes the last line printed.
 * The process of each session is reused between calls; the code's state is not.
 */
export class AsyncPythonInterpreter extends AsyncPythonTool {
  static override toolApis: Readonly<Record<string, ToolApiSpec>> = {
    run: { description: SCRIPT_DESCRIPTION, parameters: commandParameters },
  };
  readonly #answer: {
    answerExpr?: string | undefined;
    answerSymbol?: string | undefined;
    answerFromStdout: boolean;
  };

  constructor(options: PythonInterpreterOptions = {}) {
    super(
      options,
      { mode: 'script', ipython: false, figures: false },
      { name: 'PythonInterpreter', description: SCRIPT_DESCRIPTION },
    );
    const answerFromStdout = options.answerFromStdout ?? false;
    this.#answer = answerFromStdout
      ? { answerFromStdout }
      : options.answerSymbol !== undefined
        ? { answerSymbol: options.answerSymbol, answerFromStdout }
        : { answerExpr: options.answerExpr ?? 'solution()', answerFromStdout };
  }

  run({ command }: { command: string }, context: ToolContext): Promise<ActionReturn> {
    return this.execute(extractCode(command), context, this.#answer);
  }

  protected override answer(run: Extract<SessionRun, { kind: 'done' }>, output: string): ActionReturn {
    const content = this.#answer.answerFromStdout
      ? (output.replace(/\n+$/, '').split('\n').pop() ?? '')
      : (run.value ?? '');
    return new ActionReturn({ result: [{ type: 'text', content }] });
  }
}

/** Milliseconds a sync call may block: the run's own timeout, plus start-up and queueing. */
function bridgedTimeout(options: PythonToolOptions): number {
  const timeout = options.timeout ?? 30_000;
  return Number.isFinite(timeout) ? timeout + 90_000 : Number.POSITIVE_INFINITY;
}

/** The sync twin of {@link AsyncIPythonInteractive} (the async tool runs in the sync bridge's worker). */
export class IPythonInteractive extends BridgedTool {
  constructor(options: IPythonInteractiveOptions = {}) {
    const lagent = checkToolCompat('IPythonInteractive', options.compat);
    const description =
      options.description ?? (lagent ? LAGENT_INTERACTIVE.description : INTERACTIVE_DESCRIPTION);
    super({
      exportName: 'AsyncIPythonInteractive',
      apis: lagent
        ? { run: { description, parameters: LAGENT_INTERACTIVE.parameters } }
        : AsyncIPythonInteractive.toolApis,
      options: { ...options },
      callTimeout: bridgedTimeout(options),
      name: options.name ?? 'IPythonInteractive',
      description,
    });
  }
}

/** The sync twin of {@link AsyncIPythonInterpreter}. */
export class IPythonInterpreter extends BridgedTool {
  constructor(options: IPythonInteractiveOptions = {}) {
    const lagent = checkToolCompat('IPythonInterpreter', options.compat);
    const description =
      options.description ?? (lagent ? LAGENT_JUPYTER_DESCRIPTION : INTERPRETER_DESCRIPTION);
    super({
      exportName: 'AsyncIPythonInterpreter',
      // Lagent's sync class takes no session_id.
      apis: lagent
        ? { run: { description, parameters: lagentJupyterParameters } }
        : AsyncIPythonInterpreter.toolApis,
      options: { ...options },
      callTimeout: bridgedTimeout(options),
      name: options.name ?? 'IPythonInterpreter',
      description,
    });
  }
}

/** The sync twin of {@link AsyncPythonInterpreter}. */
export class PythonInterpreter extends BridgedTool {
  constructor(options: PythonInterpreterOptions = {}) {
    super({
      exportName: 'AsyncPythonInterpreter',
      apis: AsyncPythonInterpreter.toolApis,
      options: { ...options },
      callTimeout: bridgedTimeout(options),
      name: options.name ?? 'PythonInterpreter',
      description: options.description ?? SCRIPT_DESCRIPTION,
    });
  }
}
