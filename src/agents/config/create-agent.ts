import { z } from 'zod';
import { ConfigurationError } from '../../schema/errors';
import { isPlainObject } from '../../utils/is';
import { errorMessage } from '../../utils/text';
import { AgentBase } from '../agent-base';
import { type ConfigurableClass, ROOT_CLASSES } from './registry';

/**
 * A class given by name (looked up in `registry`, the root entry's classes, then `lagent-ts/tools`) or
 * itself, as in Lagent's `dict(type=AsyncGPTAPI, ...)`; the other keys are its options. `args`, when given,
 * are positional arguments placed before the options (`Sequential`'s agents, `PromptTemplate`'s text).
 */
export interface ObjectConfig {
  type: string | ConfigurableClass;
  args?: readonly unknown[] | undefined;
  [option: string]: unknown;
}

/** Classes a config may name, by name. */
export type ConfigRegistry = Readonly<Record<string, ConfigurableClass>>;

/** Options of {@link createAgent}. */
export interface CreateAgentOptions {
  /** Classes of your own (or others) by name; they take precedence over the built-in names. */
  registry?: ConfigRegistry | undefined;
  /**
   * Look a name found nowhere else up in `lagent-ts/tools` (imported the first time one is needed).
   * @default true
   */
  loadTools?: boolean | undefined;
}

/** What {@link buildFromConfig} made: the value, and every object it constructed, in order. */
export interface BuiltConfig {
  value: unknown;
  created: unknown[];
}

/** The tools subpath, resolved by the package's own name when a config first names a class only it has. */
const TOOLS_ENTRY = 'lagent-ts/tools';
let toolClasses: Promise<ConfigRegistry> | undefined;

function loadToolClasses(): Promise<ConfigRegistry> {
  toolClasses ??= (import(/* @vite-ignore */ TOOLS_ENTRY) as Promise<Record<string, unknown>>).then(
    (module) => {
      const classes: Record<string, ConfigurableClass> = {};
      for (const [name, value] of Object.entries(module)) if (isClass(value)) classes[name] = value;
      return classes;
    },
    (error: unknown) => {
      toolClasses = undefined;
      throw error;
    },
  );
  return toolClasses;
}

function isClass(value: unknown): value is ConfigurableClass {
  return typeof value === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(value));
}

/** A config node: an object whose `type` is a class, or a capitalized name (lower-case `type`s are data). */
function isObjectConfig(value: unknown): value is ObjectConfig {
  if (!isPlainObject(value)) return false;
  const type = value.type;
  return isClass(type) || (typeof type === 'string' && /^[A-Z]/.test(type));
}

const ConfigShape = z.looseObject({
  type: z.union([z.string().min(1), z.custom<ConfigurableClass>(isClass, 'expected a class')]),
  args: z.array(z.unknown()).optional(),
});

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const name = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  return path === '' ? name : `${path}.${name}`;
}

function fail(path: string, message: string, cause?: unknown): never {
  throw new ConfigurationError({ message: path === '' ? message : `${path}: ${message}`, cause });
}

class Builder {
  readonly created: unknown[] = [];
  readonly #registry: ConfigRegistry;
  readonly #loadTools: boolean;

  constructor(options: CreateAgentOptions) {
    this.#registry = options.registry ?? {};
    this.#loadTools = options.loadTools ?? true;
  }

  async build(value: unknown, path: string): Promise<unknown> {
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const [index, item] of value.entries()) out.push(await this.build(item, childPath(path, index)));
      return out;
    }
    if (!isPlainObject(value)) return value;
    if (!isObjectConfig(value)) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(value))
        out[key] = await this.build(item, childPath(path, key));
      return out;
    }
    return this.construct(value, path);
  }

  async construct(config: Record<string, unknown>, path: string): Promise<unknown> {
    const checked = ConfigShape.safeParse(config);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      fail(childPath(path, String(issue.path[0] ?? 'type')), issue.message.replace(/^Invalid input: /, ''));
    }
    const { type, args, ...rest } = checked.data;
    const Class = await this.resolve(type, childPath(path, 'type'));
    const positional = (await this.build(args ?? [], childPath(path, 'args'))) as unknown[];
    const options = (await this.build(rest, path)) as Record<string, unknown>;
    const hasOptions = Object.keys(options).length > 0;
    const argumentList = args === undefined ? [options] : hasOptions ? [...positional, options] : positional;
    let made: unknown;
    try {
      made = new (Class as new (...parameters: unknown[]) => unknown)(...argumentList);
    } catch (error) {
      fail(path, `${Class.name}: ${errorMessage(error)}`, error);
    }
    this.created.push(made);
    return made;
  }

  async resolve(type: string | ConfigurableClass, path: string): Promise<ConfigurableClass> {
    if (typeof type !== 'string') return type;
    const own = lookup(this.#registry, type) ?? lookup(ROOT_CLASSES, type);
    if (own) return own;
    let note = 'not a class of lagent-ts or lagent-ts/tools';
    let known = [...Object.keys(this.#registry), ...Object.keys(ROOT_CLASSES)];
    if (this.#loadTools) {
      try {
        const tools = await loadToolClasses();
        const tool = lookup(tools, type);
        if (tool) return tool;
        known = [...known, ...Object.keys(tools)];
      } catch (error) {
        note = `not a class of lagent-ts, and lagent-ts/tools could not be loaded (${errorMessage(error)})`;
      }
    } else note = 'not a class of lagent-ts (loadTools is off)';
    const near = known.find((name) => name.toLowerCase() === type.toLowerCase());
    const hint = near ? `; did you mean "${near}"?` : '; pass your own classes in { registry }';
    return fail(path, `unknown type ${JSON.stringify(type)} (${note})${hint}`);
  }
}

function lookup(registry: ConfigRegistry, name: string): ConfigurableClass | undefined {
  return Object.hasOwn(registry, name) ? registry[name] : undefined;
}

/**
 * Builds whatever `config` describes (Lagent's `create_object`, applied all the way down): every plain object
 * whose `type` names a class is constructed with its other keys, built first, as options. Objects it made are
 * in `created`; when one fails, those with a `close()` are closed before the error is thrown.
 * @internal
 */
export async function buildFromConfig(
  config: unknown,
  options: CreateAgentOptions = {},
): Promise<BuiltConfig> {
  const builder = new Builder(options);
  try {
    return { value: await builder.build(config, ''), created: builder.created };
  } catch (error) {
    await closeAll(builder.created);
    throw error;
  }
}

/** Closes every object of `objects` that has a `close()`, last made first; failures are ignored. */
export async function closeAll(objects: readonly unknown[]): Promise<void> {
  for (const object of [...objects].reverse()) {
    try {
      await (object as { close?: () => unknown }).close?.();
    } catch {
      // closing what a failed or finished build made is best effort
    }
  }
}

/**
 * Builds an agent from a config object, as Lagent builds one from `dict(type=...)`: plain JSON (a file, a
 * request) describes the agent, its model, tools, parser, hooks. Every plain object whose `type` names a class
 * (capitalized, or the class itself) is built with its other keys as options; objects with a lower-case `type`
 * (OpenAI's `{ type: 'function', ... }`) are data. Names are looked up in `registry`, then among the root
 * entry's classes, then in `lagent-ts/tools` (imported only when a name is found nowhere else, so the root entry
 * loads no tool). Mistakes are `ConfigurationError`s naming the place: `actions[1].type: unknown type "Foo"`.
 *
 * @example
 * const agent = await createAgent({
 *   type: 'AsyncFunctionCallingAgent',
 *   llm: { type: 'AsyncGPTAPI', model: 'gpt-4o-mini' },
 *   actions: [{ type: 'AsyncArxivSearch' }],
 *   template: 'You find papers.',
 * });
 * // Your own classes, by name:
 * await createAgent(JSON.parse(text), { registry: { MyTool } });
 */
export async function createAgent(
  config: ObjectConfig,
  options: CreateAgentOptions = {},
): Promise<AgentBase> {
  if (!isObjectConfig(config)) {
    fail(
      '',
      "createAgent expects an agent config: an object with a class name as type, e.g. { type: 'AsyncAgent', llm: { type: 'AsyncGPTAPI', model: 'gpt-4o-mini' } }",
    );
  }
  const { value, created } = await buildFromConfig(config, options);
  if (!(value instanceof AgentBase)) {
    await closeAll(created);
    const name = typeof config.type === 'string' ? config.type : config.type.name;
    fail('type', `${JSON.stringify(name)} is not an agent class`);
  }
  return value;
}
