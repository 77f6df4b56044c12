import {
  APITemplateParser,
  ConfigurationError,
  DEFAULT_API_META_TEMPLATE,
  INTERNLM2_META,
  LMTemplateParser,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';

describe('INTERNLM2_META', () => {
  const parser = new LMTemplateParser(INTERNLM2_META);

  it('renders a system/user/assistant/environment dialog with names', () => {
    const prompt = parser.parse([
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'system', content: 'Tools: python', name: 'interpreter' },
      { role: 'user', content: 'What is 2**10?' },
      {
        role: 'assistant',
        content: 'Let me compute.<|action_start|><|interpreter|>\nprint(2**10)<|action_end|>',
      },
      { role: 'environment', content: '1024', name: 'interpreter' },
      { role: 'environment', content: 'ok', name: 'search' },
    ]);
    expect(prompt).toBe(
      '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' +
        '<|im_start|>system name=<|interpreter|>\nTools: python<|im_end|>\n' +
        '<|im_start|>user\nWhat is 2**10?<|im_end|>\n' +
        '<|im_start|>assistant\nLet me compute.<|action_start|><|interpreter|>\nprint(2**10)<|action_end|><|im_end|>\n' +
        '<|im_start|>environment name=<|interpreter|>\n1024<|im_end|>\n' +
        '<|im_start|>environment name=search\nok<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
  });

  it('does not open a new assistant turn after an assistant message', () => {
    expect(parser.parse([{ role: 'assistant', content: 'hi' }])).toBe(
      '<|im_start|>assistant\nhi<|im_end|>\n',
    );
  });

  it('returns strings as they are, and is frozen', () => {
    expect(parser.parse('raw prompt')).toBe('raw prompt');
    expect(Object.isFrozen(INTERNLM2_META)).toBe(true);
  });
});

describe('LMTemplateParser', () => {
  it('joins contents with newlines without a template', () => {
    expect(
      new LMTemplateParser().parse([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'b' },
      ]),
    ).toBe('a\nb');
  });

  it('supports fixed begins, generate and fallback roles', () => {
    const parser = new LMTemplateParser([
      { role: 'user', begin: 'U: ', end: '\n' },
      { role: 'assistant', begin: 'A: ', end: '\n', generate: true },
      { role: 'tool', fallbackRole: 'user' },
    ]);
    expect(parser.parse([{ role: 'tool', content: 'result' }])).toBe('U: result\nA: ');
    expect(
      parser.parse([
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'partial' },
      ]),
    ).toBe('U: q\nA: partial');
  });

  it('names unknown roles and duplicate roles', () => {
    expect(() => new LMTemplateParser(INTERNLM2_META).parse([{ role: 'robot', content: 'x' }])).toThrow(
      /no role 'robot'/,
    );
    expect(() => new LMTemplateParser([{ role: 'user' }, { role: 'user' }])).toThrow(ConfigurationError);
  });
});

describe('APITemplateParser', () => {
  it('maps environment to system and merges consecutive messages of the same API role', () => {
    const parser = new APITemplateParser(DEFAULT_API_META_TEMPLATE);
    const messages = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q1' },
      { role: 'user', content: 'q2' },
      { role: 'assistant', content: 'calling' },
      { role: 'environment', content: 'r1', name: 'python' },
      { role: 'environment', content: 'r2', name: 'python' },
      { role: 'assistant', content: 'done' },
    ];
    const copy = structuredClone(messages);
    expect(parser.parse(messages)).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q1\nq2' },
      { role: 'assistant', content: 'calling' },
      { role: 'system', content: 'r1\nr2', name: 'python' },
      { role: 'assistant', content: 'done' },
    ]);
    expect(messages).toEqual(copy);
  });

  it('merges a system prompt with a following environment turn, and drops disagreeing names', () => {
    const parser = new APITemplateParser();
    expect(
      parser.parse([
        { role: 'environment', content: 'a', name: 'x' },
        { role: 'environment', content: 'b', name: 'y' },
      ]),
    ).toEqual([{ role: 'system', content: 'a\nb' }]);
  });

  it('applies begin/end, passes unknown roles through and makes names API-safe', () => {
    const parser = new APITemplateParser([
      { role: 'user', apiRole: 'user' },
      { role: 'environment', apiRole: 'user', begin: '<result>', end: '</result>' },
    ]);
    expect(
      parser.parse([
        { role: 'user', content: 'go' },
        { role: 'environment', content: '42', name: 'code interpreter' },
        { role: 'developer', content: 'be terse' },
      ]),
    ).toEqual([
      { role: 'user', content: 'go\n<result>42</result>' },
      { role: 'developer', content: 'be terse' },
    ]);
    expect(parser.parse([{ role: 'environment', content: '1', name: 'code interpreter' }])).toEqual([
      { role: 'user', content: '<result>1</result>', name: 'code_interpreter' },
    ]);
  });
});

describe('LMTemplateParser names, as Lagent renders them', () => {
  const parser = new LMTemplateParser(INTERNLM2_META);

  it('treats name: null as no name (never name=null)', () => {
    const prompt = parser.parse([{ role: 'environment', content: 'ok', name: null as never }]);
    expect(prompt).toBe('<|im_start|>environment\nok<|im_end|>\n<|im_start|>assistant\n');
    expect(prompt).not.toContain('name=null');
  });

  it("renders name: '' with the named begin, as Lagent's `name is not None` does", () => {
    expect(parser.parse([{ role: 'environment', content: 'ok', name: '' }])).toBe(
      '<|im_start|>environment name=\nok<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('looks aliases up by own key only', () => {
    expect(parser.parse([{ role: 'environment', content: 'ok', name: 'constructor' }])).toBe(
      '<|im_start|>environment name=constructor\nok<|im_end|>\n<|im_start|>assistant\n',
    );
  });
});
