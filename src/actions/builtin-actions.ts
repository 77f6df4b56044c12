import { z } from 'zod';
import { ActionReturn } from '../schema/action-return';
import { ActionStatusCode, ActionValidCode } from '../schema/status';
import { UNMETERED } from './action-steps';
import { BaseAction } from './base-action';

/** Options of {@link InvalidAction} and {@link NoAction}. */
export interface BuiltinActionOptions {
  /** The message used when a call gives none. */
  errMsg?: string | undefined;
  /** @default the class name */
  name?: string | undefined;
}

const invalidArguments = z.object({
  toolName: z.string().optional().describe('The tool name the model asked for'),
  availableTools: z.array(z.string()).optional().describe('The tools that do exist'),
  errMsg: z.string().optional().describe('A message to return instead'),
});

/**
 * What an executor answers when the model calls a tool that does not exist: `errmsg` is a sentence naming
 * the unknown tool and listing the real ones, `valid` is `INVALID`.
 *
 * @example
 * new InvalidAction().call({ toolName: 'serch', availableTools: ['search'] }).errmsg;
 * // 'There is no tool named "serch". Available tools: search.'
 */
export class InvalidAction extends BaseAction {
  static override toolApis = {
    run: {
      description: 'Explains that the requested tool does not exist.',
      parameters: invalidArguments,
      fromText: (text: string) => ({ errMsg: text }),
    },
  };
  /** The message used when a call names no tool. */
  readonly errMsg: string;

  constructor(options: BuiltinActionOptions = {}) {
    super({ name: options.name, description: 'Answers a call to a tool that does not exist.' });
    this.errMsg = options.errMsg ?? 'The action is invalid, please check the action name.';
  }

  run({ toolName, availableTools, errMsg }: z.output<typeof invalidArguments>): ActionReturn {
    let message = errMsg ?? this.errMsg;
    if (!errMsg && toolName !== undefined) {
      const available = availableTools?.length ? ` Available tools: ${availableTools.join(', ')}.` : '';
      message = `There is no tool named ${JSON.stringify(toolName)}.${available}`;
    }
    return new ActionReturn({
      // Lagent's args for these calls: the message that was passed in (null when none was).
      args: toolName === undefined ? { text: errMsg ?? null } : { name: toolName },
      type: this.name,
      errmsg: message,
      state: ActionStatusCode.API_ERROR,
      valid: ActionValidCode.INVALID,
    });
  }
}

const noArguments = z.object({ errMsg: z.string().optional().describe('A message to return instead') });

/**
 * What an executor answers when the response did not follow the tool-call format (a call to `NoAction`):
 * `errmsg` asks the model to follow the format, `valid` is `INVALID`.
 */
export class NoAction extends BaseAction {
  static override toolApis = {
    run: {
      description: 'Asks the model to follow the format.',
      parameters: noArguments,
      fromText: (text: string) => ({ errMsg: text }),
    },
  };
  /** The message used when a call gives none. */
  readonly errMsg: string;

  constructor(options: BuiltinActionOptions = {}) {
    super({ name: options.name, description: 'Answers a response that did not follow the format.' });
    this.errMsg = options.errMsg ?? 'Please follow the format';
  }

  run({ errMsg }: z.output<typeof noArguments>): ActionReturn {
    const message = errMsg ?? this.errMsg;
    return new ActionReturn({
      args: { text: errMsg ?? null },
      type: this.name,
      errmsg: message,
      state: ActionStatusCode.API_ERROR,
      valid: ActionValidCode.INVALID,
    });
  }
}

const finishArguments = z.object({ response: z.string().describe('The final answer') });

/** Ends the task with a final answer: the result is the response text, `valid` is `FINISH`. */
export class FinishAction extends BaseAction {
  static override toolApis = {
    run: {
      description: 'Gives the final answer.',
      parameters: finishArguments,
      fromText: (text: string) => ({ response: text }),
    },
  };

  constructor(options: { name?: string } = {}) {
    super({ name: options.name, description: 'Gives the final answer.' });
  }

  run({ response }: z.output<typeof finishArguments>): ActionReturn {
    return new ActionReturn({
      args: { text: response },
      type: this.name,
      result: [{ type: 'text', content: response }],
      state: ActionStatusCode.SUCCESS,
      valid: ActionValidCode.FINISH,
    });
  }
}

// The executors' built-in answers are not tool calls a budget counts.
for (const action of [InvalidAction, NoAction, FinishAction])
  (action.prototype as unknown as Record<symbol, boolean>)[UNMETERED] = true;
