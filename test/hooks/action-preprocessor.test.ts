import {
  ActionExecutor,
  ActionPreprocessor,
  ActionReturn,
  ActionStatusCode,
  AgentMessage,
  AsyncActionExecutor,
  asyncTool,
  InternLMActionProcessor,
  InterpreterParser,
  MixedToolParser,
  PluginParser,
  ToolParser,
  ToolStatusCode,
  tool,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const python = tool({
  name: 'IPythonInteractive',
  description: 'Runs Python',
  parameters: z.object({ command: z.string() }),
  run: ({ command }) => `ran: ${command}`,
});
const search = tool({
  name: 'search',
  parameters: z.object({ query: z.string() }),
  run: ({ query }) => `found ${query}`,
});

const fromAgent = (formatted: unknown, content = 'model text') =>
  new AgentMessage({ sender: 'Agent', content, formatted });

describe('ActionPreprocessor', () => {
  const executor = () => new ActionExecutor({ actions: [search], hooks: [new ActionPreprocessor()] });

  it('calls the tool named in a FunctionCall-like formatted and returns the result as text', () => {
    const reply = executor().call(fromAgent({ name: 'search', parameters: { query: 'lagent' } }));
    expect(reply.content).toBe('found lagent');
    expect(reply.sender).toBe('ActionExecutor');
  });

  it("runs Lagent's ReAct shape: { thought_process, action: { name, parameters } }, as Lagent's does", async () => {
    const steps = Array.from({ length: 11 }, (_, i) => ({
      thought_process: `step ${i}: look it up`,
      action: { name: 'search', parameters: { query: `q${i}` } },
    }));
    for (const [i, step] of steps.entries()) {
      expect(executor().call(fromAgent(step, JSON.stringify(step))).content).toBe(`found q${i}`);
    }
    const asyncExecutor = new AsyncActionExecutor({ actions: [search], hooks: [new ActionPreprocessor()] });
    expect((await asyncExecutor.call(fromAgent(steps[0]))).content).toBe('found q0');
    // A step whose action is not a call still goes to NoAction with a sentence.
    const noCall = executor().call(fromAgent({ thought_process: 'hm', action: { parameters: {} } }));
    expect(String(noCall.content)).toMatch(/No tool call was found/);
  });

  it("reads a plugin parser's parsed action", () => {
    const parsed = new PluginParser().parseResponse(
      'Look it up.<|action_start|><|plugin|>\n{"name": "search", "parameters": {"query": "数学"}}<|action_end|>\n',
    );
    expect(executor().call(fromAgent(parsed)).content).toBe('found 数学');
  });

  it('returns the error message as text on failure', () => {
    expect(executor().call(fromAgent({ name: 'search', parameters: {} })).content).toContain(
      'missing required argument "query"',
    );
    expect(executor().call(fromAgent({ name: 'browse', parameters: {} })).content).toBe(
      'There is no tool named "browse". Available tools: search.',
    );
  });

  it('routes unusable output to NoAction with a sentence instead of throwing', () => {
    const broken = new PluginParser().parseResponse(
      '<|action_start|><|plugin|>\nsearch(lagent)<|action_end|>\n',
    );
    expect(broken.status).toBe(ToolStatusCode.PARSING_ERROR);
    expect(executor().call(fromAgent(broken)).content).toBe(
      'The plugin call could not be parsed: search(lagent). Please follow the format.',
    );
    const noTool = new PluginParser().parseResponse('just an answer');
    expect(executor().call(fromAgent(noTool)).content).toBe('Please follow the format');
    expect(executor().call(fromAgent(null, 'hello')).content).toMatch(/No tool call was found/);
    const stringAction = {
      toolType: 'plugin',
      thought: '',
      action: 'search it',
      status: ToolStatusCode.VALID_TOOL,
    };
    expect(executor().call(fromAgent(stringAction)).content).toMatch(/must be a JSON object/);
  });

  it('leaves a message whose content is already a call alone, and never modifies the given message', () => {
    const message = new AgentMessage({
      sender: 'Agent',
      content: { name: 'search', parameters: { query: 'q' } },
    });
    expect(executor().call(message).content).toBe('found q');
    const formatted = { name: 'search', parameters: { query: 'x' } };
    const original = fromAgent(formatted);
    executor().call(original);
    expect(original.content).toBe('model text');
    expect(original.formatted).toEqual({ name: 'search', parameters: { query: 'x' } });
  });

  it('leaves non-ActionReturn content alone after the call', () => {
    const hook = new ActionPreprocessor();
    const message = new AgentMessage({ sender: 'ActionExecutor', content: 'already text' });
    expect(hook.afterAction(executor(), message, 0).content).toBe('already text');
    const failed = new ActionReturn({ state: ActionStatusCode.HTTP_ERROR });
    expect(hook.afterAction(executor(), new AgentMessage({ content: failed }), 0).content).toBe(
      'The tool call failed (state -1000).',
    );
  });
});

describe('ActionPreprocessor text', () => {
  it('quotes a malformed action in Python json.dumps form, and uses ActionReturn.toText after the call', () => {
    const executor = new ActionExecutor({ actions: [search], hooks: [new ActionPreprocessor()] });
    const parsed = {
      toolType: 'plugin',
      thought: '',
      action: ['搜索', 1],
      status: ToolStatusCode.VALID_TOOL,
    };
    expect(executor.call(fromAgent(parsed)).content).toBe(
      'The plugin call must be a JSON object {"name": ..., "parameters": ...}, got "[\\"搜索\\", 1]". Please follow the format.',
    );
    const streaming = new ActionReturn({
      state: ActionStatusCode.ING,
      result: [{ type: 'text', content: 'so far' }],
    });
    const after = new ActionPreprocessor().afterAction(executor, new AgentMessage({ content: streaming }), 0);
    expect(after.content).toBe('so far');
  });
});

describe('InternLMActionProcessor', () => {
  it('wraps code from ToolParser output as the first tool’s command', () => {
    const parser = new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' });
    const executor = new ActionExecutor({
      actions: [python, search],
      hooks: [new InternLMActionProcessor()],
    });
    const reply = executor.call(fromAgent(parser.parseResponse('Compute.\n```python\nprint(63 * 63)')));
    expect(reply.content).toBe('ran: print(63 * 63)');
  });

  it('handles MixedToolParser output: plugin calls by name, interpreter code by the first tool', () => {
    const parser = new MixedToolParser({ parsers: [new PluginParser(), new InterpreterParser()] });
    const plugins = new ActionExecutor({ actions: [search], hooks: [new InternLMActionProcessor()] });
    const interpreter = new ActionExecutor({ actions: [python], hooks: [new InternLMActionProcessor()] });
    const pluginCall = parser.parseResponse(
      '<|action_start|><|plugin|>\n{"name": "search", "parameters": {"query": "x"}}<|action_end|>\n',
    );
    expect(plugins.call(fromAgent(pluginCall)).content).toBe('found x');
    const code = parser.parseResponse('<|action_start|><|interpreter|>\n1 + 1<|action_end|>\n');
    expect(interpreter.call(fromAgent(code)).content).toBe('ran: 1 + 1');
  });

  it('uses a custom code parameter and works with async executors', async () => {
    const runner = asyncTool({
      name: 'Runner',
      parameters: z.object({ code: z.string() }),
      run: async ({ code }) => `async ${code}`,
    });
    const executor = new AsyncActionExecutor({
      actions: [runner],
      hooks: [new InternLMActionProcessor({ codeParameter: 'code' })],
    });
    const parsed = new InterpreterParser().parseResponse(
      '<|action_start|><|interpreter|>\nx = 1<|action_end|>\n',
    );
    expect((await executor.call(fromAgent(parsed))).content).toBe('async x = 1');
  });

  it('does not throw on malformed formatted (the original asserted)', () => {
    const executor = new ActionExecutor({ actions: [python], hooks: [new InternLMActionProcessor()] });
    expect(executor.call(fromAgent({ unexpected: true })).content).toMatch(/No tool call was found/);
    expect(executor.call(fromAgent('a string')).content).toMatch(/No tool call was found/);
    const empty = new ActionExecutor({ actions: [], hooks: [new InternLMActionProcessor()] });
    const parsed = new InterpreterParser().parseResponse(
      '<|action_start|><|interpreter|>\nx<|action_end|>\n',
    );
    expect(empty.call(fromAgent(parsed)).content).toBe('There is no tool named "interpreter".');
  });
});
