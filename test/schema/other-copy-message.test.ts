import { ActionReturn, AgentMessage, ValidationError } from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { asOwnMessage } from '#src/schema/agent-message';

/**
 * A message of another copy of lagent-ts (an agent module with its own copy, served by a global `lagent`) is
 * not an instance of this AgentMessage: it is recognised by its fields.
 */

/** What another copy's AgentMessage looks like from here: the same fields, another class. */
class OtherCopyMessage {
  content: unknown;
  sender = 'assistant';
  formatted: unknown = null;
  extraInfo: unknown = { usage: { totalTokens: 3 } };
  type: string | null = null;
  receiver: string | null = null;
  streamState = 1;
  constructor(content: unknown) {
    this.content = content;
  }
  toJSON() {
    const { content, sender, formatted, extraInfo, type, receiver, streamState } = this;
    return {
      content: content instanceof OtherCopyAction ? content.toJSON() : content,
      sender,
      formatted,
      extraInfo,
      type,
      receiver,
      streamState,
    };
  }
}
class OtherCopyAction {
  toJSON() {
    return new ActionReturn({ type: 'Search', result: [{ type: 'text', content: 'found' }] }).toJSON();
  }
}

describe('AgentMessage.from with a message of another copy', () => {
  it('reads it by its fields, through its JSON', () => {
    const message = AgentMessage.from(new OtherCopyMessage('partial'));
    expect(message).toBeInstanceOf(AgentMessage);
    expect(message).toMatchObject({
      content: 'partial',
      sender: 'assistant',
      extraInfo: { usage: { totalTokens: 3 } },
      streamState: 1,
    });
    const withAction = AgentMessage.from(new OtherCopyMessage(new OtherCopyAction()));
    expect(withAction.content).toBeInstanceOf(ActionReturn);
    expect(asOwnMessage(new OtherCopyMessage('x'))?.content).toBe('x');
  });

  it('without a toJSON, by the fields themselves', () => {
    const bare = Object.assign(Object.create({ kind: 'bare' }), {
      content: 'hi',
      sender: 'user',
      formatted: null,
      extraInfo: null,
      type: null,
      receiver: null,
      streamState: 0,
    });
    expect(AgentMessage.from(bare).content).toBe('hi');
  });

  it('anything else of a class is still refused', () => {
    const partial = Object.assign(Object.create({}), { content: 'hi', sender: 'user' });
    for (const value of [new Date(0), new Map(), partial, [1]]) {
      expect(() => AgentMessage.from(value)).toThrow(ValidationError);
      expect(asOwnMessage(value)).toBeUndefined();
    }
  });
});
