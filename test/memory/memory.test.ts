import {
  AgentMessage,
  AsyncAgent,
  ConfigurationError,
  Memory,
  MemoryManager,
  ValidationError,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

const texts = (memory: Memory) => memory.getMemory().map((message) => message.content);

describe('Memory', () => {
  it('adds strings as user messages, objects validated, lists in order', () => {
    const memory = new Memory();
    memory.add('a');
    memory.add([new AgentMessage({ content: 'b', sender: 'Agent' }), { content: 'c', sender: 'tool' }]);
    expect(texts(memory)).toEqual(['a', 'b', 'c']);
    expect(memory.getMemory().map((message) => message.sender)).toEqual(['user', 'Agent', 'tool']);
    expect(() => memory.add({ content: 'd', sender: 5 } as never)).toThrow(ValidationError);
    expect(memory.length).toBe(3);
  });

  it('recentN limits getMemory, per call or by default, and filter applies', () => {
    const memory = new Memory({ recentN: 2 });
    memory.add(['1', '2', '3', '4']);
    expect(texts(memory)).toEqual(['3', '4']);
    expect(memory.getMemory({ recentN: 3 }).map((message) => message.content)).toEqual(['2', '3', '4']);
    const even = memory.getMemory({ recentN: 4, filter: (message) => Number(message.content) % 2 === 0 });
    expect(even.map((message) => message.content)).toEqual(['2', '4']);
    expect(() => new Memory({ recentN: -1 })).toThrow(ConfigurationError);
  });

  it('delete of several indices deletes exactly those, in any order, negative from the end', () => {
    const memory = new Memory();
    memory.add(['a', 'b', 'c', 'd', 'e']);
    memory.delete([3, 1]);
    expect(texts(memory)).toEqual(['a', 'c', 'e']);
    memory.delete(-1);
    expect(texts(memory)).toEqual(['a', 'c']);
    expect(() => memory.delete(5)).toThrow(/out of range/);
    expect(texts(memory)).toEqual(['a', 'c']);
  });

  it('save/load round trip; load overwrites by default, appends with overwrite: false', () => {
    const memory = new Memory();
    memory.add(['x', new AgentMessage({ content: 'y', sender: 'Agent', formatted: { k: 1 } })]);
    const saved = memory.save();
    const other = new Memory();
    other.add('old');
    other.load(saved);
    expect(other.save()).toEqual(saved);
    other.load(saved[0]!, { overwrite: false });
    expect(texts(other)).toEqual(['x', 'y', 'x']);
  });

  it('empty memories share nothing: whatever fills, clears or reloads one leaves the others empty', () => {
    const [a, b, c, d] = [new Memory(), new Memory(), new Memory(), new Memory()];
    a.load([new AgentMessage({ content: 'loaded' }).toJSON()], { overwrite: false });
    b.add('added');
    c.add(Array.from({ length: 20 }, (_, i) => `m${i}`)); // past the exact-size arrays
    c.clear();
    c.add('after clear');
    a.remove(b.getMemory());
    d.clear();
    expect(() => d.delete(0)).toThrow(/out of range/);
    expect(texts(a)).toEqual(['loaded']);
    expect(texts(b)).toEqual(['added']);
    expect(texts(c)).toEqual(['after clear']);
    expect(texts(d)).toEqual([]);
    expect(texts(new Memory())).toEqual([]);
  });

  it('load validates everything before changing anything', () => {
    const memory = new Memory();
    memory.add('keep');
    expect(() => memory.load([{ content: 'ok' }, { content: 'bad', sender: 1 }] as never)).toThrow(/entry 1/);
    expect(texts(memory)).toEqual(['keep']);
  });
});

describe('MemoryManager', () => {
  it('keeps one memory per session compared by String(id)', () => {
    const manager = new MemoryManager();
    manager.add('zero', 0);
    manager.add('one', 1);
    manager.add('zero again', '0');
    expect(manager.getMemory(0).map((message) => message.content)).toEqual(['zero', 'zero again']);
    expect(manager.getMemory('1').map((message) => message.content)).toEqual(['one']);
    expect(manager.get(0)).not.toBe(manager.get(1));
    expect(manager.sessions()).toEqual([0, 1]);
    manager.reset(0);
    expect(manager.get(0)).toBeUndefined();
    expect(manager.getMemory(0)).toEqual([]);
  });

  it('the factory is called per session, so nothing is shared', () => {
    let created = 0;
    const manager = new MemoryManager(() => {
      created++;
      return new Memory({ recentN: 1 });
    });
    manager.add(['a', 'b'], 'x');
    manager.add('c', 'y');
    expect(created).toBe(2);
    expect(manager.getMemory('x').map((message) => message.content)).toEqual(['b']);
  });

  it('maxSessions evicts the least recently used session', () => {
    const manager = new MemoryManager(undefined, { maxSessions: 2 });
    manager.add('a', 'a');
    manager.add('b', 'b');
    manager.get('a');
    manager.add('c', 'c');
    expect(manager.sessions().sort()).toEqual(['a', 'c']);
    expect(manager.get('b')).toBeUndefined();
    expect(() => new MemoryManager(undefined, { maxSessions: 0 })).toThrow(ConfigurationError);
  });

  it("an agent's bounded memory never drops a session it is answering", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked = 0;
    const llm = new AsyncMockLLM({ responses: (messages) => `re: ${String(messages.at(-1)?.content)}` });
    const generate = llm.generate.bind(llm);
    // The model answers 'slow' only once released.
    llm.generate = async (messages, params) => {
      asked++;
      if (messages.at(-1)?.content === 'slow') await held;
      return generate(messages, params);
    };
    const agent = new AsyncAgent({ llm, memory: { maxSessions: 2 } });
    const slow = agent.call('slow', { sessionId: 'a' });
    while (asked === 0) await new Promise((resolve) => setImmediate(resolve));
    // Two more sessions while 'a' is answered: the idle 'b' goes, not 'a'.
    await agent.call('hi', { sessionId: 'b' });
    await agent.call('hi', { sessionId: 'c' });
    release();
    await slow;
    expect(agent.memory!.getMemory('a').map((message) => message.content)).toEqual(['slow', 're: slow']);
    expect(agent.memory!.sessions().sort()).toEqual(['a', 'c']);
  });
});
