import type { z } from 'zod';
import { AsyncBaseAction, BaseAction } from './base-action';
import type { ToolContext } from './types';

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
}

/** One API of {@link toolkit} / {@link asyncToolkit}. */
export interface ToolkitApi<S extends z.ZodObject, R> {
  description?: string | undefined;
  parameters?: S | undefined;
  run: (args: z.output<S>, context: ToolContext) => R;
  fromText?: (text: string) => Record<string, unknown>;
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
export function tool<S extends z.ZodObject, R>(options: ToolOptions<S, R> & NotAsync<R>): BaseAction {
  return new BaseAction({ name: options.name, description: options.description, apis: { run: options } });
}

/**
 * An asynchronous tool; `run` may return a promise and gets `context.signal`.
 *
 * @example
 * const wait = asyncTool({ name: 'wait', parameters: z.object({ ms: z.number() }),
 *   run: ({ ms }, { signal }) => new Promise((resolve) => setTimeout(resolve, ms, 'done')) });
 */
export function asyncTool<S extends z.ZodObject, R>(options: ToolOptions<S, R>): AsyncBaseAction {
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
export function toolkit<A extends Record<string, z.ZodObject>>(options: ToolkitOptions<A>): BaseAction {
  return new BaseAction(options as never);
}

/** An asynchronous toolkit: like {@link toolkit}, with APIs that may be async. */
export function asyncToolkit<A extends Record<string, z.ZodObject>>(
  options: ToolkitOptions<A>,
): AsyncBaseAction {
  return new AsyncBaseAction(options as never);
}
