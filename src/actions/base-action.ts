import { z } from 'zod';
import { effectiveSignal } from '../core/call-context';
import { driveAsync, driveSync } from '../core/steps';
import type { ActionReturn } from '../schema/action-return';
import { FROZEN_OPENAI_TOOLS } from '../schema/chat-message';
import { ConfigurationError } from '../schema/errors';
import { actionCallSteps, type CallSettings, type ResolvedApi } from './action-steps';
import { deepFreeze, describeApi } from './describe';
import type {
  ActionApi,
  ActionCallOptions,
  ActionDescription,
  ApprovalRule,
  AsyncActionCallOptions,
  OpenAITool,
  ToolApiSpec,
  ToolContext,
} from './types';

/** Options of an action: its name, description and APIs. */
export interface ActionOptions {
  /** @default the class name */
  name?: string | undefined;
  /** What the tool does, for the model. @default '' */
  description?: string | undefined;
  /**
   * The APIs, by name; an action whose only API is `run` is a simple tool, otherwise a toolkit called as
   * `Name.api`. Class-based actions leave this out and declare `static toolApis` instead.
   */
  apis?: Readonly<Record<string, ActionApi<any, unknown>>> | undefined;
}

/** Options of {@link ActionBase.toOpenAITools}. */
export interface OpenAIToolsOptions {
  /**
   * Joins a toolkit's name and API name. OpenAI allows only `[A-Za-z0-9_-]` in function names, hence
   * the default; executors accept both `Name.api` and `Name__api`. @default '__'
   */
  separator?: string | undefined;
}

const DEFAULT_CONTEXT: ToolContext = Object.freeze({ sessionId: 0 });
const NAME = /^[^.\s]+$/;

function isZodObject(value: unknown): value is z.ZodObject {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { _zod?: { def?: { type?: unknown } } })._zod?.def?.type === 'object'
  );
}

/** A schema that rejects unknown keys, unless it was declared loose (or with a catchall) on purpose. */
function strictOf(schema: z.ZodObject): z.ZodObject {
  return schema._zod.def.catchall === undefined ? schema.strict() : schema;
}

function checkApprovalRule(name: string, api: string, rule: unknown): ApprovalRule<any> | undefined {
  if (rule === undefined || rule === false) return undefined;
  if (rule === true || typeof rule === 'function') return rule as ApprovalRule<any>;
  throw new ConfigurationError({
    message: `${name}.${api}: needsApproval must be a boolean or a function (args, context) => boolean, got ${typeof rule}`,
  });
}

/** The static side of a class-based action: `static toolApis` maps method names to their declarations. */
interface ActionClass {
  name: string;
  toolApis?: Readonly<Record<string, ToolApiSpec>> | undefined;
}

/**
 * What sync and async actions share: name, Lagent-style `description`, `isToolkit`, the APIs and their
 * argument checking. Use {@link BaseAction} or {@link AsyncBaseAction}.
 */
export abstract class ActionBase {
  /**
   * Class-based actions declare their APIs here: method name -> `{ description, parameters }`; the method
   * of that name runs the API. A single `run` makes a simple tool, other names a toolkit.
   */
  static toolApis?: Readonly<Record<string, ToolApiSpec>>;
  /** The tool name the model calls (`Name`, or `Name.api` for a toolkit's APIs). */
  readonly name: string;
  /** Lagent's description shape (frozen; copy it to change it). */
  readonly description: ActionDescription;
  /** True when the action has several APIs, called as `Name.api`. */
  readonly isToolkit: boolean;
  /** The resolved APIs by name (internal to actions and executors). */
  readonly apis: ReadonlyMap<string, ResolvedApi>;
  #openAI: OpenAITool[] | undefined;
  #openAISeparator: string | undefined;

  constructor(options: ActionOptions = {}) {
    const type = new.target as unknown as ActionClass;
    const name = options.name ?? type.name;
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw new ConfigurationError({
        message: `an action name must be a non-empty string without dots or spaces, got ${JSON.stringify(name)}`,
      });
    }
    const declared = options.apis ?? this.#fromClass(type, name);
    const apiNames = Object.keys(declared);
    if (apiNames.length === 0) {
      throw new ConfigurationError({
        message: `${name} declares no APIs (give apis, or a static toolApis with methods)`,
      });
    }
    const isToolkit = !(apiNames.length === 1 && apiNames[0] === 'run');
    if (isToolkit && apiNames.includes('run')) {
      throw new ConfigurationError({
        message: `${name}: "run" and other APIs cannot be declared together (a toolkit's APIs are called as ${name}.api)`,
      });
    }
    const description = typeof options.description === 'string' ? options.description : '';
    const apis = new Map<string, ResolvedApi>();
    for (const apiName of apiNames)
      apis.set(apiName, this.#resolve(name, apiName, declared[apiName]!, description));
    this.name = name;
    this.isToolkit = isToolkit;
    this.apis = apis;
    this.description = deepFreeze(
      isToolkit
        ? { name, description, api_list: [...apis.values()].map((api) => api.info.description) }
        : { ...apis.get('run')!.info.description },
    );
  }

  #fromClass(type: ActionClass, name: string): Record<string, ActionApi> {
    const specs = type.toolApis;
    if (!specs) return {};
    const apis: Record<string, ActionApi> = {};
    for (const [method, spec] of Object.entries(specs)) {
      const fn = (this as unknown as Record<string, unknown>)[method];
      if (typeof fn !== 'function') {
        throw new ConfigurationError({
          message: `${name}: static toolApis declares "${method}" but the class has no method of that name`,
        });
      }
      apis[method] = { ...spec, run: (args, context) => (fn as Function).call(this, args, context) };
    }
    return apis;
  }

  #resolve(name: string, apiName: string, api: ActionApi, toolDescription: string): ResolvedApi {
    if (typeof api?.run !== 'function') {
      throw new ConfigurationError({ message: `${name}.${apiName} needs a run function` });
    }
    const parameters = api.parameters ?? z.object({});
    if (!isZodObject(parameters)) {
      throw new ConfigurationError({
        message: `${name}.${apiName}: parameters must be a zod object schema, e.g. z.object({ query: z.string() })`,
      });
    }
    const description = api.description ?? (apiName === 'run' ? toolDescription : '');
    const schema = strictOf(parameters);
    const info = describeApi(apiName === 'run' ? name : apiName, description, schema);
    const run = api.run;
    return {
      name: apiName,
      schema,
      signature: info.signature,
      fromText: api.fromText,
      run: (args, context) => run(args, context),
      info,
      needsApproval: checkApprovalRule(name, apiName, api.needsApproval),
      retrySafe: api.retrySafe === true,
    };
  }

  /** The APIs in OpenAI's function-tool format (JSON Schema from zod), one per API. */
  toOpenAITools(options: OpenAIToolsOptions = {}): OpenAITool[] {
    return structuredClone(this[FROZEN_OPENAI_TOOLS](options.separator ?? '__') as OpenAITool[]);
  }

  /** The tools of {@link toOpenAITools}, frozen and uncopied: what a model client reads on every call. */
  [FROZEN_OPENAI_TOOLS](separator: string): readonly OpenAITool[] {
    if (!this.#openAI || this.#openAISeparator !== separator) {
      this.#openAI = [...this.apis.values()].map((api) =>
        deepFreeze({
          type: 'function' as const,
          function: {
            name: this.isToolkit ? `${this.name}${separator}${api.name}` : this.name,
            description: api.info.description.description,
            parameters: api.info.jsonSchema as Record<string, unknown>,
          },
        }),
      );
      this.#openAISeparator = separator;
    }
    return this.#openAI;
  }

  /** `Name(api, ...)` — the name and its APIs. */
  toString(): string {
    return `${this.name}(${[...this.apis.keys()].join(', ')})`;
  }
}

/**
 * A synchronous tool: `call()` returns an {@link ActionReturn} directly and never throws for anything the
 * tool does. Build one with `tool()` / `toolkit()`, or subclass it with `static toolApis`.
 *
 * @example
 * class Calculator extends BaseAction {
 *   static override toolApis = {
 *     add: { description: 'Add two numbers', parameters: z.object({ a: z.number(), b: z.number() }) },
 *   };
 *   add({ a, b }: { a: number; b: number }) { return a + b; }
 * }
 * new Calculator().call('{"a": 1, "b": 2}', 'add').formatResult(); // '3'
 */
export class BaseAction extends ActionBase {
  /**
   * Types only (no such property at run time): tells sync tools from async ones, so that an async tool given
   * where a sync one is needed (a sync agent, an `ActionExecutor`) is a type error that says what to do.
   */
  declare readonly '~runs': 'sync';

  /** Runs one API: arguments are checked (a JSON string is parsed first); errors come back as data. */
  call(parameters: unknown, api = 'run', options: ActionCallOptions = {}): ActionReturn {
    const context = options.sessionId === undefined ? DEFAULT_CONTEXT : { sessionId: options.sessionId };
    return driveSync(actionCallSteps(this, parameters, api, { context, sync: true }));
  }
}

/**
 * An asynchronous tool: `call()` resolves to an {@link ActionReturn}. Its APIs may be async (or not); they
 * receive `context.signal`, aborted on the caller's signal or the per-call timeout.
 *
 * @example
 * const search = asyncTool({
 *   name: 'search', description: 'Search the web', parameters: z.object({ query: z.string() }),
 *   run: async ({ query }, { signal }) => (await fetch(`https://example.com?q=${query}`, { signal })).text(),
 * });
 * await search.call({ query: 'lagent' }, 'run', { timeoutMs: 5000 });
 */
export class AsyncBaseAction extends ActionBase {
  /** Types only: see {@link BaseAction}. */
  declare readonly '~runs': 'async (a sync agent or ActionExecutor cannot run it: use an Async* agent or AsyncActionExecutor)';

  /** Runs one API; rejects only when the caller's `signal` aborts. */
  call(parameters: unknown, api = 'run', options: AsyncActionCallOptions = {}): Promise<ActionReturn> {
    try {
      return driveAsync(actionCallSteps(this, parameters, api, callSettings(options)));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

/**
 * The call settings for async options: a context, and a controller only when a timeout needs one. The
 * signal is the caller's combined with the one inherited from the agent call this runs inside.
 */
export function callSettings(options: AsyncActionCallOptions): CallSettings {
  const { sessionId = 0, timeoutMs } = options;
  const signal = effectiveSignal(options.signal);
  if (signal?.aborted) return { context: { sessionId, signal }, signal };
  if (timeoutMs === undefined) {
    return {
      context: signal ? { sessionId, signal } : sessionId === 0 ? DEFAULT_CONTEXT : { sessionId },
      signal,
    };
  }
  checkTimeout(timeoutMs);
  const controller = new AbortController();
  return { context: { sessionId, signal: controller.signal }, signal, timeoutMs, controller };
}

/** Throws a `ConfigurationError` unless `timeoutMs` is a positive, finite number of milliseconds. */
export function checkTimeout(timeoutMs: number): void {
  if (!(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new ConfigurationError({
      message: `timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`,
    });
  }
}
