import type { MemoryManager } from '../memory/memory-manager';
import type { AgentMessage } from '../schema/agent-message';
import { ConfigurationError } from '../schema/errors';
import type { SessionId } from '../schema/session';

export { hookNameOf } from '../core/hook-step';

/**
 * The agent side of a hook call: what a hook may rely on of the agent it runs in (any agent variant).
 * Declared here so that hooks do not depend on the agent classes.
 */
export interface HookAgent {
  readonly name: string;
  readonly memory: MemoryManager | null;
}

/** What a sync hook returns: a replacement, or nothing to keep (possibly edited in place) what it was given. */
// biome-ignore lint/suspicious/noConfusingVoidType: `void` lets hook methods that return nothing type-check
export type SyncHookResult<T> = T | undefined | null | void;

/** What a hook returns: a replacement or nothing, possibly as a promise (async agents and executors only). */
export type HookResult<T> = SyncHookResult<T> | PromiseLike<SyncHookResult<T>>;

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
 * return a replacement or nothing ({@link HookResult}). Sync agents and executors take sync hooks only
 * ({@link SyncHook}: an `async` method there is a compile error); async ones take both ({@link AsyncHook}).
 *
 * - `beforeAgent` sees the (copied) input messages before they are stored: its edits reach memory.
 * - `afterAgent` sees a copy of the stored reply: its edits reach the caller, not memory.
 *
 * The methods are declared returning `void` so that a subclass may override them with sync or async
 * methods; what they return is checked where the hook is given to an agent or executor.
 *
 * @example
 * class Shout extends Hook {
 *   override beforeAgent(agent: HookAgent, messages: AgentMessage[]) {
 *     for (const message of messages) message.content = String(message.content).toUpperCase();
 *   }
 * }
 */
export interface Hook {
  beforeAgent?(agent: HookAgent, messages: AgentMessage[], sessionId: SessionId): void;
  afterAgent?(agent: HookAgent, message: AgentMessage, sessionId: SessionId): void;
  beforeAction?(executor: HookExecutor, message: AgentMessage, sessionId: SessionId): void;
  afterAction?(executor: HookExecutor, message: AgentMessage, sessionId: SessionId): void;
}

/**
 * A hook whose methods return no promise: what `Agent`, `StreamingAgent` and `ActionExecutor` accept.
 * Any `Hook` subclass whose methods are not `async` (and return messages or nothing) is one.
 */
export interface SyncHook extends Hook {
  beforeAgent?(
    agent: HookAgent,
    messages: AgentMessage[],
    sessionId: SessionId,
  ): SyncHookResult<AgentMessage[]>;
  afterAgent?(agent: HookAgent, message: AgentMessage, sessionId: SessionId): SyncHookResult<AgentMessage>;
  beforeAction?(
    executor: HookExecutor,
    message: AgentMessage,
    sessionId: SessionId,
  ): SyncHookResult<AgentMessage>;
  afterAction?(
    executor: HookExecutor,
    message: AgentMessage,
    sessionId: SessionId,
  ): SyncHookResult<AgentMessage>;
}

/**
 * A hook whose methods may return promises: what `AsyncAgent`, `AsyncStreamingAgent` and
 * `AsyncActionExecutor` accept (every {@link SyncHook} is one too).
 */
export interface AsyncHook extends Hook {
  beforeAgent?(agent: HookAgent, messages: AgentMessage[], sessionId: SessionId): HookResult<AgentMessage[]>;
  afterAgent?(agent: HookAgent, message: AgentMessage, sessionId: SessionId): HookResult<AgentMessage>;
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
      throw new ConfigurationError({
        message: 'A hook must be an object implementing beforeAgent/afterAgent/beforeAction/afterAction',
      });
    }
    this.#hooks = [...this.#hooks, hook];
    return new RemovableHandle(() => {
      const index = this.#hooks.indexOf(hook);
      if (index !== -1) this.#hooks = this.#hooks.filter((_, i) => i !== index);
    });
  }
}
