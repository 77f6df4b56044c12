import {
  Agent,
  AgentMessage,
  AgentStatusCode,
  AsyncAgent,
  AsyncSequential,
  AsyncStreamingAgent,
  AsyncStreamingSequential,
  ConfigurationError,
  Sequential,
  StreamingAgent,
  StreamingSequential,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

const tagger = (tag: string) =>
  new MockLLM({ responses: (messages) => `${messages.at(-1)?.content}>${tag}`, chunkSize: 100 });
const asyncTagger = (tag: string) =>
  new AsyncMockLLM({ responses: (messages) => `${messages.at(-1)?.content}>${tag}`, chunkSize: 100 });

describe('Sequential', () => {
  it('runs members in order, each reply the next input; members keyed by index', () => {
    const seq = new Sequential(
      new Agent({ llm: tagger('a'), name: 'a' }),
      new Agent({ llm: tagger('b'), name: 'b' }),
    );
    const reply = seq.call('start');
    expect(reply).toMatchObject({ content: 'start>a>b', sender: 'b' });
    expect(seq.length).toBe(2);
    expect(seq.get(1)!.name).toBe('b');
    expect(seq.get(-1)!.name).toBe('b');
    expect(Object.keys(seq.stateDict())).toEqual(['memory', '0.memory', '1.memory']);
    expect(seq.stateDict().memory!.map((message) => message.content)).toEqual(['start', 'start>a>b']);
  });

  it('exitAt stops after that step and cycles past the end', () => {
    const seq = new Sequential({ a: new Agent({ llm: tagger('a') }), b: new Agent({ llm: tagger('b') }) });
    expect(seq.call('x', { exitAt: 0 }).content).toBe('x>a');
    expect(seq.call('y', { exitAt: 4, sessionId: 1 }).content).toBe('y>a>b>a>b>a');
    expect(seq.get('b')).toBeDefined();
    expect(Object.keys(seq.stateDict())).toEqual(['memory', 'a.memory', 'b.memory']);
    expect(() => seq.call('z', { exitAt: -1 })).toThrow(ConfigurationError);
  });

  it('refuses an empty list or non-agents', () => {
    expect(() => new Sequential()).toThrow(/at least one agent/);
    expect(() => new Sequential({} as never)).toThrow(/at least one agent/);
    expect(() => new Sequential('x' as never)).toThrow(/not an agent/);
  });
});

describe('AsyncSequential', () => {
  it('awaits async members and runs sync ones', async () => {
    const seq = new AsyncSequential(
      new AsyncAgent({ llm: asyncTagger('a') }),
      new Agent({ llm: tagger('s') }),
    );
    expect((await seq.call('go', { sessionId: 2 })).content).toBe('go>a>s');
    expect(seq.stateDict(2)['0.memory']).toHaveLength(2);
  });
});

describe('StreamingSequential', () => {
  it("streams every member's chunks once as STREAM_ING and ends with one final", () => {
    const seq = new StreamingSequential(
      new StreamingAgent({ llm: new MockLLM({ responses: ['ab'], chunkSize: 1 }), name: 'first' }),
      new StreamingAgent({ llm: new MockLLM({ responses: ['xy'], chunkSize: 1 }), name: 'second' }),
    );
    const messages: AgentMessage[] = [...seq.call('go')];
    expect(messages.map((message) => [message.sender, message.content, message.streamState])).toEqual([
      ['first', 'a', 1],
      ['first', 'ab', 1],
      ['second', 'x', 1],
      ['second', 'xy', 1],
      ['second', 'xy', 0],
    ]);
    expect(messages.map((message) => message.delta)).toEqual(['a', 'b', 'x', 'y', '']);
    // The first member's reply is the second one's input: it is stored as a finished message, not a chunk.
    const second = seq.stateDict()['1.memory']!;
    expect(second.map((message) => [message.content, message.streamState])).toEqual([
      ['ab', 0],
      ['xy', 0],
    ]);
    expect(seq.stateDict()['0.memory']!.map((message) => message.streamState)).toEqual([0, 0]);
  });
});

describe('AsyncStreamingSequential', () => {
  it('mixes async streaming and plain async members', async () => {
    const seq = new AsyncStreamingSequential(
      new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: ['hey'], chunkSize: 2 }) }),
      new AsyncAgent({ llm: asyncTagger('done') }),
    );
    const messages: AgentMessage[] = [];
    for await (const message of seq.call('go')) messages.push(message);
    expect(messages.map((message) => message.content)).toEqual(['he', 'hey', 'hey>done']);
    expect(seq.stateDict()['1.memory']!.map((message) => message.streamState)).toEqual([0, 0]);
    expect(messages.at(-1)!.streamState).toBe(0);
    expect(messages.slice(0, -1).every((message) => message.streamState === 1)).toBe(true);
  });
});

describe('stream states through nested relays', () => {
  it("keeps a member's own chunk states (Lagent's CODING, PLUGIN_START, ...) and marks only finished messages", () => {
    class Coding extends StreamingAgent {
      override *forward(): Generator<AgentMessage, AgentMessage, undefined> {
        yield new AgentMessage({ sender: 'coder', content: 'print(1)', streamState: AgentStatusCode.CODING });
        yield new AgentMessage({ sender: 'coder', content: 'print(1)' });
        return new AgentMessage({ sender: 'coder', content: 'done' });
      }
    }
    const seq = new StreamingSequential(new Coding({ name: 'coder' }));
    const chunks = [...seq.call('go')];
    expect(chunks.map((chunk) => chunk.streamState)).toEqual([
      AgentStatusCode.CODING,
      AgentStatusCode.STREAM_ING,
      AgentStatusCode.END,
    ]);
  });
});
