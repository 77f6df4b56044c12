import type { CallFrame } from '../core/call-context';
import type { Slot } from '../core/interceptors';
import type { Steps } from '../core/steps';
import type { SessionId } from '../schema/session';
import { isThenable } from '../utils/is';
import type { CallableAction, CallSettings } from './action-steps';

/** Marks an action whose calls are not tool calls of a budget (the executors' built-in answers). */
export const UNMETERED: unique symbol = Symbol('lagent-ts.unmetered');

/**
 * What the `toolCall` hooks of interceptors get: one tool call, made inside an agent call (`call`, whose slots
 * `find` looks in after the tool call's own). An interceptor may change `toolCall.arguments` before `next()`.
 * `onRun` registers what runs once the arguments were checked, just before the tool runs (a budget counts the
 * call there; a durable journal records that it started): a callback may return a promise to wait for.
 */
export class ToolCallContext {
  /** The agent call the tool call is made inside. */
  readonly call: CallFrame;
  /** The tool as the model names it (`Name`, or `Name.api` for a toolkit's), and its arguments as given. */
  readonly toolCall: { name: string; arguments: unknown };
  /** Whether the tool may run twice (`retrySafe`). */
  readonly retrySafe: boolean;
  /** An executor's built-in answer (an unknown tool's, a bad request's): no budget counts it, no guardrail checks it. */
  readonly builtin: boolean;
  readonly action: CallableAction;
  readonly api: string;
  readonly settings: CallSettings;
  #slots: unknown[] | undefined = undefined;
  #beforeRun: (() => unknown)[] | undefined = undefined;

  constructor(
    call: CallFrame,
    action: CallableAction,
    api: string,
    parameters: unknown,
    settings: CallSettings,
  ) {
    this.call = call;
    this.action = action;
    this.api = api;
    this.settings = settings;
    this.retrySafe = action.apis.get(api)?.retrySafe === true;
    this.builtin = (action as { [UNMETERED]?: boolean })[UNMETERED] === true;
    const name = action.isToolkit || api !== 'run' ? `${action.name}.${api}` : action.name;
    this.toolCall = { name, arguments: parameters };
  }

  /** The agent whose call the tool call is made in. */
  get agent(): object {
    return this.call.owner;
  }

  get sessionId(): SessionId {
    return this.settings.context.sessionId;
  }

  /** The tool call's signal: the caller's (aborted with the agent call). */
  get signal(): AbortSignal | undefined {
    return this.settings.signal;
  }

  /** The place the call's steps take in program order, when its executor took one (see `CallSettings`). */
  get place(): unknown {
    return this.settings.place;
  }

  get<T>(key: Slot<T>): T | undefined {
    const entries = this.#slots;
    if (entries === undefined) return undefined;
    for (let i = 0; i < entries.length; i += 2) if (entries[i] === key) return entries[i + 1] as T;
    return undefined;
  }

  set<T>(key: Slot<T>, value: T | undefined): void {
    const entries = this.#slots;
    if (entries === undefined) {
      if (value !== undefined) this.#slots = [key, value];
      return;
    }
    for (let i = 0; i < entries.length; i += 2) {
      if (entries[i] !== key) continue;
      if (value === undefined) entries.splice(i, 2);
      else entries[i + 1] = value;
      return;
    }
    if (value !== undefined) entries.push(key, value);
  }

  find<T>(key: Slot<T>): T | undefined {
    return this.get(key) ?? this.call.find(key);
  }

  /** Runs `callback` once the arguments were checked, just before the tool runs (in the order registered). */
  onRun(callback: () => unknown): void {
    if (this.#beforeRun === undefined) this.#beforeRun = [callback];
    else this.#beforeRun.push(callback);
  }

  /** The `onRun` callbacks, as steps (internal: the tool call runs them). */
  *beforeRun(): Steps<void> {
    const callbacks = this.#beforeRun;
    if (callbacks === undefined) return;
    for (const callback of callbacks) {
      const done = callback();
      if (isThenable(done)) yield done;
    }
  }
}
