import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ActionExecutor, getPluginPrompt } from 'lagent-ts';
import {
  AsyncGoogleSearch,
  AsyncIPythonInteractive,
  AsyncIPythonInterpreter,
  AsyncWebBrowser,
  GoogleSearch,
  IPythonInteractive,
  IPythonInterpreter,
  WebBrowser,
} from 'lagent-ts/tools';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach, testOptions } from './python/helpers';

/*
 * The built-in tools with compat: 'lagent' describe themselves as Lagent's classes do — name, description,
 * parameters and Lagent's types, word for word (what Lagent's `tool_api` reads from the docstrings and
 * signatures) — and the shells give their output stripped, as Lagent's (`243`, not `243\n`).
 */

const PARAMETER_DESCRIPTION =
  'If you call this tool, you must pass arguments in the JSON format {key: value}, where the key is the parameter name.';

/** Lagent's descriptions of its classes, as `ToolMeta` builds them (checked with griffe against Lagent's source). */
const LAGENT = {
  IPythonInteractive: {
    name: 'IPythonInteractive',
    description: 'Launch an IPython Interactive Shell to execute code.',
    parameters: [
      { name: 'command', type: 'STRING', description: 'Python code snippet' },
      {
        name: 'timeout',
        type: 'NUMBER',
        description:
          'timeout for execution.\nThis argument only works in the main thread. Defaults to ``None``.',
      },
    ],
    required: ['command'],
    parameter_description: PARAMETER_DESCRIPTION,
  },
  IPythonInterpreter: {
    name: 'IPythonInterpreter',
    description:
      "When you send a message containing Python code to python, it will be executed in a stateful Jupyter notebook environment. python will respond with the output of the execution or time out after 60.0 seconds. The drive at '/mnt/data' can be used to save and persist user files. Internet access for this session is disabled. Do not make external web requests or API calls as they will fail.",
    parameters: [
      { name: 'command', type: 'STRING', description: 'Python code' },
      {
        name: 'timeout',
        type: 'NUMBER',
        description: 'Upper bound of waiting time for Python script execution.',
      },
    ],
    required: ['command'],
    parameter_description: PARAMETER_DESCRIPTION,
  },
  WebBrowser: {
    name: 'WebBrowser',
    description: 'Wrapper around the Web Browser Tool.',
    api_list: [
      {
        name: 'search',
        description: 'BING search API',
        parameters: [{ name: 'query', type: 'STRING', description: 'list of search query strings' }],
        required: ['query'],
        parameter_description: PARAMETER_DESCRIPTION,
      },
      {
        name: 'select',
        description: 'get the detailed content on the selected pages.',
        parameters: [
          {
            name: 'select_ids',
            type: 'NUMBER',
            description: 'list of index to select. Max number of index to be selected is no more than 4.',
          },
        ],
        required: ['select_ids'],
        parameter_description: PARAMETER_DESCRIPTION,
      },
      {
        name: 'open_url',
        description: '',
        parameters: [{ name: 'url', type: 'STRING', description: '' }],
        required: ['url'],
        parameter_description: PARAMETER_DESCRIPTION,
      },
    ],
  },
  GoogleSearch: {
    name: 'GoogleSearch',
    description:
      '一个可以从谷歌搜索结果的API。当你需要对于一个特定问题找到简短明了的回答时，可以使用它。输入应该是一个搜索查询。',
    parameters: [
      { name: 'query', type: 'STRING', description: 'the search content' },
      { name: 'k', type: 'NUMBER', description: 'select first k results in the search results as response' },
    ],
    required: ['query'],
    parameter_description: PARAMETER_DESCRIPTION,
  },
};

const { closing } = cleanupAfterEach();

describe("the built-in tools with compat: 'lagent'", () => {
  it("describe themselves in Lagent's words, sync and async (the async ones named as Lagent's async classes)", () => {
    const python = { ...testOptions(), compat: 'lagent' as const };
    expect(closing(new IPythonInteractive(python)).description).toEqual(LAGENT.IPythonInteractive);
    expect(closing(new AsyncIPythonInteractive(python)).description).toEqual({
      ...LAGENT.IPythonInteractive,
      name: 'AsyncIPythonInteractive',
    });
    expect(closing(new IPythonInterpreter(python)).description).toEqual(LAGENT.IPythonInterpreter);
    const jupyter = LAGENT.IPythonInterpreter;
    expect(closing(new AsyncIPythonInterpreter(python)).description).toEqual({
      ...jupyter,
      name: 'AsyncIPythonInterpreter',
      parameters: [...jupyter.parameters, { name: 'session_id', type: 'STRING', description: '' }],
    });
    expect(closing(new WebBrowser({ compat: 'lagent' })).description).toEqual(LAGENT.WebBrowser);
    expect(closing(new AsyncWebBrowser({ compat: 'lagent' })).description).toEqual({
      ...LAGENT.WebBrowser,
      name: 'AsyncWebBrowser',
    });
    const key = { apiKey: 'k', compat: 'lagent' as const };
    expect(closing(new GoogleSearch(key)).description).toEqual(LAGENT.GoogleSearch);
    expect(new AsyncGoogleSearch(key).description).toEqual({
      ...LAGENT.GoogleSearch,
      name: 'AsyncGoogleSearch',
    });
  });

  it('without compat they keep their own words', () => {
    expect(closing(new IPythonInteractive(testOptions())).description.description).not.toBe(
      LAGENT.IPythonInteractive.description,
    );
    expect(closing(new AsyncWebBrowser()).description.description).not.toBe(LAGENT.WebBrowser.description);
    expect(() => new AsyncWebBrowser({ compat: 'python' as unknown as 'lagent' })).toThrow(
      /compat must be 'lagent'/,
    );
  });

  it("a plugin prompt listing them is Lagent's (its toolkit APIs as Name.api)", () => {
    const prompt = JSON.parse(
      getPluginPrompt([
        closing(new WebBrowser({ compat: 'lagent' })),
        closing(new GoogleSearch({ apiKey: 'k', compat: 'lagent' })),
      ]),
    );
    expect(prompt.map((api: { name: string }) => api.name)).toEqual([
      'WebBrowser.search',
      'WebBrowser.select',
      'WebBrowser.open_url',
      'GoogleSearch',
    ]);
    expect(prompt[1].parameters[0].type).toBe('NUMBER');
  });

  it("the shells give their output stripped, as Lagent's do; the arguments Lagent lists are taken", async () => {
    const lagent = closing(new AsyncIPythonInteractive(testOptions({ ipython: false, compat: 'lagent' })));
    const result = await lagent.call({ command: 'print(3 ** 5)', timeout: 20 });
    expect(result.errmsg).toBeNull();
    expect(result.formatResult()).toBe('243');
    const own = closing(new AsyncIPythonInteractive(testOptions({ ipython: false })));
    expect((await own.call({ command: 'print(3 ** 5)' })).formatResult()).toBe('243\n');
    const jupyter = closing(new AsyncIPythonInterpreter(testOptions({ ipython: false, compat: 'lagent' })));
    const value = await jupyter.call({ command: '3 ** 5', session_id: 'x' });
    expect(value.formatResult()).toBe('243');
  });

  it('the sync twin too: an executor lists it as Lagent does and it answers stripped', () => {
    const tool = closing(new IPythonInteractive({ ...testOptions({ ipython: false }), compat: 'lagent' }));
    const executor = new ActionExecutor({ actions: [tool] });
    expect(executor.description()).toEqual([LAGENT.IPythonInteractive]);
    expect(tool.call({ command: 'print(6 * 7)', timeout: 5 }).formatResult()).toBe('42');
  });
});

// Where Lagent's source is, the texts above are its own (a guard against drift when Lagent changes).
const SOURCE = process.env.LAGENT_SOURCE ?? '/work/.mirror/InternLM+lagent/repo';
describe.skipIf(!existsSync(SOURCE))("Lagent's source", () => {
  const read = (path: string) =>
    existsSync(`${SOURCE}/${path}`)
      ? execFileSync('cat', [`${SOURCE}/${path}`], { encoding: 'utf8' })
      : execFileSync('git', [`--git-dir=${SOURCE}`, 'show', `HEAD:${path}`], { encoding: 'utf8' });

  it('has these descriptions in its docstrings', () => {
    const interactive = read('lagent/actions/ipython_interactive.py');
    expect(interactive).toContain(`"""${LAGENT.IPythonInteractive.description}`);
    expect(interactive).toContain('command (:class:`str`): Python code snippet');
    expect(read('lagent/actions/ipython_interpreter.py')).toContain(
      `r"""${LAGENT.IPythonInterpreter.description}`,
    );
    const browser = read('lagent/actions/web_browser.py');
    for (const api of LAGENT.WebBrowser.api_list.slice(0, 2))
      expect(browser).toContain(`"""${api.description}`);
    expect(browser).toContain(`"""${LAGENT.WebBrowser.description}"""`);
    const google = read('lagent/actions/google_search.py');
    expect(google).toContain(`"""${LAGENT.GoogleSearch.description}`);
    expect(google).toContain('def run(self, query: str, k: int = 10) -> ActionReturn:');
  });
});
