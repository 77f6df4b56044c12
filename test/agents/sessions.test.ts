import {
  type ActionReturn,
  Agent,
  AgentMessage,
  AsyncActionExecutor,
  AsyncAgent,
  type AsyncForwardOptions,
  AsyncGPTAPI,
  AsyncStreamingAgent,
  asyncTool,
  ConfigurationError,
  type ForwardOptions,
  StreamingAgent,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { HeldLLM } from '../helpers/held';
import { startFakeHttp } from '../helpers/http-server';

const contents = (
  agent: { memory: { getMemory(id: number | string): AgentMessage[] } | null },
  id: number | string = 0,
) => agent.memory!.getMemory(id).map((message) => message.content);

/** Replies `a<n>` after `ms`, recording the last user content it saw; honours the signal. */
function echoModel(ms = 20) {
  return new AsyncMockLLM({
    latencyMs: ms,
    responses: (messages) =>
      `a:${messages.filter((message) => message.role === 'user').length}:${messages.at(-1)?.content}`,
  });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('one call per session at a time', () => {
  it('two concurrent calls on one session run in call order, the second seeing the first turn', async () => {
    const llm = echoModel();
    const agent = new AsyncAgent({ llm });
    const [first, second] = await Promise.all([
      agent.call('q1', { sessionId: 1 }),
      agent.call('q2', { sessionId: 1 }),
    ]);
    expect(first.content).toBe('a:1:q1');
    expect(second.content).toBe('a:2:q2');
    expect(contents(agent, 1)).toEqual(['q1', 'a:1:q1', 'q2', 'a:2:q2']);
    // The second model call saw the first turn, not "q1q2" merged.
    expect(llm.calls[1]!.messages.map((message) => message.content)).toEqual(['q1', 'a:1:q1', 'q2']);
  });

  it('keeps call order for 500 queued calls on one session', async () => {
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: (messages) => `r${messages.at(-1)?.content}` }),
    });
    const replies = await Promise.all(
      Array.from({ length: 500 }, (_, i) => agent.call(String(i), { sessionId: 's' })),
    );
    expect(replies.map((reply) => reply.content)).toEqual(Array.from({ length: 500 }, (_, i) => `r${i}`));
    expect(contents(agent, 's')).toEqual(Array.from({ length: 500 }, (_, i) => [String(i), `r${i}`]).flat());
  });

  it('different sessions never wait on each other', async () => {
    const agent = new AsyncAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => String(messages.at(-1)?.content),
        latencyMs: 0,
      }),
    });
    // The slow agent's model answers only when released.
    const slowModel = new HeldLLM({
      responses: (messages) =>
        `a:${messages.filter((message) => message.role === 'user').length}:${messages.at(-1)?.content}`,
    });
    const slow = new AsyncAgent({ llm: slowModel });
    const order: string[] = [];
    const calls = [
      slow.call('slow', { sessionId: 'a' }).then(() => order.push('a')),
      agent.call('fast', { sessionId: 'b' }).then(() => order.push('b')),
      slow.call('other', { sessionId: 'c' }).then(() => order.push('c')),
    ];
    // a and c are in the slow model side by side, and b finished meanwhile.
    await slowModel.held.until(2);
    await calls[1];
    expect(order).toEqual(['b']);
    expect(slowModel.held.pending).toBe(2);
    slowModel.held.release();
    await Promise.all(calls);
    expect(order.slice(1).sort()).toEqual(['a', 'c']);
  });

  it('a call waiting for its session can be aborted; nothing of it reaches memory and the queue goes on', async () => {
    const agent = new AsyncAgent({ llm: echoModel(50) });
    const controller = new AbortController();
    const first = agent.call('q1', { sessionId: 1 });
    const waiting = agent.call('q2', { sessionId: 1, signal: controller.signal });
    const third = agent.call('q3', { sessionId: 1 });
    controller.abort(new Error('changed my mind'));
    await expect(waiting).rejects.toThrow('changed my mind');
    await first;
    await third;
    expect(contents(agent, 1)).toEqual(['q1', 'a:1:q1', 'q3', 'a:2:q3']);
  });

  it('a sync stream left unfinished makes another call on its session fail clearly, touching nothing', () => {
    const agent = new StreamingAgent({
      llm: new MockLLM({ responses: ['abcdef', 'second', 'third'], chunkSize: 2 }),
    });
    const stream = agent.call('q1');
    expect(stream.next().value?.content).toBe('ab');
    const other = () => [...agent.call('q2')];
    expect(other).toThrow(ConfigurationError);
    expect(other).toThrow(/has a call in progress.*return\(\)/);
    // Other sessions are free.
    expect([...agent.call('elsewhere', { sessionId: 9 })].at(-1)!.content).toBe('second');
    stream.return(undefined as never);
    expect(contents(agent)).toEqual([]);
    expect(() => agent.call('q3').next()).not.toThrow();
  });

  it('a call of an agent on its own session from inside itself fails instead of waiting forever', async () => {
    class Recursive extends AsyncAgent {
      // Annotated: call()'s type is read from forward's, so a forward returning its own call needs one.
      override async forward(_messages: AgentMessage[], options: AsyncForwardOptions): Promise<AgentMessage> {
        return this.call('again', { sessionId: options.sessionId });
      }
    }
    const agent = new Recursive({ llm: echoModel(1) });
    await expect(agent.call('go', { sessionId: 3 })).rejects.toThrow(
      /inside a call of the same agent and session/,
    );
    expect(contents(agent, 3)).toEqual([]);
  });
});

describe('a failed call removes exactly its own messages', () => {
  it('keeps a message added to the session while the call was running', async () => {
    const llm = new AsyncMockLLM({
      latencyMs: 30,
      responses: () => {
        throw new Error('model down');
      },
    });
    const agent = new AsyncAgent({ llm });
    agent.memory!.add('before', 1);
    const call = agent.call('question', { sessionId: 1 });
    agent.memory!.add(new AgentMessage({ sender: 'note', content: 'written meanwhile' }), 1);
    await expect(call).rejects.toThrow('model down');
    expect(contents(agent, 1)).toEqual(['before', 'written meanwhile']);
  });

  it('a stalled stream closed late takes back only its own question', async () => {
    const agent = new AsyncStreamingAgent({ llm: new AsyncMockLLM({ responses: ['abcdef'], chunkSize: 2 }) });
    const stream = agent.call('mine', { sessionId: 2 });
    expect((await stream.next()).value?.content).toBe('ab');
    agent.memory!.add('later turn', 2);
    await stream.return(undefined as never);
    expect(contents(agent, 2)).toEqual(['later turn']);
  });

  it('a composite that fails leaves every memory of its tree as before, sub-agents included', async () => {
    const llm = echoModel(5);
    class Blogger extends AsyncAgent {
      writer = new AsyncAgent({ llm, name: 'writer' });
      critic = new AsyncAgent({
        llm: new AsyncMockLLM({
          responses: () => {
            throw new Error('critic crashed');
          },
        }),
        name: 'critic',
      });
      override async forward([message]: AgentMessage[], { sessionId }: AsyncForwardOptions) {
        const draft = await this.writer.call(message, { sessionId });
        return this.critic.call(draft, { sessionId });
      }
    }
    const blogger = new Blogger();
    blogger.writer.memory!.add('earlier', 0);
    const before = blogger.stateDict(0);
    await expect(blogger.call('topic')).rejects.toThrow('critic crashed');
    expect(blogger.stateDict(0)).toEqual(before);
    expect(contents(blogger.writer)).toEqual(['earlier']);
  });

  it('nested composites: a failure two levels up takes back the finished grandchild turns', () => {
    const inner = new Agent({ llm: new MockLLM({ responses: () => 'inner reply' }), name: 'inner' });
    class Middle extends Agent {
      inner = inner;
      override forward(messages: AgentMessage[], { sessionId }: ForwardOptions) {
        return this.inner.call(messages, { sessionId });
      }
    }
    class Top extends Agent {
      middle = new Middle({ name: 'middle' });
      override forward(messages: AgentMessage[], { sessionId }: ForwardOptions): AgentMessage {
        this.middle.call(messages, { sessionId });
        throw new Error('top failed after its sub-calls succeeded');
      }
    }
    const top = new Top();
    expect(() => top.call('go', { sessionId: 4 })).toThrow('top failed');
    expect(contents(top.middle, 4)).toEqual([]);
    expect(contents(inner, 4)).toEqual([]);
    // The same sub-calls from a call that succeeds are kept.
    class Fine extends Agent {
      middle = new Middle({ name: 'middle' });
      override forward(messages: AgentMessage[], { sessionId }: ForwardOptions) {
        return this.middle.call(messages, { sessionId });
      }
    }
    const fine = new Fine();
    fine.call('go', { sessionId: 5 });
    expect(contents(inner, 5)).toEqual(['go', 'inner reply']);
  });

  it('a throwing event listener does not fail a call that stored its turn; the error is reported', async () => {
    const agent = new AsyncAgent({ llm: echoModel(1) });
    agent.events.on('callEnd', () => {
      throw new Error('listener bug');
    });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const reply = await agent.call('hello');
      expect(reply.content).toBe('a:1:hello');
      expect(contents(agent)).toEqual(['hello', 'a:1:hello']);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => warning.message).join('\n')).toMatch(/callEnd.*listener bug/);
      expect(
        warnings.some((warning) => (warning as { code?: string }).code === 'LAGENT_LISTENER_ERROR'),
      ).toBe(true);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('cancellation reaches sub-agents', () => {
  it("aborting the README's Blogger stops the inner model calls and stores nothing", async () => {
    // The model never answers: only the abort ends the call.
    const llm = new HeldLLM({ responses: (messages) => String(messages.at(-1)?.content) });
    class Blogger extends AsyncAgent {
      writer = new AsyncAgent({ llm, name: 'writer' });
      critic = new AsyncAgent({ llm, name: 'critic' });
      override async forward([message]: AgentMessage[], { sessionId }: AsyncForwardOptions) {
        let current = message!;
        for (let turn = 0; turn < 3; turn++) {
          current = await this.writer.call(current, { sessionId });
          current = await this.critic.call(current, { sessionId });
        }
        return this.writer.call(current, { sessionId });
      }
    }
    const blogger = new Blogger();
    const controller = new AbortController();
    void llm.held.until(1).then(() => controller.abort(new Error('stop blogging')));
    await expect(blogger.call('topic', { sessionId: 1, signal: controller.signal })).rejects.toThrow(
      'stop blogging',
    );
    expect(llm.held.pending).toBe(0);
    expect(blogger.stateDict(1)).toEqual({ memory: [], 'writer.memory': [], 'critic.memory': [] });
    expect(llm.calls).toHaveLength(1);
  });

  it('a sub-call obeys both its own signal and the inherited one', async () => {
    // The model never answers: only an abort ends a call.
    const llm = new HeldLLM({ responses: (messages) => String(messages.at(-1)?.content) });
    class Outer extends AsyncAgent {
      inner = new AsyncAgent({ llm, name: 'inner' });
      own = new AbortController();
      override forward(messages: AgentMessage[]) {
        return this.inner.call(messages, { signal: this.own.signal });
      }
    }
    const byOuter = new Outer();
    const outer = new AbortController();
    void llm.held.until(1).then(() => outer.abort(new Error('outer cancelled')));
    await expect(byOuter.call('go', { signal: outer.signal })).rejects.toThrow('outer cancelled');
    const byOwn = new Outer();
    void llm.held.until(1).then(() => byOwn.own.abort(new Error('inner cancelled')));
    await expect(byOwn.call('go', { signal: new AbortController().signal })).rejects.toThrow(
      'inner cancelled',
    );
    expect(llm.held.started).toBe(2);
    expect(llm.held.pending).toBe(0);
  });

  it('streams: a streaming sub-agent inside a streaming forward inherits the signal', async () => {
    const llm = new HeldLLM({ responses: ['abcdefgh'], chunkSize: 1 });
    class Outer extends AsyncStreamingAgent {
      inner = new AsyncStreamingAgent({ llm, name: 'inner' });
      override async *forward(messages: AgentMessage[]) {
        yield* this.inner.call(messages);
      }
    }
    const agent = new Outer();
    const controller = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const chunk of agent.call('go', { signal: controller.signal })) seen.push(chunk.content);
    })();
    await llm.held.until(1);
    controller.abort(new Error('stop'));
    await expect(run).rejects.toThrow('stop');
    expect(seen).toEqual([]);
    expect(agent.stateDict(0)).toEqual({ memory: [], 'inner.memory': [] });
  });
});

describe('stream chunks carry their delta', () => {
  it('deltas concatenate to the final content', async () => {
    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: ['Hello, world'], chunkSize: 3 }),
    });
    const chunks: AgentMessage[] = [];
    for await (const chunk of agent.call('hi')) chunks.push(chunk);
    expect(chunks.map((chunk) => chunk.delta)).toEqual(['Hel', 'lo,', ' wo', 'rld', '']);
    expect(chunks.map((chunk) => chunk.delta).join('')).toBe(chunks.at(-1)!.content);
    // Never stored or serialised.
    expect(Object.keys(agent.stateDict().memory![1]!)).not.toContain('delta');
  });
});

describe('reset frees what a session holds', () => {
  it("forgets the model's token usage of the session", () => {
    const forgotten: unknown[] = [];
    const llm = new MockLLM({ responses: () => 'ok' });
    Object.assign(llm, { resetUsage: (id: unknown) => forgotten.push(id) });
    const agent = new Agent({ llm });
    agent.call('hi', { sessionId: 'x' });
    agent.reset('x');
    expect(forgotten).toEqual(['x']);
  });
});

describe('cancellation reaches executors and tools', () => {
  it('a tool run by an executor inside forward sees the outer abort through context.signal', async () => {
    let toolSignal: AbortSignal | undefined;
    const slow = asyncTool({
      name: 'Slow',
      description: 'answers only when its signal aborts',
      parameters: z.object({}),
      run: (_args, { signal }) =>
        new Promise<string>((_resolve, reject) => {
          toolSignal = signal;
          signal?.addEventListener('abort', () => reject(signal.reason));
        }),
    });
    class Runner extends AsyncAgent {
      executor = new AsyncActionExecutor({ actions: [slow] });
      override async forward(): Promise<AgentMessage> {
        const reply = await this.executor.call(
          new AgentMessage({ sender: 'x', content: { name: 'Slow', parameters: {} } }),
        );
        return new AgentMessage({
          sender: this.name,
          content: String((reply.content as ActionReturn).toText()),
        });
      }
    }
    const controller = new AbortController();
    const call = new Runner().call('go', { signal: controller.signal });
    await expect.poll(() => toolSignal).toBeDefined();
    controller.abort(new Error('stop the tool'));
    await expect(call).rejects.toThrow('stop the tool');
    expect(toolSignal?.aborted).toBe(true);
  });
});

describe('cancellation reaches models called by hand inside forward', () => {
  it('an AsyncGPTAPI request made without passing the signal stops with the outer call', async () => {
    // The server never answers: only the abort ends the call, and the request's connection is dropped.
    const server = await startFakeHttp(() => undefined);
    try {
      const llm = new AsyncGPTAPI({ model: 'm', baseURL: `${server.url}/v1`, apiKey: 'k', retry: 0 });
      class ByHand extends AsyncAgent {
        override async forward(messages: AgentMessage[]) {
          return llm.chat([{ role: 'user', content: String(messages[0]!.content) }]);
        }
      }
      const controller = new AbortController();
      const call = new ByHand().call('go', { signal: controller.signal });
      await expect.poll(() => server.requests.length).toBe(1);
      controller.abort(new Error('stop the request'));
      await expect(call).rejects.toThrow('stop the request');
      await expect.poll(() => server.requests[0]!.clientLeft).toBe(true);
    } finally {
      await server.close();
    }
  });
});
