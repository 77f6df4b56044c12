import {
  ActionStatusCode,
  ActionValidCode,
  FinishAction,
  getPluginPrompt,
  InvalidAction,
  NoAction,
  tool,
  toolkit,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

describe('builtin actions', () => {
  it('InvalidAction explains the unknown tool in a sentence', () => {
    const result = new InvalidAction().call({ toolName: 'serch', availableTools: ['search', 'python'] });
    expect(result).toMatchObject({
      errmsg: 'There is no tool named "serch". Available tools: search, python.',
      state: ActionStatusCode.API_ERROR,
      valid: ActionValidCode.INVALID,
      type: 'InvalidAction',
    });
    expect(new InvalidAction().call({}).errmsg).toBe('The action is invalid, please check the action name.');
    expect(new InvalidAction({ errMsg: 'custom' }).call('').errmsg).toBe('custom');
  });

  it("NoAction asks to follow the format, in Lagent's words", () => {
    expect(new NoAction().call({})).toMatchObject({
      errmsg: 'Please follow the format',
      valid: ActionValidCode.INVALID,
    });
    expect(new NoAction().call('Use the JSON format.').errmsg).toBe('Use the JSON format.');
    // Lagent's args: the message passed in, null when there was none.
    expect(new NoAction().call({}).args).toEqual({ text: null });
    expect(new NoAction().call({ errMsg: 'x' }).args).toEqual({ text: 'x' });
  });

  it('FinishAction returns the response with valid FINISH', () => {
    const result = new FinishAction().call({ response: '答案是 42' });
    expect(result).toMatchObject({ valid: ActionValidCode.FINISH, state: ActionStatusCode.SUCCESS });
    expect(result.formatResult()).toBe('答案是 42');
    expect(new FinishAction().call({}).state).toBe(ActionStatusCode.ARGS_ERROR);
  });
});

describe('getPluginPrompt', () => {
  const search = tool({
    name: 'search',
    description: 'Search the web',
    parameters: z.object({ q: z.string().describe('query') }),
    run: () => '',
  });
  const calculator = toolkit({
    name: 'Calculator',
    description: 'Arithmetic',
    apis: { add: { description: 'Add', parameters: z.object({ a: z.number() }), run: ({ a }) => a } },
  });

  it('lists simple tools and toolkit APIs (as Name.api) as 4-space JSON', () => {
    const prompt = getPluginPrompt([search, calculator]);
    expect(prompt).toContain('\n    {\n        "name": "search"');
    const parsed = JSON.parse(prompt);
    expect(parsed.map((api: { name: string }) => api.name)).toEqual(['search', 'Calculator.add']);
    expect(parsed[0].parameters).toEqual([{ name: 'q', type: 'STRING', description: 'query' }]);
  });

  it('renders toolkit API descriptions through a template without changing the tools', () => {
    const prompt = JSON.parse(
      getPluginPrompt(calculator, "This is the subfunction for tool '{tool_name}': {description}"),
    );
    expect(prompt[0].description).toBe("This is the subfunction for tool 'Calculator': Add");
    expect(calculator.description.api_list?.[0]?.description).toBe('Add');
    expect(calculator.description.api_list?.[0]?.name).toBe('add');
  });
});
