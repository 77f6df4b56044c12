import { deepClone } from '../utils/clone';
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
    if (!this.result) return '';
    const lines: string[] = [];
    for (const item of this.result) {
      lines.push(item.type === 'text' ? item.content : `[${item.type}](${item.content})`);
    }
    return lines.join('\n');
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
