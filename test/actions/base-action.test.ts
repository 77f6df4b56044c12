import {
  ActionReturn,
  ActionStatusCode,
  ActionValidCode,
  AsyncBaseAction,
  asyncTool,
  BaseAction,
  ConfigurationError,
  tool,
  toolkit,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const weather = tool({
  name: 'weather',
  description: 'Current weather of a city',
  parameters: z.object({
    city: z.string().describe('City name'),
    days: z.number().int().default(1).describe('How many days'),
    hourly: z.boolean().optional(),
    temperature: z.number().optional(),
    tags: z.array(z.string()).optional(),
    options: z.object({ unit: z.string() }).optional(),
  }),
  run: ({ city, days }) => `${city}: sunny for ${days} day(s)`,
});
/** The same tool as an executor sees it: any arguments compile, as a model may send anything. */
const anyArgs: BaseAction = weather;

describe('tool()', () => {
  it("describes itself in Lagent's shape, types from the zod schema", () => {
    expect(weather.name).toBe('weather');
    expect(weather.isToolkit).toBe(false);
    expect(weather.description).toEqual({
      name: 'weather',
      description: 'Current weather of a city',
      parameters: [
        { name: 'city', type: 'STRING', description: 'City name' },
        { name: 'days', type: 'NUMBER', description: 'How many days' },
        { name: 'hourly', type: 'BOOLEAN', description: '' },
        { name: 'temperature', type: 'FLOAT', description: '' },
        { name: 'tags', type: 'Array', description: '' },
        { name: 'options', type: 'Object', description: '' },
      ],
      required: ['city'],
      parameter_description: expect.stringContaining('JSON format'),
    });
  });

  it('freezes its description', () => {
    expect(Object.isFrozen(weather.description)).toBe(true);
    expect(Object.isFrozen(weather.description.parameters)).toBe(true);
  });

  it("gives OpenAI function tools with zod's JSON Schema", () => {
    const [openAI] = weather.toOpenAITools();
    expect(openAI).toMatchObject({
      type: 'function',
      function: { name: 'weather', description: 'Current weather of a city' },
    });
    expect(openAI!.function.parameters).toMatchObject({
      type: 'object',
      properties: {
        city: { type: 'string', description: 'City name' },
        days: { type: 'integer', default: 1 },
      },
      required: ['city'],
      additionalProperties: false,
    });
    // A copy: changing it does not change the next one.
    openAI!.function.name = 'changed';
    expect(weather.toOpenAITools()[0]!.function.name).toBe('weather');
  });

  it('runs with object arguments, JSON strings and fenced JSON', () => {
    expect(weather.call({ city: 'Paris' }).formatResult()).toBe('Paris: sunny for 1 day(s)');
    expect(weather.call('{"city": "Rome", "days": 2}').formatResult()).toBe('Rome: sunny for 2 day(s)');
    const fenced = weather.call('```json\n{"city": "Oslo"}\n```');
    expect(fenced.state).toBe(ActionStatusCode.SUCCESS);
    // args is what the model sent; the tool ran with the default filled in.
    expect(fenced.args).toEqual({ city: 'Oslo' });
    expect(fenced.formatResult()).toBe('Oslo: sunny for 1 day(s)');
    expect(fenced.type).toBe('weather');
  });

  it('gives ARGS_ERROR naming a missing, invalid or unknown field', () => {
    const missing = anyArgs.call({});
    expect(missing.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(missing.errmsg).toContain('missing required argument "city"');
    const wrong = anyArgs.call({ city: 'Paris', days: 'two' });
    expect(wrong.errmsg).toContain('argument "days": expected number, received string');
    const unknown = anyArgs.call({ city: 'Paris', country: 'FR' });
    expect(unknown.errmsg).toContain('unknown argument "country"');
    expect(unknown.errmsg).toContain('It takes city: string, days?: integer');
  });

  it('gives ARGS_ERROR for text that is not a JSON object', () => {
    expect(weather.call('Paris').errmsg).toMatch(/must be a JSON object, but "Paris" is not valid JSON/);
    expect(weather.call('[1, 2]').errmsg).toMatch(/must be a JSON object, got an array/);
    // Lagent's shape on a validation failure: the raw inputs and the API name.
    expect(weather.call('Paris').args).toEqual({ inputs: 'Paris', name: 'run' });
    expect(anyArgs.call({ city: 3 }).args).toEqual({ inputs: { city: 3 }, name: 'run' });
  });

  it('maps free text with fromText', () => {
    const echo = tool({
      name: 'echo',
      parameters: z.object({ text: z.string() }),
      fromText: (text) => ({ text }),
      run: ({ text }) => text,
    });
    expect(echo.call('plain words').formatResult()).toBe('plain words');
  });

  it('gives API_ERROR with the message when the tool throws', () => {
    const broken = tool({
      name: 'broken',
      run: () => {
        throw new Error('disk full');
      },
    });
    const result = broken.call({});
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toBe('disk full');
    const throwsString = tool({
      name: 'strange',
      run: () => {
        throw 'plain string';
      },
    });
    expect(throwsString.call({}).errmsg).toBe('plain string');
  });

  it('gives API_ERROR "invalid API" for an unknown API', () => {
    const result = anyArgs.call({ city: 'x' }, 'forecast');
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toMatch(/^invalid API/);
    expect(result.errmsg).toContain('"forecast"');
  });

  it('keeps every character of results (emoji, CJK, rare scripts)', () => {
    const text = '数学 🚀 典孝急 𠜎 Ελληνικά \u{1F9D1}\u200D\u{1F4BB}';
    const echo = tool({ name: 'echo', run: () => text });
    expect(echo.call({}).formatResult()).toBe(text);
    const json = tool({ name: 'json', run: () => ({ answer: text, n: 1 }) });
    expect(JSON.parse(json.call({}).formatResult())).toEqual({ answer: text, n: 1 });
  });

  it('turns results into text items; keeps returned ActionReturns and item lists', () => {
    expect(tool({ name: 'n', run: () => 42 }).call({}).result).toEqual([{ type: 'text', content: '42' }]);
    expect(tool({ name: 'u', run: () => undefined }).call({}).result).toEqual([
      { type: 'text', content: '' },
    ]);
    expect(
      tool({ name: 'big', run: () => ({ n: 2n ** 70n }) })
        .call({})
        .formatResult(),
    ).toBe('{"n":1180591620717411303424}');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(tool({ name: 'cyclic', run: () => cyclic }).call({}).state).toBe(ActionStatusCode.SUCCESS);
    const image = tool({ name: 'img', run: () => [{ type: 'image', content: '/tmp/a.png' }] });
    expect(image.call({}).formatResult()).toBe('[image](/tmp/a.png)');
    const custom = tool({
      name: 'custom',
      parameters: z.object({ q: z.string() }),
      run: () =>
        new ActionReturn({ result: [{ type: 'text', content: 'ok' }], valid: ActionValidCode.FINISH }),
    });
    const result = custom.call({ q: 'x' });
    expect(result).toMatchObject({ args: { q: 'x' }, type: 'custom', valid: ActionValidCode.FINISH });
  });

  it('passes the session to run', () => {
    const who = tool({ name: 'who', run: (_args, context) => `session ${context.sessionId}` });
    expect(who.call({}, 'run', { sessionId: 'alice' }).formatResult()).toBe('session alice');
    expect(who.call({}).formatResult()).toBe('session 0');
  });

  it('reports a sync tool that returns a promise as API_ERROR, not a crash', () => {
    const sneaky = new BaseAction({ name: 'sneaky', apis: { run: { run: async () => 'late' } } });
    const result = sneaky.call({});
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toMatch(/returned a Promise/);
  });

  it('refuses bad declarations', () => {
    expect(() => tool({ name: 'a.b', run: () => 1 })).toThrow(ConfigurationError);
    expect(() => tool({ name: 'x', parameters: z.string() as never, run: () => 1 })).toThrow(/zod object/);
    expect(() => new BaseAction({ name: 'empty', apis: {} })).toThrow(/declares no APIs/);
    expect(
      () => new BaseAction({ name: 'mixed', apis: { run: { run: () => 1 }, other: { run: () => 2 } } }),
    ).toThrow(/cannot be declared together/);
  });

  it('respects a loose schema on purpose', () => {
    const loose = tool({ name: 'loose', parameters: z.looseObject({ a: z.string() }), run: (args) => args });
    expect(loose.call({ a: 'x', extra: 1 }).state).toBe(ActionStatusCode.SUCCESS);
  });
});

describe('toolkit()', () => {
  const calculator = toolkit({
    name: 'Calculator',
    description: 'Arithmetic',
    apis: {
      add: {
        description: 'Add two numbers',
        parameters: z.object({ a: z.number(), b: z.number() }),
        run: ({ a, b }) => a + b,
      },
      negate: { description: 'Negate', parameters: z.object({ x: z.number() }), run: ({ x }) => -x },
    },
  });

  it('describes its APIs in api_list', () => {
    expect(calculator.isToolkit).toBe(true);
    expect(calculator.description.name).toBe('Calculator');
    expect(calculator.description.api_list?.map((api) => api.name)).toEqual(['add', 'negate']);
    expect(calculator.description.api_list?.[0]?.required).toEqual(['a', 'b']);
    expect(calculator.toOpenAITools().map((t) => t.function.name)).toEqual([
      'Calculator__add',
      'Calculator__negate',
    ]);
    expect(calculator.toOpenAITools({ separator: '.' })[0]!.function.name).toBe('Calculator.add');
  });

  it('runs an API by name', () => {
    expect(calculator.call({ a: 1, b: 2 }, 'add').formatResult()).toBe('3');
    expect(calculator.call({ x: 4 }, 'negate').formatResult()).toBe('-4');
    expect((calculator as BaseAction).call({}, 'run').errmsg).toMatch(/invalid API/);
  });
});

describe('class-based actions', () => {
  class Calculator extends BaseAction {
    static override toolApis = {
      add: { description: 'Add', parameters: z.object({ a: z.number(), b: z.number() }) },
      scale: { description: 'Scale by the factor', parameters: z.object({ x: z.number() }) },
    };
    constructor(readonly factor = 10) {
      super({ description: 'A calculator' });
    }
    add({ a, b }: { a: number; b: number }) {
      return a + b;
    }
    scale({ x }: { x: number }) {
      return x * this.factor;
    }
  }

  class Bold extends BaseAction {
    static override toolApis = {
      run: { description: 'Make text bold', parameters: z.object({ text: z.string() }) },
    };
    run({ text }: { text: string }) {
      return `**${text}**`;
    }
  }

  it('uses methods as APIs, with the instance as this', () => {
    const calculator = new Calculator(3);
    expect(calculator.name).toBe('Calculator');
    expect(calculator.isToolkit).toBe(true);
    expect(calculator.description.description).toBe('A calculator');
    expect(calculator.call({ x: 2 }, 'scale').formatResult()).toBe('6');
  });

  it('a single run method makes a simple tool', () => {
    const bold = new Bold();
    expect(bold.isToolkit).toBe(false);
    expect(bold.description).toMatchObject({
      name: 'Bold',
      description: 'Make text bold',
      required: ['text'],
    });
    expect(bold.call({ text: 'hi' }).formatResult()).toBe('**hi**');
  });

  it('refuses a declared API without a method', () => {
    class Broken extends BaseAction {
      static override toolApis = { missing: { parameters: z.object({}) } };
    }
    expect(() => new Broken()).toThrow(/no method of that name/);
  });
});

describe('asyncTool()', () => {
  it('awaits the tool and maps rejections to API_ERROR', async () => {
    const slow = asyncTool({
      name: 'slow',
      parameters: z.object({ x: z.number() }),
      run: async ({ x }) => x * 2,
    });
    expect(slow).toBeInstanceOf(AsyncBaseAction);
    expect((await slow.call({ x: 21 })).formatResult()).toBe('42');
    const failing = asyncTool({
      name: 'failing',
      run: async () => {
        throw new Error('network down');
      },
    });
    const result = await failing.call({});
    expect(result).toMatchObject({ state: ActionStatusCode.API_ERROR, errmsg: 'network down' });
  });

  it('gives up after timeoutMs with an API_ERROR and aborts the tool', async () => {
    let aborted = false;
    const hang = asyncTool({
      name: 'hang',
      run: (_args, { signal }) =>
        new Promise((resolve) => {
          signal?.addEventListener('abort', () => {
            aborted = true;
            resolve('stopped');
          });
        }),
    });
    const result = await hang.call({}, 'run', { timeoutMs: 20 });
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toBe('hang timed out after 20 ms');
    expect(aborted).toBe(true);
  });

  it('rejects (never throws synchronously) on an invalid timeout', async () => {
    const quick = asyncTool({ name: 'quick', run: async () => 1 });
    const pending = quick.call({}, 'run', { timeoutMs: 0 });
    await expect(pending).rejects.toThrow(/timeoutMs must be a positive number/);
  });

  it("rejects with the caller's abort reason", async () => {
    const controller = new AbortController();
    const hang = asyncTool({ name: 'hang', run: () => new Promise(() => {}) });
    const pending = hang.call({}, 'run', { signal: controller.signal });
    controller.abort(new Error('user cancelled'));
    await expect(pending).rejects.toThrow('user cancelled');
    await expect(hang.call({}, 'run', { signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow(
      'already',
    );
  });
});
