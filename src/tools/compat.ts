import type { ActionBase } from '../actions/base-action';
import { deepFreeze, JSON_PARAMETER_DESCRIPTION } from '../actions/describe';
import type { ActionDescription, ApiDescription } from '../actions/types';
import { ConfigurationError } from '../schema/errors';

/**
 * A built-in tool's compatibility mode (the `compat` option of the prebuilt agents, for tools): `'lagent'`
 * makes the tool describe itself as Python Lagent's class of the same name does — its name, description,
 * parameters and their Lagent types, word for word — so a prompt listing it (a plugin prompt, ReAct's tool
 * list) is Lagent's byte for byte, and reads its output as Lagent's does where that differs only in form
 * (the interpreters' surrounding whitespace).
 */
export type ToolCompatMode = 'lagent';

/** Checks a tool's `compat` option: true for `'lagent'`, false when left out, else a `ConfigurationError`. */
export function checkToolCompat(owner: string, compat: unknown): compat is ToolCompatMode {
  if (compat === undefined) return false;
  if (compat !== 'lagent') {
    throw new ConfigurationError({
      message: `${owner}: compat must be 'lagent' or left out, got ${JSON.stringify(compat) ?? String(compat)}`,
    });
  }
  return true;
}

/**
 * Gives a toolkit Lagent's description of the class it ports, word for word (`compat: 'lagent'`), where the
 * description derived from its zod schemas would differ in words or in Lagent's parameter types. Each API
 * gets Lagent's parser's `parameter_description`, as in Lagent.
 */
export function describeToolkitAsLagent(
  action: ActionBase,
  description: string,
  apis: readonly Omit<ApiDescription, 'parameter_description'>[],
): void {
  const lagent: ActionDescription = {
    name: action.name,
    description,
    api_list: apis.map((api) => ({ ...api, parameter_description: JSON_PARAMETER_DESCRIPTION })),
  };
  Object.defineProperty(action, 'description', {
    value: deepFreeze(lagent),
    enumerable: true,
    writable: false,
    configurable: false,
  });
}
