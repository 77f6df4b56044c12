import {
  type AgentBase,
  type AgentMessage,
  AgentStatusCode,
  AsyncStreamingAgent,
  Hook,
  StreamingAgent,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { comparedCharacters } from '../helpers/compared-text';
import { HeldLLM } from '../helpers/held';

const states = (messages: AgentMessage[]) => messages.map((message) => message.streamState);

describe('StreamingAgent', () => {
  it('yields cumulative STREAM_ING chunks, then the final message exactly once', () => {
    const agent = new StreamingAgent({ llm: new MockLLM({ responses: ['hello world'], chunkSize: 4 }) });
    const messages = [...agent.call('hi')];
    expect(messages.map((message) => message.content)).toEqual([
      'hell',
      'hello wo',
      'hello world',
      'hello world',
    ]);
    expect(states(messages)).toEqual([1, 1, 1, 0]);
    expect(messages.filter((message) => message.streamState === AgentStatusCode.END)).toHaveLength(1);
    expect(agent.memory!.getMemory().map((message) => [message.content, message.streamState])).toEqual([
      ['hi', 0],
      ['hello world', 0],
    ]);
  });

  it('the final is after memory and afterAgent, and is the generator return value', () => {
    class Tag extends Hook {
      override afterAgent(_agent: AgentBase, message: AgentMessage) {
        message.content = `[${message.content}]`;
      }
    }
    const agent = new StreamingAgent({
      llm: new MockLLM({ responses: ['abcdef'], chunkSize: 3 }),
      hooks: [new Tag()],
    });
    const stream = agent.call('x');
    const seen: string[] = [];
    let step = stream.next();
    while (!step.done) {
      seen.push(step.value.content);
      step = stream.next();
    }
    expect(seen).toEqual(['abc', 'abcdef', '[abcdef]']);
    expect(step.value.content).toBe('[abcdef]');
    expect(agent.memory!.getMemory()[1]!.content).toBe('abcdef');
  });

  it('chunks carry best-effort formatted when there is an output format', () => {
    const parser = {
      parseResponse(text: string) {
        if (!text.endsWith('}')) throw new Error('partial');
        return JSON.parse(text);
      },
    };
    const agent = new StreamingAgent({
      llm: new MockLLM({ responses: ['{"a":1}'], chunkSize: 4 }),
      outputFormat: parser,
    });
    const messages = [...agent.call('x')];
    expect(messages.map((message) => message.formatted)).toEqual([null, { a: 1 }, { a: 1 }]);
  });

  it('abandoning the stream leaves memory as it was', () => {
    const agent = new StreamingAgent({
      llm: new MockLLM({ responses: () => 'a long answer', chunkSize: 2 }),
    });
    [...agent.call('first')];
    for (const message of agent.call('second')) {
      expect(message.streamState).toBe(AgentStatusCode.STREAM_ING);
      break;
    }
    expect(agent.memory!.getMemory().map((message) => message.content)).toEqual(['first', 'a long answer']);
  });

  it('a custom forward may yield strings; its return value is the reply', () => {
    class Counter extends StreamingAgent {
      override *forward() {
        yield '1';
        yield '1 2';
        return '1 2 3';
      }
    }
    const messages = [...new Counter().call('go')];
    expect(messages.map((message) => [message.sender, message.content, message.streamState])).toEqual([
      ['Counter', '1', 1],
      ['Counter', '1 2', 1],
      ['Counter', '1 2 3', 0],
    ]);
  });

  it("a forward's last chunk is the reply when it returns nothing, copied so the consumer's chunk stays its own", () => {
    class Last extends StreamingAgent {
      override *forward() {
        yield 'partial';
        yield 'done';
      }
    }
    const agent = new Last();
    const messages = [...agent.call('go')];
    expect(messages.map((message) => message.content)).toEqual(['partial', 'done', 'done']);
    expect(messages[1]).not.toBe(messages[2]);
    messages[1]!.content = 'changed';
    expect(agent.memory!.getMemory()[1]!.content).toBe('done');
  });
});

describe('AsyncStreamingAgent', () => {
  it('streams chunks then the final once', async () => {
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: ['streamed text'], chunkSize: 5 }),
    });
    const messages: AgentMessage[] = [];
    for await (const message of agent.call('hi', { sessionId: 9 })) messages.push(message);
    expect(messages.map((message) => message.content)).toEqual([
      'strea',
      'streamed t',
      'streamed text',
      'streamed text',
    ]);
    expect(states(messages)).toEqual([1, 1, 1, 0]);
    expect(agent.memory!.getMemory(9)).toHaveLength(2);
  });

  it('breaking out of the loop stops the model stream and leaves memory as it was', async () => {
    let pulled = 0;
    const llm = new AsyncMockLLM({ responses: () => 'x'.repeat(100), chunkSize: 1 });
    const original = llm.streamChat.bind(llm);
    llm.streamChat = async function* (messages, params) {
      for await (const chunk of original(messages, params)) {
        pulled++;
        yield chunk;
      }
    };
    const agent = new AsyncStreamingAgent({ llm });
    for await (const _ of agent.call('hi')) {
      if (pulled >= 3) break;
    }
    expect(pulled).toBeLessThan(10);
    expect(agent.memory!.getMemory()).toEqual([]);
  });

  it('a stream left before its end is an error to listeners (a page whose tree said "running" forever)', async () => {
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: () => 'x'.repeat(100), chunkSize: 1 }),
    });
    const heard: string[] = [];
    agent.events.on('callEnd', () => heard.push('callEnd'));
    agent.events.on('error', ({ error }) => heard.push(`error: ${(error as Error).message}`));
    for await (const _ of agent.call('hi', { sessionId: 's' })) break;
    expect(heard).toEqual(['error: the call was abandoned before it finished (its stream was closed)']);
    expect(agent.memory!.get('s')?.length ?? 0).toBe(0);
  });

  it('an abort signal stops a slow stream with the abort reason', async () => {
    // The model never answers: only the abort can end the stream.
    const llm = new HeldLLM({ responses: ['slow'] });
    const agent = new AsyncStreamingAgent({ llm });
    const controller = new AbortController();
    void llm.held.until(1).then(() => controller.abort(new Error('user cancelled')));
    await expect(async () => {
      for await (const _ of agent.call('hi', { signal: controller.signal })) {
        /* drain */
      }
    }).rejects.toThrow('user cancelled');
    expect(llm.held.pending).toBe(0);
    expect(agent.memory!.getMemory()).toEqual([]);
  });
});

describe('streaming in time linear in the reply', () => {
  // 20,000 characters in 4-character chunks: comparing each chunk's text with the previous chunk's would read
  // 5,000 texts of 10,000 characters on average (50 million characters); the model's own deltas need none.
  const length = 20_000;
  const text = 'abcdefghij'.repeat(length / 10);

  it('the built-in forward gives each chunk the delta the model streamed, so no chunk is compared with the last', async () => {
    const agent = new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: [text], chunkSize: 4 }) });
    let received = '';
    let chunks = 0;
    const compared = await comparedCharacters(async () => {
      for await (const chunk of agent.call('hi')) {
        if (chunk.streamState === AgentStatusCode.STREAM_ING) chunks++;
        received += chunk.delta;
      }
    });
    expect(chunks).toBe(length / 4);
    expect(received).toBe(text);
    // The final reply is compared with the last chunk once.
    expect(compared).toBeLessThanOrEqual(2 * length);
  });

  it('the same holds for the sync StreamingAgent', async () => {
    const agent = new StreamingAgent({ llm: new MockLLM({ responses: [text], chunkSize: 4 }) });
    let received = '';
    const compared = await comparedCharacters(() => {
      for (const chunk of agent.call('hi')) received += chunk.delta;
    });
    expect(received).toBe(text);
    expect(compared).toBeLessThanOrEqual(2 * length);
  });

  it("a model chunk whose delta does not account for the content's growth gets its delta by comparison", async () => {
    const llm = new AsyncMockLLM({ responses: ['unused'] });
    llm.streamChat = async function* () {
      yield { state: 1, content: 'Hello', delta: 'Hello' };
      // A rewrite: the model's delta is what it appended, but the text before it changed too.
      yield { state: 1, content: 'Help me', delta: '!' };
      yield { state: 1, content: 'Help me now', delta: ' now' };
      yield { state: 0, content: 'Help me now', delta: '' };
    } as typeof llm.streamChat;
    const agent = new AsyncStreamingAgent({ llm });
    const deltas: (string | undefined)[] = [];
    for await (const chunk of agent.call('hi')) deltas.push(chunk.delta);
    expect(deltas).toEqual(['Hello', 'Help me', ' now', '']);
  });
});
