import type { ChatMessage } from 'lagent-ts';
import { APITemplateParser, INTERNLM2_META, LMTemplateParser } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

const call = { id: 'c1', name: 'Calculator.add', arguments: { a: 1, b: 2 } };

describe('templates and tool turns', () => {
  it('the API template keeps toolCalls / toolCallId and null content, and never merges tool turns', () => {
    const messages: ChatMessage[] = [
      { role: 'assistant', content: 'Let me add.' },
      { role: 'assistant', content: null, toolCalls: [call] },
      { role: 'assistant', content: 'More text.' },
      { role: 'tool', content: '3', toolCallId: 'c1' },
      { role: 'tool', content: '4', toolCallId: 'c2' },
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ];
    expect(new APITemplateParser().parse(messages)).toEqual([
      { role: 'assistant', content: 'Let me add.' },
      { role: 'assistant', content: null, toolCalls: [call] },
      { role: 'assistant', content: 'More text.' },
      { role: 'tool', content: '3', toolCallId: 'c1' },
      { role: 'tool', content: '4', toolCallId: 'c2' },
      { role: 'user', content: 'a\nb' },
    ]);
  });

  it('merging a null content keeps the other text, never the word null', () => {
    const parsed = new APITemplateParser().parse([
      { role: 'assistant', content: null },
      { role: 'assistant', content: 'text' },
    ]);
    expect(parsed).toEqual([{ role: 'assistant', content: 'text' }]);
  });

  it('the raw-prompt template renders a null content as empty', () => {
    const prompt = new LMTemplateParser(INTERNLM2_META).parse([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: null, toolCalls: [call] },
    ]);
    expect(prompt).not.toContain('null');
  });
});
