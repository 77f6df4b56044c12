import {
  ConfigurationError,
  InterpreterParser,
  MixedToolParser,
  ParseError,
  PluginParser,
  ToolParser,
  ToolStatusCode,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';

const python = () => new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' });

describe('ToolParser', () => {
  it('splits a well-formed call into thought and action', () => {
    expect(python().parseResponse('Let me compute.\n```python\nprint(1 + 1)\n```\nDone.')).toEqual({
      toolType: 'code interpreter',
      thought: 'Let me compute.\n',
      action: 'print(1 + 1)',
      status: ToolStatusCode.VALID_TOOL,
    });
  });

  it('takes a call without end (cut by a stop word) up to the end of the text', () => {
    expect(python().parseResponse('首先：\n```python\nprint("数学")')).toEqual({
      toolType: 'code interpreter',
      thought: '首先：\n',
      action: 'print("数学")',
      status: ToolStatusCode.VALID_TOOL,
    });
  });

  it('stops a call at a second begin when end is missing', () => {
    const parsed = python().parseResponse('a```python\nx = 1```python\ny = 2');
    expect(parsed.action).toBe('x = 1');
  });

  it('reports NO_TOOL when there is no begin marker', () => {
    expect(python().parseResponse('The answer is 42.\n```\n')).toEqual({
      toolType: null,
      thought: 'The answer is 42.\n```\n',
      action: null,
      status: ToolStatusCode.NO_TOOL,
    });
  });

  it('keeps the raw action with PARSING_ERROR when validate throws', () => {
    const parser = new ToolParser({
      toolType: 'browser',
      begin: '```json\n',
      end: '\n```\n',
      validate: JSON.parse,
    });
    expect(parser.parseResponse('Search.\n```json\n{"name": "search"\n```\n')).toEqual({
      toolType: 'browser',
      thought: 'Search.\n',
      action: '{"name": "search"',
      status: ToolStatusCode.PARSING_ERROR,
    });
    expect(parser.parseResponse('```json\n{"name": "search"}\n```\n').action).toEqual({ name: 'search' });
  });

  it('handles garbage without throwing', () => {
    for (const text of ['', '```python\n', '\n```\n```python', '\u0000\uffff💥']) {
      expect(() => python().parseResponse(text)).not.toThrow();
    }
    expect(python().parseResponse('```python\n')).toMatchObject({
      action: '',
      status: ToolStatusCode.VALID_TOOL,
    });
  });

  it('formats a parsed response back, Python json.dumps JSON for object actions', () => {
    const parser = python();
    expect(
      parser.formatResponse({ toolType: 'code interpreter', thought: 'T', action: 'x', status: 1 }),
    ).toBe('T```python\nx\n```\n');
    expect(parser.formatResponse({ toolType: null, thought: 'only text', action: null, status: 0 })).toBe(
      'only text',
    );
    expect(parser.formatResponse({ toolType: 'x', thought: '', action: { q: '数学' }, status: 1 })).toBe(
      '```python\n{"q": "数学"}\n```\n',
    );
  });

  it('renders its template with begin, end and extra fields', () => {
    const parser = new ToolParser({
      toolType: 't',
      template: 'Call {name} as {begin}code{end}',
      name: 'python',
    });
    expect(parser.formatInstruction()).toBe('Call python as <tool>\ncode</tool>\n');
  });

  it('refuses a missing toolType or begin', () => {
    expect(() => new ToolParser({ toolType: '' })).toThrow(ConfigurationError);
    expect(() => new ToolParser({ toolType: 't', begin: '' })).toThrow(ConfigurationError);
  });

  it('throws a ParseError (only) for non-text input', () => {
    expect(() => python().parseResponse(undefined as unknown as string)).toThrow(ParseError);
  });
});

describe('InterpreterParser and PluginParser', () => {
  it('use InternLM markers', () => {
    const interpreter = new InterpreterParser();
    expect(
      interpreter.parseResponse('Run.<|action_start|><|interpreter|>\nprint(2)<|action_end|>\n'),
    ).toEqual({
      toolType: 'interpreter',
      thought: 'Run.',
      action: 'print(2)',
      status: ToolStatusCode.VALID_TOOL,
    });
    const plugin = new PluginParser();
    const text =
      'Look.<|action_start|><|plugin|>\n{"name": "search", "parameters": {"q": "x"}}<|action_end|>\n';
    expect(plugin.parseResponse(text).action).toEqual({ name: 'search', parameters: { q: 'x' } });
  });

  it('PluginParser reports PARSING_ERROR for non-JSON calls, keeping the text', () => {
    const parsed = new PluginParser().parseResponse('<|action_start|><|plugin|>\nsearch(x)<|action_end|>\n');
    expect(parsed).toMatchObject({
      toolType: 'plugin',
      action: 'search(x)',
      status: ToolStatusCode.PARSING_ERROR,
    });
  });
});

describe('MixedToolParser', () => {
  const mixed = () =>
    new MixedToolParser({
      toolType: 'meta',
      template: 'Use tools when needed.',
      parsers: [
        new PluginParser({ template: 'Tools:\n{prompt}', prompt: '[search]' }),
        new InterpreterParser(),
      ],
    });

  it('gives named system messages as its instruction', () => {
    expect(mixed().formatInstruction()).toEqual([
      { role: 'system', content: 'Use tools when needed.', name: 'meta' },
      { role: 'system', content: 'Tools:\n[search]', name: 'plugin' },
    ]);
  });

  it('parses with the parser whose marker comes first', () => {
    const parser = mixed();
    const text =
      'A<|action_start|><|interpreter|>\nprint(1)<|action_end|>\n<|action_start|><|plugin|>\n{"name":"s"}<|action_end|>\n';
    expect(parser.parseResponse(text)).toMatchObject({ toolType: 'interpreter', action: 'print(1)' });
    expect(parser.parseResponse('just text')).toEqual({
      toolType: null,
      thought: 'just text',
      action: null,
      status: ToolStatusCode.NO_TOOL,
    });
  });

  it('formats with the parser of the tool type and names an unknown one', () => {
    const parser = mixed();
    expect(parser.formatResponse({ toolType: 'interpreter', thought: 'T', action: 'x', status: 1 })).toBe(
      'T<|action_start|><|interpreter|>\nx<|action_end|>\n',
    );
    expect(() => parser.formatResponse({ toolType: 'web', thought: 'T', action: 'x', status: 1 })).toThrow(
      /no parser for tool type "web"/,
    );
  });

  it('refuses duplicate tool types', () => {
    expect(() => new MixedToolParser({ parsers: [new PluginParser(), new PluginParser()] })).toThrow(
      /unique/,
    );
  });
});
