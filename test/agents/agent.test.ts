import {
  Agent,
  type AgentBase,
  AgentDict,
  AgentList,
  AgentMessage,
  ConfigurationError,
  type ForwardOptions,
  Hook,
  HookError,
  Memory,
  ParseError,
  type SessionId,
  StateDictError,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it, vi } from 'vitest';

const echo = () => new MockLLM({ responses: (messages) => `echo:${messages.at(-1)?.content}` });
const contents = (
  agent: { memory: { getMemory(id?: SessionId): AgentMessage[] } | null },
  sessionId: SessionId = 0,
) => agent.memory!.getMemory(sessionId).map((message) => message.content);

describe('Agent.call', () => {
  it('runs forward through the aggregator and stores input and reply', () => {
    const llm = new MockLLM({ responses: ['急'] });
    const agent = new Agent({ llm, template: 'Answer with one of three characters: 典, 孝, 急.' });
    const reply = agent.call(new AgentMessage({ sender: 'user', content: '今天天气情况' }));
    expect(reply).toBeInstanceOf(AgentMessage);
    expect(reply).toMatchObject({ content: '急', sender: 'Agent', formatted: null, streamState: 0 });
    expect(llm.calls[0]!.messages).toEqual([
      { role: 'system', content: 'Answer with one of three characters: 典, 孝, 急.' },
      { role: 'user', content: '今天天气情况' },
    ]);
    expect(agent.memory!.getMemory().map((message) => [message.sender, message.content])).toEqual([
      ['user', '今天天气情况'],
      ['Agent', '急'],
    ]);
    expect(agent.stateDict().memory).toEqual(agent.memory!.getMemory().map((message) => message.toJSON()));
    agent.reset();
    expect(agent.memory!.getMemory()).toEqual([]);
  });

  it('takes strings, plain objects and lists; several inputs are joined into one user turn', () => {
    const llm = echo();
    const agent = new Agent({ llm });
    agent.call(['a', { content: 'b', sender: 'tool' }]);
    expect(llm.calls[0]!.messages).toEqual([{ role: 'user', content: 'ab' }]);
    expect(agent.memory!.getMemory().map((message) => message.sender)).toEqual(['user', 'tool', 'Agent']);
  });

  it("never mutates the caller's messages, and the reply is a copy memory does not share", () => {
    class Mutating extends Hook {
      override beforeAgent(_agent: AgentBase, messages: AgentMessage[]) {
        for (const message of messages) (message.content as { text: string }).text = 'changed by hook';
      }
    }
    const agent = new Agent({ llm: echo(), hooks: [new Mutating()] });
    const input = new AgentMessage({ content: { text: 'original' } });
    const reply = agent.call(input);
    expect(input.content).toEqual({ text: 'original' });
    reply.content = 'tampered';
    expect(agent.memory!.getMemory()[1]!.content).not.toBe('tampered');
    expect(agent.memory!.getMemory()[0]!.content).toEqual({ text: 'changed by hook' });
  });

  it('keeps sessions apart and passes sessionId, gen params and extra keys to forward and the model', () => {
    const llm = echo();
    const seen: ForwardOptions[] = [];
    class Spy extends Agent {
      override forward(messages: AgentMessage[], options: ForwardOptions) {
        seen.push(options);
        return super.forward(messages, options);
      }
    }
    const agent = new Spy({ llm });
    agent.call('first');
    agent.call('second', { sessionId: 'b', temperature: 0.1, stopWords: ['X'], custom: 1 });
    expect(seen[0]!.sessionId).toBe(0);
    expect(seen[1]).toMatchObject({ sessionId: 'b', temperature: 0.1, custom: 1 });
    expect(llm.calls[1]!.params.temperature).toBe(0.1);
    expect(llm.calls[1]!.params.stopWords).toEqual(['X']);
    expect(llm.genParams.temperature).toBe(0.8);
    expect(llm.genParams.stopWords).toEqual([]);
    expect(contents(agent, 0)).toEqual(['first', 'echo:first']);
    expect(contents(agent, 'b')).toEqual(['second', 'echo:second']);
  });

  it('llm.genParams.stopWords.push changes later calls', () => {
    const llm = new MockLLM({ responses: ['code\n```\nrest', 'code\n```\nrest'] });
    const agent = new Agent({ llm });
    expect(agent.call('a').content).toBe('code\n```\nrest');
    llm.genParams.stopWords.push('\n```\n');
    expect(agent.call('b').content).toBe('code');
  });

  it('parses with outputFormat into formatted', () => {
    const parser = { parseResponse: (text: string) => ({ words: text.split(' ') }) };
    const agent = new Agent({ llm: new MockLLM({ responses: ['a b'] }), outputFormat: parser });
    const reply = agent.call('go');
    expect(reply.formatted).toEqual({ words: ['a', 'b'] });
    expect(agent.memory!.getMemory()[1]!.formatted).toEqual({ words: ['a', 'b'] });
  });

  it('a parser failure is a ParseError keeping the raw text, and memory is left as before the call', () => {
    const parser = {
      parseResponse: (text: string) => {
        if (text === 'bad') throw new SyntaxError('not JSON');
        return text;
      },
    };
    const agent = new Agent({ llm: new MockLLM({ responses: ['fine', 'bad'] }), outputFormat: parser });
    agent.call('one');
    const error = (() => {
      try {
        agent.call('two');
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ParseError);
    expect((error as ParseError).text).toBe('bad');
    expect(contents(agent)).toEqual(['one', 'fine']);
  });

  it('a model error leaves memory as it was', () => {
    const llm = new MockLLM({ responses: ['only one'] });
    const agent = new Agent({ llm });
    agent.call('a');
    expect(() => agent.call('b')).toThrow(/ran out of scripted responses/);
    expect(contents(agent)).toEqual(['a', 'only one']);
  });

  it('memory: null aggregates just the current inputs and keeps no state', () => {
    const llm = echo();
    const agent = new Agent({ llm, memory: null });
    agent.call('x');
    agent.call('y');
    expect(llm.calls[1]!.messages).toEqual([{ role: 'user', content: 'y' }]);
    expect(agent.memory).toBeNull();
    expect(agent.stateDict()).toEqual({});
  });

  it('memory: { recentN } bounds what the model sees', () => {
    const llm = echo();
    const agent = new Agent({ llm, memory: { recentN: 1 } });
    agent.call('first');
    agent.call('second');
    expect(llm.calls[1]!.messages).toEqual([{ role: 'user', content: 'second' }]);
    expect(agent.memory!.get(0)!.length).toBe(4);
  });

  it('explains a missing llm, a bad forward result and bad options', () => {
    expect(() => new Agent().call('x')).toThrow(/has no llm/);
    class Bad extends Agent {
      override forward() {
        return 42 as never;
      }
    }
    expect(() => new Bad().call('x')).toThrow(ConfigurationError);
    expect(new Bad().memory!.getMemory()).toEqual([]);
    expect(() => new Agent('llm' as never)).toThrow(/options object/);
    expect(() => new Agent({ memory: 'big' as never })).toThrow(/memory must be/);
  });

  it('refuses an async model at run time too (the type system refuses it at compile time)', () => {
    const agent = new Agent({ llm: new AsyncMockLLM({ responses: ['x'] }) as never });
    expect(() => agent.call('x')).toThrow(/Promise inside a synchronous call.*use the Async variant/);
    expect(agent.memory!.getMemory()).toEqual([]);
  });
});

describe('hooks', () => {
  class Prefix extends Hook {
    constructor(private readonly prefix: string) {
      super();
    }
    override beforeAgent(_agent: AgentBase, messages: AgentMessage[]) {
      for (const message of messages) message.content = this.prefix + message.content;
    }
  }

  it('beforeAgent edits, in place or by replacement, reach memory and the model', () => {
    class Replace extends Hook {
      override beforeAgent(_agent: AgentBase, messages: AgentMessage[]) {
        return [...messages, new AgentMessage({ content: '+extra' })];
      }
    }
    const llm = echo();
    const agent = new Agent({ llm, hooks: [new Prefix('> '), new Replace()] });
    agent.call('hello');
    expect(contents(agent)).toEqual(['> hello', '+extra', 'echo:> hello+extra']);
  });

  it('afterAgent edits reach the caller but not memory', () => {
    class Shout extends Hook {
      override afterAgent(_agent: AgentBase, message: AgentMessage) {
        message.content = String(message.content).toUpperCase();
      }
    }
    class Swap extends Hook {
      override afterAgent(_agent: AgentBase, message: AgentMessage) {
        return new AgentMessage({ sender: 'swapped', content: `${message.content}!` });
      }
    }
    const agent = new Agent({ llm: echo(), hooks: [new Shout(), new Swap()] });
    const reply = agent.call('hi');
    expect(reply).toMatchObject({ sender: 'swapped', content: 'ECHO:HI!' });
    expect(contents(agent)).toEqual(['hi', 'echo:hi']);
  });

  it('hooks receive the agent and session id, in registration order; handles remove them', () => {
    const order: string[] = [];
    class Named extends Hook {
      constructor(private readonly label: string) {
        super();
      }
      override beforeAgent(agent: AgentBase, _messages: AgentMessage[], sessionId: SessionId) {
        order.push(`${this.label}:${agent.name}:${sessionId}`);
      }
    }
    const agent = new Agent({ llm: echo(), name: 'bot', hooks: [new Named('a')] });
    const handle = agent.registerHook(new Named('b'));
    agent.call('x', { sessionId: 7 });
    handle.remove();
    handle.remove();
    agent.call('y', { sessionId: 7 });
    expect(order).toEqual(['a:bot:7', 'b:bot:7', 'a:bot:7']);
    expect(agent.hooks).toHaveLength(1);
  });

  it('a throwing hook surfaces as a HookError naming the hook, and memory is as it was', () => {
    class Broken extends Hook {
      override beforeAgent(): void {
        throw new Error('boom');
      }
    }
    class BrokenAfter extends Hook {
      override afterAgent(): void {
        throw new Error('late boom');
      }
    }
    const agent = new Agent({ llm: new MockLLM({ responses: () => 'ok' }) });
    agent.call('before');
    const handle = agent.registerHook(new Broken());
    expect(() => agent.call('x')).toThrow(HookError);
    try {
      agent.call('x');
    } catch (error) {
      expect((error as HookError).hookName).toBe('Broken');
      expect((error as HookError).stage).toBe('beforeAgent');
      expect((error as Error).message).toContain('Broken');
      expect(((error as Error).cause as Error).message).toBe('boom');
    }
    handle.remove();
    agent.registerHook(new BrokenAfter());
    expect(() => agent.call('y')).toThrow(/BrokenAfter.afterAgent failed: late boom/);
    expect(contents(agent)).toEqual(['before', 'ok']);
  });

  it('an async hook in a sync agent is a clear error', () => {
    class AsyncHook extends Hook {
      override async beforeAgent() {}
    }
    // @ts-expect-error an async hook in a sync agent is a compile error; this checks the runtime guard
    const agent = new Agent({ llm: echo(), hooks: [new AsyncHook()] });
    expect(() => agent.call('x')).toThrow(
      /AsyncHook.beforeAgent failed: it returned a Promise.*use the Async variant/,
    );
  });
});

describe('sub-agents and state', () => {
  class Team extends Agent {
    writer = new Agent({ llm: echo(), name: 'writer' });
    helper = 'not an agent';
    experts = new AgentList([new Agent({ llm: echo() }), new Agent({ llm: echo(), memory: null })]);
    panel = new AgentDict({ judge: new Agent({ llm: echo() }) });
    override forward([message]: AgentMessage[], { sessionId }: ForwardOptions) {
      let current = this.writer.call(message, { sessionId });
      for (const expert of this.experts) current = (expert as Agent).call(current, { sessionId });
      return (this.panel.get('judge') as Agent).call(current, { sessionId });
    }
  }

  it('discovers sub-agents from own properties in order and prints a PyTorch-style tree', () => {
    const team = new Team();
    expect(team.children().map(([key]) => key)).toEqual(['writer', 'experts', 'panel']);
    expect(String(team)).toBe(
      [
        "Team(name='Team')(",
        "  (writer): Agent(name='writer')",
        '  (experts): AgentList(',
        "    (0): Agent(name='Agent')",
        "    (1): Agent(name='Agent')",
        '  )',
        '  (panel): AgentDict(',
        "    (judge): Agent(name='Agent')",
        '  )',
        ')',
      ].join('\n'),
    );
  });

  it('stateDict has dotted keys for nested agents, lists and dicts; agents without memory have none', () => {
    const team = new Team();
    team.call('topic', { sessionId: 3 });
    const dict = team.stateDict(3);
    expect(Object.keys(dict)).toEqual(['memory', 'writer.memory', 'experts.0.memory', 'panel.judge.memory']);
    expect(dict['writer.memory']!.map((message) => message.content)).toEqual(['topic', 'echo:topic']);
    expect(JSON.parse(JSON.stringify(dict))).toEqual(dict);
    expect(team.stateDict(0)['writer.memory']).toEqual([]);
  });

  it('loadStateDict restores every memory into a fresh instance', () => {
    const team = new Team();
    team.call('topic', { sessionId: 'a' });
    const dict = JSON.parse(JSON.stringify(team.stateDict('a')));
    const fresh = new Team();
    fresh.loadStateDict(dict, 'b');
    expect(fresh.stateDict('b')).toEqual(dict);
    expect(fresh.memory!.getMemory('b')[0]).toBeInstanceOf(AgentMessage);
  });

  it('loadStateDict throws on a missing key or a wrong shape and leaves memory untouched', () => {
    const team = new Team();
    team.call('keep me');
    const before = team.stateDict();
    const missing = { ...before };
    delete missing['panel.judge.memory'];
    expect(() => team.loadStateDict(missing)).toThrow(StateDictError);
    expect(() => team.loadStateDict(missing)).toThrow(/panel\.judge\.memory/);
    const wrong = { ...before, memory: [], 'writer.memory': [{ content: 'x', sender: 7 }] };
    expect(() => team.loadStateDict(wrong as never)).toThrow(/writer\.memory.*sender/);
    expect(() => team.loadStateDict({ ...before, memory: 'x' } as never)).toThrow(/must be an array/);
    expect(() => team.loadStateDict([] as never)).toThrow(StateDictError);
    expect(team.stateDict()).toEqual(before);
  });

  it('loadStateDict warns about unknown keys', () => {
    const team = new Team();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    team.loadStateDict({ ...team.stateDict(), 'ghost.memory': [] });
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('ghost.memory'), expect.anything());
    warn.mockRestore();
  });

  it('loadStateDict names unknown keys escaped, and not a thousand of them', () => {
    const team = new Team();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    // An uploaded state whose key names would clear the screen and retitle the terminal of whoever reads the log.
    const hostile: Record<string, unknown[]> = { '\x1b[2J\x1b]0;owned\x07\x9b31m': [] };
    for (let i = 0; i < 1_000; i++) hostile[`extra${i}`] = [];
    team.loadStateDict({ ...team.stateDict(), ...hostile } as never);
    const text = String(warn.mock.calls[0]![0]);
    warn.mockRestore();
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what must not be there
    expect(text).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
    expect(text).toContain('"\\x1b[2J\\x1b]0;owned\\x07\\x9b31m"');
    expect(text).toMatch(/and 981 more$/);
  });

  it('reset clears one session, a keypath, or everything recursively', () => {
    const team = new Team();
    team.call('a', { sessionId: 1 });
    team.call('b', { sessionId: 2 });
    team.reset(1);
    expect(team.memory!.getMemory(1)).toEqual([]);
    expect(team.writer.memory!.getMemory(1)).toHaveLength(2);
    team.reset(1, { keypath: 'experts.0' });
    expect((team.experts.get(0) as Agent).memory!.getMemory(1)).toEqual([]);
    expect(team.writer.memory!.getMemory(1)).toHaveLength(2);
    team.reset(1, { recursive: true });
    expect(Object.values(team.stateDict(1)).every((messages) => messages.length === 0)).toBe(true);
    expect(team.writer.memory!.getMemory(2)).toHaveLength(2);
    expect(() => team.reset(1, { keypath: 'nobody' })).toThrow(/no sub-agent "nobody"/);
    team.call('c', { sessionId: 1 });
    expect(Object.values(team.stateDict(1)).every((messages) => messages.length === 2)).toBe(true);
    // A keypath naming a container resets its members, nothing else.
    team.reset(1, { keypath: 'experts' });
    for (const expert of team.experts) expect((expert as Agent).memory?.getMemory(1) ?? []).toEqual([]);
    expect(team.writer.memory!.getMemory(1)).toHaveLength(2);
    expect(() => team.reset(1, { keypath: 'writer', recursive: true })).toThrow(ConfigurationError);
  });

  it('containers reject keys with dots and non-agents', () => {
    expect(() => new AgentDict({ 'a.b': new Agent() })).toThrow(/may not contain/);
    expect(() => new AgentList([{} as never])).toThrow(/expected an agent/);
  });
});

describe('events', () => {
  it('emits callStart, llmStart, llmEnd, callEnd in order, and error on failure', () => {
    const agent = new Agent({ llm: new MockLLM({ responses: ['hi'] }) });
    const seen: string[] = [];
    agent.events.on('callStart', ({ sessionId }) => seen.push(`callStart:${sessionId}`));
    agent.events.on('llmStart', ({ messages }) => seen.push(`llmStart:${messages.length}`));
    agent.events.on('llmEnd', ({ response }) => seen.push(`llmEnd:${response}`));
    agent.events.on('callEnd', ({ message }) => seen.push(`callEnd:${message.content}`));
    agent.events.on('error', ({ error }) => seen.push(`error:${(error as Error).name}`));
    agent.call('x', { sessionId: 's' });
    expect(() => agent.call('y', { sessionId: 's' })).toThrow();
    expect(seen).toEqual([
      'callStart:s',
      'llmStart:1',
      'llmEnd:hi',
      'callEnd:hi',
      'callStart:s',
      'llmStart:3',
      'error:MockScriptError',
    ]);
  });
});

describe('Memory factory option', () => {
  it('memory: () => Memory gives each session its own instance', () => {
    const agent = new Agent({ llm: echo(), memory: () => new Memory({ recentN: 10 }) });
    agent.call('a', { sessionId: 1 });
    agent.call('b', { sessionId: 2 });
    expect(agent.memory!.get(1)).not.toBe(agent.memory!.get(2));
    expect(agent.memory!.get(1)!.recentN).toBe(10);
  });
});
