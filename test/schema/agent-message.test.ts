import { ActionReturn, AgentMessage, AgentStatusCode, LagentError, ValidationError } from 'lagent-ts';
import { describe, expect, it } from 'vitest';

describe('AgentMessage', () => {
  it('defaults sender to user and every other field as Lagent does', () => {
    const message = new AgentMessage({ content: 'hi' });
    expect(message).toMatchObject({
      content: 'hi',
      sender: 'user',
      formatted: null,
      extraInfo: null,
      type: null,
      receiver: null,
      streamState: AgentStatusCode.END,
    });
  });

  it('clone() is deep: nested content, formatted and extraInfo are not shared', () => {
    const original = new AgentMessage({
      content: { name: 'tool', parameters: { list: [1, 2] } },
      formatted: { action: { code: 'x' } },
      extraInfo: { tags: ['a'] },
    });
    const copy = original.clone();
    copy.content.parameters.list.push(3);
    copy.formatted!.action.code = 'y';
    (copy.extraInfo as { tags: string[] }).tags.push('b');
    expect(original.content.parameters.list).toEqual([1, 2]);
    expect(original.formatted!.action.code).toBe('x');
    expect(original.extraInfo).toEqual({ tags: ['a'] });
  });

  it('clone() keeps class instances such as ActionReturn', () => {
    const message = new AgentMessage({
      content: new ActionReturn({ result: [{ type: 'text', content: '42' }] }),
    });
    const copy = message.clone();
    expect(copy.content).toBeInstanceOf(ActionReturn);
    expect(copy.content).not.toBe(message.content);
    expect(copy.content.formatResult()).toBe('42');
  });

  it('toJSON() has all seven camelCase fields and survives JSON round trip through from()', () => {
    const message = new AgentMessage({
      content: '急',
      sender: 'Agent',
      formatted: { a: 1 },
      receiver: 'user',
    });
    const json = message.toJSON();
    expect(Object.keys(json).sort()).toEqual(
      ['content', 'extraInfo', 'formatted', 'receiver', 'sender', 'streamState', 'type'].sort(),
    );
    const back = AgentMessage.from(JSON.parse(JSON.stringify(json)));
    expect(back).toBeInstanceOf(AgentMessage);
    expect(back.toJSON()).toEqual(json);
  });

  it("from() accepts Lagent's snake_case dumps", () => {
    const message = AgentMessage.from({
      content: '3969.0',
      sender: 'ActionExecutor',
      formatted: null,
      extra_info: { step: 2 },
      type: null,
      receiver: null,
      stream_state: 1,
    });
    expect(message.extraInfo).toEqual({ step: 2 });
    expect(message.streamState).toBe(AgentStatusCode.STREAM_ING);
  });

  it('from() on malformed input throws a LagentError naming the field', () => {
    const bad = [
      [{ content: 'x', sender: 42 }, 'sender'],
      [{ content: 'x', streamState: 'done' }, 'streamState'],
      [{ content: 'x', stream_state: 1.5 }, 'streamState'],
      [{ sender: 'user' }, 'content'],
      [{ content: 'x', receiver: [] }, 'receiver'],
    ] as const;
    for (const [input, field] of bad) {
      let caught: unknown;
      try {
        AgentMessage.from(input);
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(input)).toBeInstanceOf(ValidationError);
      expect(LagentError.isInstance(caught)).toBe(true);
      expect((caught as ValidationError).field).toBe(field);
      expect((caught as Error).message).toContain(field);
    }
    expect(() => AgentMessage.from('just text')).toThrow(ValidationError);
    expect(() => AgentMessage.from(null)).toThrow(/expects an object/);
  });

  it('from() copies, so the JSON object is not shared with the message', () => {
    const json = { content: { items: [1] } };
    const message = AgentMessage.from(json);
    (message.content as { items: number[] }).items.push(2);
    expect(json.content.items).toEqual([1]);
  });
});

describe('ActionReturn', () => {
  it('formatResult renders text as is and other types as [type](content), one per line', () => {
    const ret = new ActionReturn({
      result: [
        { type: 'text', content: 'plot saved 📈 完成' },
        { type: 'image', content: '/tmp/plot.png' },
      ],
    });
    expect(ret.formatResult()).toBe('plot saved 📈 完成\n[image](/tmp/plot.png)');
    expect(new ActionReturn().formatResult()).toBe('');
  });
});
