import type { AgentBase } from '../agents/agent-base';
import { AgentMessage } from '../schema/agent-message';
import { HookError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { isThenable } from '../utils/is';
import { PromiseInSyncCall, type Steps } from '../utils/steps';

/** What a hook returns: a replacement, or nothing to keep (possibly edited in place) what it was given. */
// biome-ignore lint/suspicious/noConfusingVoidType: `void` lets hook methods that return nothing type-check
export type HookResult<T> = T | undefined | null | void | PromiseLike<T | undefined | null | void>;

/** The executor side of a hook call (an `ActionExecutor` or `AsyncActionExecutor`). */
export interface HookExecutor {
  readonly name: string;
  /** The names of the registered actions, in order. */
  keys(): string[];
  /** What answers a call that did not follow the format; hooks route such calls to its name. */
  readonly noAction: { readonly name: string };
}

/**
 * Intercepts messages around agents and action executors. Implement any of the four methods; each may
 * return a replacement or nothing. Sync agents need sync hooks; async agents accept both.
 *
 * - `beforeAgent` sees the (copied) input messages before they are stored: its edits reach memory.
 * - `afterAgent` sees a copy of the stored reply: its edits reach the caller, not memory.
 *
 * @example
 * class Shout extends Hook {
 *   beforeAgent(agent: AgentBase, messages: AgentMessage[]) {
 *     for (const message of messages) message.content = String(message.content).toUpperCase();
 *   }
 * }
 */
export interface Hook {
  beforeAgent?(agent: AgentBase, messages: AgentMessage[], sessionId: SessionId): HookResult<AgentMessage[]>;
  afterAgent?(agent: AgentBase, message: AgentMessage, sessionId: SessionId): HookResult<AgentMessage>;
  beforeAction?(
    executor: HookExecutor,
    message: AgentMessage,
    sessionId: SessionId,
  ): HookResult<AgentMessage>;
  afterAction?(executor: HookExecutor, message: AgentMessage, sessionId: SessionId): HookResult<AgentMessage>;
}

/** The base class of hooks; subclasses implement (with `override`) the methods they need. */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface declares the optional hook methods
export abstract class Hook {
  /** Used in error messages; the class name unless overridden. */
  get hookName(): string {
    return this.constructor.name;
  }
}

/** Returned by `registerHook`; `remove()` unregisters the hook (idempotent). */
export class RemovableHandle {
  readonly #remove: () => void;
  #removed = false;

  constructor(remove: () => void) {
    this.#remove = remove;
  }

  remove(): void {
    if (this.#removed) return;
    this.#removed = true;
    this.#remove();
  }
}

/** An ordered list of hooks, copy-on-write so that a call in progress is never affected by changes. */
export class HookList {
  #hooks: readonly Hook[] = [];

  constructor(hooks: readonly Hook[] = []) {
    for (const hook of hooks) this.add(hook);
  }

  get items(): readonly Hook[] {
    return this.#hooks;
  }

  add(hook: Hook): RemovableHandle {
    if (hook === null || typeof hook !== 'object') {
      throw new TypeError(
        'A hook must be an object implementing beforeAgent/afterAgent/beforeAction/afterAction',
      );
    }
    this.#hooks = [...this.#hooks, hook];
    return new RemovableHandle(() => {
      const index = this.#hooks.indexOf(hook);
      if (index !== -1) this.#hooks = this.#hooks.filter((_, i) => i !== index);
    });
  }
}

/** The name to show for a hook in errors: `hookName`, else its class name. */
export function hookNameOf(hook: object): string {
  const named = (hook as { hookName?: unknown }).hookName;
  return typeof named === 'string' ? named : (hook.constructor?.name ?? 'hook');
}

type Stage = HookError['stage'];

function hookError(error: unknown, hook: object, stage: Stage): HookError {
  const hookName = hookNameOf(hook);
  const reason =
    error instanceof PromiseInSyncCall
      ? 'it returned a Promise, which a synchronous agent or executor cannot wait for (use the Async variant)'
      : error instanceof Error
        ? error.message
        : String(error);
  return new HookError({
    hookName,
    stage,
    message: `hook ${hookName}.${stage} failed: ${reason}`,
    cause: error,
  });
}

/**
 * Calls one hook method as a lifecycle step (agents and executors share it): a promise it returns is
 * yielded to the driver, a failure becomes a {@link HookError} naming the hook and the stage, and the
 * result must be what the stage allows (messages for `beforeAgent`, one message otherwise) or nothing.
 */
export function* hookStep<T extends AgentMessage | AgentMessage[]>(
  hook: Hook,
  stage: Stage,
  target: unknown,
  payload: T,
  sessionId: SessionId,
): Steps<T | undefined> {
  let result: unknown;
  try {
    result = (hook[stage] as (target: unknown, payload: T, sessionId: SessionId) => unknown).call(
      hook,
      target,
      payload,
      sessionId,
    );
    if (isThenable(result)) result = yield result;
  } catch (error) {
    throw hookError(error, hook, stage);
  }
  if (!result) return undefined;
  const valid =
    stage === 'beforeAgent'
      ? Array.isArray(result) && result.every((item) => item instanceof AgentMessage)
      : result instanceof AgentMessage;
  if (!valid) {
    const hookName = hookNameOf(hook);
    const expected = stage === 'beforeAgent' ? 'AgentMessage[]' : 'an AgentMessage';
    throw new HookError({
      hookName,
      stage,
      message: `hook ${hookName}.${stage} must return ${expected} or nothing`,
    });
  }
  return result as T;
}
