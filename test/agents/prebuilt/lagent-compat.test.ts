import {
  AgentForInternLM,
  AsyncReAct,
  asciiPythonJSON,
  ConfigurationError,
  getPluginPrompt,
  INTERNLM_PROMPTS,
  internLMOutputFormat,
  LAGENT_INTERPRETER_CN,
  LAGENT_MATH_CODER_TEMPLATE,
  LAGENT_META_CN,
  LAGENT_PLUGIN_CN,
  LAGENT_REACT_FINISH_FORMAT,
  LAGENT_REACT_FUNCTION_FORMAT,
  LAGENT_REACT_OUTPUT_FORMAT,
  LAGENT_REACT_TEMPLATE,
  lagentReActOutputFormat,
  MathCoder,
  mathCoderOutputFormat,
  PromptTemplate,
  ReAct,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { calculator, fakePython } from '../../helpers/tools';

const weather = tool({
  name: 'Weather',
  description: '城市天气',
  parameters: z.object({ city: z.string().describe('城市') }),
  run: ({ city }) => `Sunny in ${city}`,
});

const placeholders = (text: string) => new PromptTemplate(text).missingVariables;

describe("Lagent's prompt constants", () => {
  it('keep the placeholders and markers Lagent fills in', () => {
    expect(placeholders(LAGENT_PLUGIN_CN)).toEqual(['prompt']);
    expect(placeholders(LAGENT_META_CN)).toEqual([]);
    expect(placeholders(LAGENT_INTERPRETER_CN)).toEqual([]);
    expect(placeholders(LAGENT_REACT_TEMPLATE)).toEqual(['action_info', 'output_format']);
    expect(placeholders(LAGENT_REACT_OUTPUT_FORMAT)).toEqual(['function_format', 'finish_format']);
    // str.format style: doubled braces are one literal pair for the model.
    expect(new PromptTemplate(LAGENT_MATH_CODER_TEMPLATE).format({})).toContain(
      "'\\boxed{}' without any units. \n",
    );
    expect(LAGENT_META_CN).toBe('当开启工具以及代码时，根据需求选择合适的工具进行调用');
    expect(LAGENT_REACT_TEMPLATE.endsWith('\n开始!')).toBe(true);
  });

  it("show the reply formats with Python's type names, as Lagent's JSONParser renders pydantic models", () => {
    expect(LAGENT_REACT_FUNCTION_FORMAT).toContain('"parameters": "dict[]",  // required');
    expect(LAGENT_REACT_FUNCTION_FORMAT).toContain('"thought_process": "str",  // required');
    expect(LAGENT_REACT_FINISH_FORMAT).toContain('"conclusion": "str",  // required\n}');
  });

  it('differ from the default prompts, which say the same in this library’s words', () => {
    expect(INTERNLM_PROMPTS.zh.meta).not.toBe(LAGENT_META_CN);
    expect(INTERNLM_PROMPTS.zh.plugin).not.toBe(LAGENT_PLUGIN_CN);
  });
});

describe('asciiPythonJSON', () => {
  it("writes what Python's json.dumps writes with ensure_ascii=True", () => {
    expect(asciiPythonJSON({ q: '天气', n: [1, 2] })).toBe('{"q": "\\u5929\\u6c14", "n": [1, 2]}');
    expect(asciiPythonJSON('😀é\x7f\n"')).toBe('"\\ud83d\\ude00\\u00e9\\u007f\\n\\""');
  });
});

describe("compat: 'lagent'", () => {
  it("AgentForInternLM sends Lagent's META_CN, PLUGIN_CN and INTERPRETER_CN", () => {
    const llm = new MockLLM({ responses: ['好'] });
    new AgentForInternLM({ llm, plugins: [calculator], interpreter: fakePython, compat: 'lagent' }).call(
      'hi',
    );
    expect(llm.calls[0]!.messages.slice(0, 3)).toEqual([
      { role: 'system', content: LAGENT_META_CN },
      {
        role: 'system',
        content: LAGENT_PLUGIN_CN.replace('{prompt}', getPluginPrompt([calculator])),
        name: 'plugin',
      },
      { role: 'system', content: LAGENT_INTERPRETER_CN, name: 'interpreter' },
    ]);
  });

  it("MathCoder sends Lagent's instruction, rendered", () => {
    const llm = new MockLLM({ responses: ['\\boxed{42}'] });
    new MathCoder({ llm, interpreter: fakePython, compat: 'lagent' }).call('6 * 7?');
    expect(llm.calls[0]!.messages[0]).toEqual({
      role: 'system',
      content: LAGENT_MATH_CODER_TEMPLATE.replace('{{}}', '{}'),
      name: 'interpreter',
    });
    expect(mathCoderOutputFormat('en', 'lagent').formatInstruction()).toBe(
      LAGENT_MATH_CODER_TEMPLATE.replace('{{}}', '{}'),
    );
  });

  it('ReAct writes the tool list with non-ASCII escaped and shows Lagent’s formats; the loop still runs', async () => {
    const llm = new AsyncMockLLM({
      responses: [
        '{"thought_process": "查天气", "action": {"name": "Weather", "parameters": {"city": "北京"}}}',
        '{"thought_process": "知道了", "conclusion": "晴"}',
      ],
    });
    const agent = new AsyncReAct({ llm, actions: [weather, calculator], compat: 'lagent' });
    const reply = await agent.call('北京天气？');
    expect(reply.formatted).toEqual({ thought_process: '知道了', conclusion: '晴' });
    const system = llm.calls[0]!.messages[0]!.content as string;
    const outputFormat = lagentReActOutputFormat().formatInstruction();
    expect(outputFormat).toBe(
      LAGENT_REACT_OUTPUT_FORMAT.replace('{function_format}', LAGENT_REACT_FUNCTION_FORMAT).replace(
        '{finish_format}',
        LAGENT_REACT_FINISH_FORMAT,
      ),
    );
    expect(system).toBe(
      LAGENT_REACT_TEMPLATE.replace('{action_info}', asciiPythonJSON(agent.actions.description())).replace(
        '{output_format}',
        outputFormat,
      ),
    );
    expect(system).toContain('"description": "\\u57ce\\u5e02\\u5929\\u6c14"');
    expect(system).not.toContain('城市天气');
    expect(llm.calls[1]!.messages.at(-1)!.content).toContain('Sunny in 北京');
  });

  it('ReAct without compat keeps the non-ASCII of the tool list', () => {
    const llm = new MockLLM({ responses: ['{"thought_process": "x", "conclusion": "y"}'] });
    new ReAct({ llm, actions: [weather], template: '工具：{action_info}' }).call('hi');
    expect(llm.calls[0]!.messages[0]!.content).toContain('"description": "城市天气"');
  });

  it('is refused with a language Lagent has no prompts in, and for an unknown mode', () => {
    const llm = new MockLLM({ responses: [] });
    expect(() => new ReAct({ llm, actions: [calculator], compat: 'lagent', language: 'en' })).toThrow(
      ConfigurationError,
    );
    expect(() => new MathCoder({ llm, interpreter: fakePython, compat: 'lagent', language: 'zh' })).toThrow(
      /Lagent's prompts, which are in 'en'/,
    );
    expect(() => internLMOutputFormat({ compat: 'lagent', language: 'en' })).toThrow(ConfigurationError);
    expect(
      () => new AgentForInternLM({ llm, interpreter: fakePython, compat: 'python' as unknown as 'lagent' }),
    ).toThrow(/compat must be 'lagent' or left out, got "python"/);
    // Lagent's own language is accepted.
    expect(() => new ReAct({ llm, actions: [calculator], compat: 'lagent', language: 'zh' })).not.toThrow();
  });
});
