import type { z } from 'zod';
import type { ActionReturn } from '../schema/action-return';
import { AsyncBaseAction, BaseAction } from './base-action';
import type {
  ActionCallOptions,
  ApprovalRule,
  AsyncActionCallOptions,
  ToolApiSpec,
  ToolContext,
} from './types';

/**
 * A tool made by {@link tool}: a `BaseAction` whose `call` takes the schema's input (or its JSON text, as a
 * model writes it). What the model sends is still checked against the schema when it runs.
 */
export interface Tool<S extends z.ZodObject = z.ZodObject> extends BaseAction {
  call(parameters: z.input<S> | string, api?: 'run', options?: ActionCallOptions): ActionReturn;
}

/** A tool made by {@link asyncTool}: as {@link Tool}, and `call` resolves to the result. */
export interface AsyncTool<S extends z.ZodObject = z.ZodObject> extends AsyncBaseAction {
  call(parameters: z.input<S> | string, api?: 'run', options?: AsyncActionCallOptions): Promise<ActionReturn>;
}

/** A toolkit made by {@link toolkit}: `call` takes an API's name and that API's input (or its JSON text). */
export interface Toolkit<A extends Record<string, z.ZodObject> = Record<string, z.ZodObject>>
  extends BaseAction {
  call<K extends keyof A & string>(
    parameters: z.input<A[K]> | string,
    api: K,
    options?: ActionCallOptions,
  ): ActionReturn;
}

/** A toolkit made by {@link asyncToolkit}: as {@link Toolkit}, and `call` resolves to the result. */
export interface AsyncToolkit<A extends Record<string, z.ZodObject> = Record<string, z.ZodObject>>
  extends AsyncBaseAction {
  call<K extends keyof A & string>(
    parameters: z.input<A[K]> | string,
    api: K,
    options?: AsyncActionCallOptions,
  ): Promise<ActionReturn>;
}

/** Options of {@link tool} / {@link asyncTool}. */
export interface ToolOptions<S extends z.ZodObject, R> {
  name: string;
  /** What the tool does, for the model. */
  description?: string | undefined;
  /** The arguments as a zod object (field `.describe()` texts reach the model). @default z.object({}) */
  parameters?: S | undefined;
  run: (args: z.output<S>, context: ToolContext) => R;
  /** Maps plain (non-JSON) text to arguments, for tools that take free text. */
  fromText?: (text: string) => Record<string, unknown>;
  /** Whether a call must be approved by a person first (see {@link ToolApiSpec.needsApproval}). @default false */
  needsApproval?: ApprovalRule<z.output<S>> | undefined;
  /** Whether running a call twice is harmless (see {@link ToolApiSpec.retrySafe}). @default false */
  retrySafe?: boolean | undefined;
}

/** One API of {@link toolkit} / {@link asyncToolkit}. */
export interface ToolkitApi<S extends z.ZodObject, R> {
  description?: string | undefined;
  parameters?: S | undefined;
  run: (args: z.output<S>, context: ToolContext) => R;
  fromText?: (text: string) => Record<string, unknown>;
  needsApproval?: ApprovalRule<z.output<S>> | undefined;
  retrySafe?: boolean | undefined;
}

/** Options of {@link toolkit} / {@link asyncToolkit}; `A` maps each API name to its schema. */
export interface ToolkitOptions<A extends Record<string, z.ZodObject>> {
  name: string;
  description?: string | undefined;
  apis: { [K in keyof A]: ToolkitApi<A[K], unknown> };
}

/**
 * Refuses, at compile time, a `run` that returns (or may return) a promise where a synchronous tool is
 * wanted. A `run` typed `any` or `unknown` is accepted (its promises are caught when it runs), and so is
 * one whose type could not be inferred, so that a typo elsewhere is not reported as this.
 */
type NotAsync<R> = 0 extends 1 & R
  ? unknown
  : [Extract<R, PromiseLike<unknown>>] extends [never]
    ? unknown
    : { run: 'a sync tool cannot return a Promise; use asyncTool()' };

/**
 * A synchronous tool from a zod schema and a function.
 *
 * @example
 * const weather = tool({
 *   name: 'weather', description: 'Current weather of a city',
 *   parameters: z.object({ city: z.string().describe('City name') }),
 *   run: ({ city }) => `${city}: sunny`,
 * });
 * weather.call('{"city": "Paris"}').formatResult(); // 'Paris: sunny'
 */
export function tool<S extends z.ZodObject, R>(options: ToolOptions<S, R> & NotAsync<R>): Tool<S> {
  return new BaseAction({ name: options.name, description: options.description, apis: { run: options } });
}

/**
 * An asynchronous tool; `run` may return a promise and gets `context.signal`.
 *
 * @example
 * const wait = asyncTool({ name: 'wait', parameters: z.object({ ms: z.number() }),
 *   run: ({ ms }, { signal }) => new Promise((resolve) => setTimeout(resolve, ms, 'done')) });
 */
export function asyncTool<S extends z.ZodObject, R>(options: ToolOptions<S, R>): AsyncTool<S> {
  return new AsyncBaseAction({
    name: options.name,
    description: options.description,
    apis: { run: options },
  });
}

/**
 * A synchronous toolkit: several APIs under one name, called as `Name.api`.
 *
 * @example
 * const calculator = toolkit({
 *   name: 'Calculator', description: 'Arithmetic',
 *   apis: {
 *     add: { description: 'a + b', parameters: z.object({ a: z.number(), b: z.number() }), run: ({ a, b }) => a + b },
 *     neg: { description: '-x', parameters: z.object({ x: z.number() }), run: ({ x }) => -x },
 *   },
 * });
 * new ActionExecutor({ actions: [calculator] }).forward('Calculator.add', { a: 1, b: 2 }).formatResult(); // '3'
 */
export function toolkit<A extends Record<string, z.ZodObject>>(options: ToolkitOptions<A>): Toolkit<A> {
  return new BaseAction(options as never) as Toolkit<A>;
}

/** An asynchronous toolkit: like {@link toolkit}, with APIs that may be async. */
export function asyncToolkit<A extends Record<string, z.ZodObject>>(
  options: ToolkitOptions<A>,
): AsyncToolkit<A> {
  return new AsyncBaseAction(options as never) as AsyncToolkit<A>;
}
