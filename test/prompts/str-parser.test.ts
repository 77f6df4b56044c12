import { StrParser, TemplateError } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

describe('StrParser', () => {
  it('renders its template with its fields (Python str.format style)', () => {
    const parser = new StrParser({
      template: 'Answer in {language}; put {{}} around nothing.',
      language: 'French',
    });
    expect(parser.formatInstruction()).toBe('Answer in French; put {} around nothing.');
  });

  it('has an empty instruction by default and returns text as it is', () => {
    const parser = new StrParser();
    expect(parser.formatInstruction()).toBe('');
    expect(parser.parseResponse('Bonjour 🌍')).toBe('Bonjour 🌍');
    expect(parser.formatResponse('Bonjour 🌍')).toBe('Bonjour 🌍');
  });

  it('refuses a template whose field was not given, naming it', () => {
    expect(() => new StrParser({ template: 'Use {tools}' })).toThrow(TemplateError);
    expect(() => new StrParser({ template: 'Use {tools}' })).toThrow(/"tools"/);
  });

  it('does not let callers change its fields', () => {
    const parser = new StrParser({ template: '{a}', a: 'x' });
    expect(Object.isFrozen(parser.fields)).toBe(true);
  });
});
