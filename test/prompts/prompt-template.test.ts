import { ConfigurationError, PromptTemplate, TemplateError } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

describe('PromptTemplate', () => {
  it('fills {var} placeholders and keeps doubled braces literal', () => {
    const prompt = new PromptTemplate('Write about {topic}: {{"words": {words}}}');
    expect(prompt.variables).toEqual(['topic', 'words']);
    expect(prompt.format({ topic: 'AI', words: 100 })).toBe('Write about AI: {"words": 100}');
  });

  it('fills {{ var }} placeholders in jinja style, with dotted paths', () => {
    const prompt = new PromptTemplate('Hi {{ user.name }}, {{greeting}}!', { format: 'jinja' });
    expect(prompt.format({ user: { name: 'Ada' }, greeting: 'welcome' })).toBe('Hi Ada, welcome!');
  });

  it('names a missing variable', () => {
    const prompt = new PromptTemplate('About {topic} in {style}');
    const error = (() => {
      try {
        prompt.format({ topic: 'AI' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(TemplateError);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as TemplateError).variable).toBe('style');
    expect((error as Error).message).toContain('missing variable "style"');
  });

  it('names an unknown variable', () => {
    const prompt = new PromptTemplate('About {topic}');
    expect(() => prompt.format({ topic: 'AI', tpoic: 'x' })).toThrow(/unknown variable "tpoic"/);
  });

  it('rejects malformed templates when built', () => {
    expect(() => new PromptTemplate('a { b')).toThrow(TemplateError);
    expect(() => new PromptTemplate('a } b')).toThrow(/single "}"/);
    expect(() => new PromptTemplate('a {} b')).toThrow(/empty placeholder/);
    expect(() => new PromptTemplate('{% if x %}', { format: 'jinja' })).toThrow(/not supported/);
  });

  it('partial() returns a new template and leaves the original unchanged', () => {
    const prompt = new PromptTemplate('{a} and {b}');
    const half = prompt.partial({ a: 1 });
    expect(half.format({ b: 2 })).toBe('1 and 2');
    expect(half.missingVariables).toEqual(['b']);
    expect(() => prompt.format({ b: 2 })).toThrow(/missing variable "a"/);
    expect(() => prompt.partial({ c: 1 })).toThrow(/unknown variable "c"/);
  });

  it('renders objects as JSON and keeps every character', () => {
    expect(new PromptTemplate('{x}|{y}').format({ x: { k: '数学 🚀' }, y: '典' })).toBe('{"k":"数学 🚀"}|典');
  });
});
