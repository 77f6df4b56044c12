import { deepClone } from '../utils/clone';
import { toText } from '../utils/text';
import { ActionStatusCode, ActionValidCode } from './status';

/** One item of a tool's result: `type` is 'text' for plain text, else e.g. 'image' with a path or URL. */
export interface ActionResultItem {
  type: string;
  content: string;
}

/** A tool invocation as the model asks for it: a tool name and its arguments (an object or a JSON string). */
export interface FunctionCall {
  name: string;
  parameters: Record<string, unknown> | string;
}

/** What {@link ActionReturn}'s constructor takes; every field is optional. */
export interface ActionReturnInit {
  args?: Record<string, unknown> | null;
  url?: string | null;
  type?: string | null;
  result?: ActionResultItem[] | null;
  errmsg?: string | null;
  state?: ActionStatusCode;
  thought?: string | null;
  valid?: ActionValidCode;
}

/** The outcome of one tool call: its result items or its error, in Lagent's shape. */
export class ActionReturn {
  args: Record<string, unknown> | null;
  url: string | null;
  type: string | null;
  result: ActionResultItem[] | null;
  errmsg: string | null;
  state: ActionStatusCode;
  thought: string | null;
  valid: ActionValidCode;

  constructor(init: ActionReturnInit = {}) {
    this.args = init.args ?? null;
    this.url = init.url ?? null;
    this.type = init.type ?? null;
    this.result = init.result ?? null;
    this.errmsg = init.errmsg ?? null;
    this.state = init.state ?? ActionStatusCode.SUCCESS;
    this.thought = init.thought ?? null;
    this.valid = init.valid ?? ActionValidCode.OPEN;
  }

  /** The result as text: 'text' items as they are, others as `[type](content)`, one per line. */
  formatResult(): string {
    const result = this.result;
    if (!result) return '';
    if (!Array.isArray(result)) return toText(result);
    const lines: string[] = [];
    for (const item of result) {
      const content = toText(item?.content);
      lines.push(item?.type === 'text' ? content : `[${toText(item?.type)}](${content})`);
    }
    return lines.join('\n');
  }

  /**
   * The text the model sees for this call: the result text when the call succeeded, otherwise the error
   * message (or, when there is none, whatever result there is, or a sentence naming the state).
   *
   * @example
   * new ActionReturn({ result: [{ type: 'text', content: '42' }] }).toText(); // '42'
   * new ActionReturn({ errmsg: 'city not found', state: ActionStatusCode.API_ERROR }).toText(); // 'city not found'
   */
  toText(): string {
    if (this.state === ActionStatusCode.SUCCESS) return this.formatResult();
    if (typeof this.errmsg === 'string' && this.errmsg !== '') return this.errmsg;
    return this.formatResult() || `The tool call failed (state ${this.state}).`;
  }

  clone(): ActionReturn {
    return new ActionReturn({
      args: deepClone(this.args),
      url: this.url,
      type: this.type,
      result: deepClone(this.result),
      errmsg: this.errmsg,
      state: this.state,
      thought: this.thought,
      valid: this.valid,
    });
  }

  toJSON(): Required<{ [K in keyof ActionReturnInit]: ActionReturnInit[K] | null }> {
    return {
      args: deepClone(this.args),
      url: this.url,
      type: this.type,
      result: deepClone(this.result),
      errmsg: this.errmsg,
      state: this.state,
      thought: this.thought,
      valid: this.valid,
    };
  }
}
