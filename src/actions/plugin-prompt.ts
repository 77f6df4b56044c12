import { compileTemplate, renderTemplate } from '../prompts/template-text';
import type { ActionBase } from './base-action';
import { copyDescription } from './describe';
import type { ApiDescription } from './types';

/**
 * The tools' descriptions as the JSON list Lagent puts in a plugin prompt (4-space indented, non-ASCII
 * kept): a simple tool as its description, each toolkit API as its own entry named `Name.api` whose
 * description is rendered through `apiDescriptionTemplate` (placeholders `{tool_name}` / `{toolName}` and
 * `{description}`). Nothing is mutated.
 *
 * @example
 * const prompt = new PromptTemplate('You can use these tools:\n{prompt}').format({ prompt: getPluginPrompt([calculator, search]) });
 */
export function getPluginPrompt(
  actions: ActionBase | readonly ActionBase[],
  apiDescriptionTemplate = '{description}',
): string {
  const compiled = compileTemplate(apiDescriptionTemplate, 'json', 'getPluginPrompt');
  const list: ApiDescription[] = [];
  for (const action of Array.isArray(actions) ? actions : [actions as ActionBase]) {
    if (!action.isToolkit) {
      list.push(copyDescription(action.description) as ApiDescription);
      continue;
    }
    for (const api of action.description.api_list ?? []) {
      const description = renderTemplate(
        compiled,
        { tool_name: action.name, toolName: action.name, description: api.description },
        'getPluginPrompt',
      );
      list.push({ ...copyDescription(api), name: `${action.name}.${api.name}`, description });
    }
  }
  return JSON.stringify(list, null, 4);
}
