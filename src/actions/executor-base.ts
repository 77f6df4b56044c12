import { approvalRules } from '../core/approval-rules';
import type { Steps } from '../core/steps';
import { type Hook, HookList, type RemovableHandle } from '../hooks/hook';
import { ActionReturn } from '../schema/action-return';
import type { ToolCall } from '../schema/chat-message';
import { FROZEN_OPENAI_TOOLS } from '../schema/chat-message';
import { ConfigurationError } from '../schema/errors';
import { ActionStatusCode } from '../schema/status';
import { toText } from '../utils/text';
import { actionCallSteps, type CallSettings } from './action-steps';
import type { ActionBase, OpenAIToolsOptions } from './base-action';
import { FinishAction, InvalidAction, NoAction } from './builtin-actions';
import { copyDescription } from './describe';
import { FORWARD_STEPS, INVALID_CALL_STEPS, TOOL_CALL_STEPS } from './executor-steps';
import { readToolCallArguments } from './tool-call-steps';
import type { ApiDescription, OpenAITool, ToolContext } from './types';

/** Options of the action executors; `H` is the kind of hook the executor runs. */
export interface ActionExecutorOptions<A extends ActionBase, H extends Hook = Hook> {
  /** The tools, by their names (a single one is fine). */
  actions: A | readonly A[];
  /** Answers calls to unknown tools. @default new InvalidAction() */
  invalidAction?: ActionBase | undefined;
  /** Answers calls that did not follow the format (calls to its name). @default new NoAction() */
  noAction?: ActionBase | undefined;
  /** Ends the task (calls to its name). @default new FinishAction() */
  finishAction?: ActionBase | undefined;
  /** Also list `finishAction` among the tools (in `description()`, `keys()`). @default false */
  finishInAction?: boolean | undefined;
  hooks?: readonly H[] | undefined;
  /** The sender of the executor's messages. @default 'ActionExecutor' */
  name?: string | undefined;
  /**
   * Which calls need a person's approval before they run, for tools whose declaration you do not own (MCP
   * toolkits, prebuilt tools); a tool's own `needsApproval` applies as well.
   */
  needsApproval?: ((call: ToolCall, context: ToolContext) => boolean | Promise<boolean>) | undefined;
}

interface Target {
  action: ActionBase;
  api: string;
}

/**
 * What both executors share: the tool registry (`has`, `keys`, `get`, `set`, `delete`), descriptions,
 * hooks and dispatch of `Name` / `Name.api` calls. Use {@link ActionExecutor} or {@link AsyncActionExecutor}.
 */
export abstract class ExecutorBase<A extends ActionBase, H extends Hook = Hook> {
  /** The sender of the executor's replies. */
  readonly name: string;
  /** Answers calls to tools that do not exist. */
  readonly invalidAction: ActionBase;
  /** Answers calls to its own name: responses that did not follow the format. */
  readonly noAction: ActionBase;
  /** Answers calls to its own name with the final answer (`valid: FINISH`). */
  readonly finishAction: ActionBase;
  /** Whether `finishAction` is also one of the listed tools. */
  readonly finishInAction: boolean;
  readonly #actions = new Map<string, A>();
  readonly #hooks: HookList;
  readonly #needsApproval: ActionExecutorOptions<A, H>['needsApproval'];
  /** The tools' OpenAI JSON for model clients, until the registry changes. */
  #frozenTools:
    | { separator: string; tools: readonly OpenAITool[]; parts: (readonly OpenAITool[])[] }
    | undefined;

  constructor(options: ActionExecutorOptions<A, H>) {
    if (options === null || typeof options !== 'object' || !('actions' in options)) {
      throw new ConfigurationError({ message: `${new.target.name} expects { actions: [...] }` });
    }
    this.name = options.name ?? 'ActionExecutor';
    this.invalidAction = options.invalidAction ?? new InvalidAction();
    this.noAction = options.noAction ?? new NoAction();
    this.finishAction = options.finishAction ?? new FinishAction();
    this.finishInAction = options.finishInAction ?? false;
    const actions = (Array.isArray(options.actions) ? [...options.actions] : [options.actions]) as A[];
    if (this.finishInAction) actions.push(this.finishAction as A);
    for (const action of actions) {
      this.checkAction(action);
      if (this.#actions.has(action.name)) {
        throw new ConfigurationError({
          message: `${new.target.name}: two actions are named "${action.name}"`,
        });
      }
      this.#actions.set(action.name, action);
    }
    this.#hooks = new HookList(options.hooks);
    if (options.needsApproval !== undefined && typeof options.needsApproval !== 'function') {
      throw new ConfigurationError({
        message: `${new.target.name}: needsApproval must be a function (call, context) => boolean`,
      });
    }
    this.#needsApproval = options.needsApproval;
    approvalRules.version++;
  }

  /**
   * Whether a native tool call needs a person's approval before it runs: the executor's `needsApproval`, or
   * the tool API's own (given the call's checked arguments). Calls to unknown tools, or with arguments the
   * tool would refuse, need none: they are answered with an error without running anything.
   */
  approvalNeeded(call: ToolCall, context: ToolContext): boolean | Promise<boolean> {
    const own = this.#needsApproval?.(call, context);
    if (own === true) return true;
    const rule = this.#ruleOf(call, context);
    if (own === undefined || own === false) return rule;
    return Promise.resolve(own).then((needed) => needed || rule);
  }

  /**
   * Whether some call could need a person's approval: the executor has `needsApproval`, or a tool API has
   * its own. An agent tree holding no such executor never stops to ask.
   */
  mayNeedApproval(): boolean {
    if (this.#needsApproval !== undefined) return true;
    for (const action of this.#actions.values()) {
      for (const api of action.apis.values()) if (api.needsApproval) return true;
    }
    return false;
  }

  /** Whether the tool a call names is declared safe to run twice (`retrySafe`). */
  retrySafe(call: ToolCall): boolean {
    const target = this.#resolve(call.name);
    return target?.action.apis.get(target.api)?.retrySafe === true;
  }

  #ruleOf(call: ToolCall, context: ToolContext): boolean | Promise<boolean> {
    const target = this.#resolve(call.name);
    const rule = target?.action.apis.get(target.api)?.needsApproval;
    if (typeof rule !== 'function') return rule === true;
    const api = target!.action.apis.get(target!.api)!;
    const read = readToolCallArguments(call.arguments);
    if (!read.ok) return false;
    const checked = api.schema.safeParse(read.args);
    if (!checked.success) return false;
    return rule(checked.data, context);
  }

  /** Refuses actions this executor cannot run. */
  protected abstract checkAction(action: unknown): asserts action is A;

  /** The registered tools by name. */
  get actions(): ReadonlyMap<string, A> {
    return this.#actions;
  }

  /** The registered hooks, in the order they run. */
  get hooks(): readonly H[] {
    return this.#hooks.items as readonly H[];
  }

  /** Adds a hook after the existing ones; `handle.remove()` takes it out. */
  registerHook(hook: H): RemovableHandle {
    return this.#hooks.add(hook);
  }

  /** Whether a tool of this name is registered. */
  has(name: string): boolean {
    return this.#actions.has(name);
  }

  /** The tool names, in order. */
  keys(): string[] {
    return [...this.#actions.keys()];
  }

  /** The tool of this name, if any. */
  get(name: string): A | undefined {
    return this.#actions.get(name);
  }

  /** Registers a tool, replacing one of the same name. */
  set(action: A): this {
    this.#frozenTools = undefined;
    approvalRules.version++;
    this.checkAction(action);
    this.#actions.set(action.name, action);
    return this;
  }

  /** Removes a tool; false when there was none. */
  delete(name: string): boolean {
    this.#frozenTools = undefined;
    return this.#actions.delete(name);
  }

  /** Every API as a Lagent description (fresh copies): toolkits' APIs are named `Name.api`. */
  description(): ApiDescription[] {
    const out: ApiDescription[] = [];
    for (const action of this.#actions.values()) {
      if (action.isToolkit) {
        for (const api of action.description.api_list ?? []) {
          out.push({ ...copyDescription(api), name: `${action.name}.${api.name}` });
        }
      } else out.push(copyDescription(action.description) as ApiDescription);
    }
    return out;
  }

  /** Every API in OpenAI's function-tool format. */
  toOpenAITools(options?: OpenAIToolsOptions): OpenAITool[] {
    return [...this.#actions.values()].flatMap((action) => action.toOpenAITools(options));
  }

  /** The tools of {@link toOpenAITools}, frozen and uncopied: what a model client reads on every call. */
  [FROZEN_OPENAI_TOOLS](separator: string): readonly OpenAITool[] {
    const cached = this.#frozenTools;
    // Reused while every action still gives the same (frozen) array: a toolkit whose tools changed (an MCP
    // server's list refreshed) gives a new one, and the list is rebuilt.
    if (cached?.separator === separator) {
      let index = 0;
      let same = true;
      for (const action of this.#actions.values()) {
        if (action[FROZEN_OPENAI_TOOLS](separator) !== cached.parts[index++]) {
          same = false;
          break;
        }
      }
      if (same && index === cached.parts.length) return cached.tools;
    }
    const tools: OpenAITool[] = [];
    const parts: (readonly OpenAITool[])[] = [];
    for (const action of this.#actions.values()) {
      const part = action[FROZEN_OPENAI_TOOLS](separator);
      parts.push(part);
      tools.push(...part);
    }
    Object.freeze(tools);
    this.#frozenTools = { separator, tools, parts };
    return tools;
  }

  /** Which action and API a name means: `Name`, `Name.api`, or OpenAI-safe `Name__api`. */
  #resolve(name: string): Target | null {
    const exact = this.#actions.get(name);
    if (exact) return { action: exact, api: 'run' };
    for (const separator of ['.', '__']) {
      const at = name.indexOf(separator);
      if (at <= 0) continue;
      const action = this.#actions.get(name.slice(0, at));
      if (action) return { action, api: name.slice(at + separator.length) };
    }
    return null;
  }

  /**
   * Dispatch of one call, as steps (internal). Not a generator itself: it picks the action's steps (its
   * callers run them at once), which saves a generator per call.
   */
  [FORWARD_STEPS](name: string, parameters: unknown, settings: CallSettings): Steps<ActionReturn> {
    const target = typeof name === 'string' ? this.#resolve(name) : null;
    if (target) return actionCallSteps(target.action, parameters, target.api, settings);
    if (name === this.noAction.name) return actionCallSteps(this.noAction, parameters, 'run', settings);
    if (name === this.finishAction.name)
      return actionCallSteps(this.finishAction, parameters, 'run', settings);
    const toolName = toText(name);
    return actionCallSteps(this.invalidAction, { toolName, availableTools: this.keys() }, 'run', settings);
  }

  /**
   * One native tool call, as steps (internal): its `arguments` must be a JSON object (or JSON text of one);
   * anything else is answered with an `ARGS_ERROR` naming what the tool takes. Unknown tools and APIs are
   * answered as in {@link FORWARD_STEPS}.
   */
  *[TOOL_CALL_STEPS](call: ToolCall, settings: CallSettings): Steps<ActionReturn> {
    const read = readToolCallArguments(call.arguments);
    if (read.ok) return yield* this[FORWARD_STEPS](call.name, read.args, settings);
    const target = this.#resolve(call.name);
    const api = target?.action.apis.get(target.api);
    if (!target || !api) return yield* this[FORWARD_STEPS](call.name, call.arguments, settings);
    // The name the model used, so that it recognises its own call.
    const label = call.name;
    return new ActionReturn({
      args: { inputs: call.arguments, name: target.api },
      type: target.action.name,
      errmsg: `Invalid arguments for ${label}: ${read.problem}. It takes ${api.signature}.`,
      state: ActionStatusCode.ARGS_ERROR,
    });
  }

  /** The answer to a message that holds no tool call (internal). */
  *[INVALID_CALL_STEPS](errMsg: string, settings: CallSettings): Steps<ActionReturn> {
    return yield* actionCallSteps(this.invalidAction, { errMsg }, 'run', settings);
  }
}
