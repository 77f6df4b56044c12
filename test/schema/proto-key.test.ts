import { Agent, AgentMessage, Memory } from 'lagent-ts';
import { MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

/** Content as JSON.parse makes it: "__proto__" is an own key there. */
const content = () => JSON.parse('{"text": "hi", "__proto__": {"isAdmin": true}}');

function expectProtoKey(data: unknown): void {
  const value = data as Record<string, unknown>;
  expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
  expect(value.isAdmin).toBeUndefined();
  expect(Object.keys(value)).toContain('__proto__');
  expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual(JSON.parse('{"isAdmin": true}'));
}

describe('copies keep "__proto__" as data', () => {
  it('AgentMessage.clone, toJSON and from', () => {
    const message = new AgentMessage({ content: content(), extraInfo: content(), formatted: content() });
    const clone = message.clone();
    expectProtoKey(clone.content);
    expectProtoKey(clone.extraInfo as Record<string, unknown>);
    expectProtoKey(clone.formatted);
    const json = message.toJSON();
    expectProtoKey(json.content as Record<string, unknown>);
    const back = AgentMessage.from(JSON.parse(JSON.stringify(json)));
    expectProtoKey(back.content);
  });

  it('AgentMessage.from ignores a top-level "__proto__" key instead of inheriting from it', () => {
    const json = JSON.parse('{"__proto__": {"content": "injected", "sender": "admin"}}');
    expect(() => AgentMessage.from(json)).toThrow(/content/);
    const ok = AgentMessage.from(JSON.parse('{"content": "x", "__proto__": {"sender": "admin"}}'));
    expect(ok.sender).toBe('user');
  });

  it('Memory save / load and an agent state dict', () => {
    const memory = new Memory();
    memory.add({ content: content(), sender: 'user' });
    expectProtoKey(memory.getMemory()[0]!.content);
    const saved = memory.save();
    expectProtoKey(saved[0]!.content as Record<string, unknown>);
    const restored = new Memory();
    restored.load(JSON.parse(JSON.stringify(saved)));
    expectProtoKey(restored.getMemory()[0]!.content);

    const agent = new Agent({ llm: new MockLLM({ responses: ['ok'] }) });
    agent.call(new AgentMessage({ content: content() }));
    const state = agent.stateDict();
    const first = (state.memory as { content: Record<string, unknown> }[])[0]!;
    expectProtoKey(first.content);
    expect(JSON.stringify(state)).toContain('"__proto__":{"isAdmin":true}');
  });
});
