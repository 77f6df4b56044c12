import {
  ActionReturn,
  ActionStatusCode,
  Agent,
  AgentMessage,
  type ChatMessage,
  type ForwardOptions,
  InternLMToolAggregator,
  InterpreterParser,
  MixedToolParser,
  PluginParser,
  StateDictError,
  ToolStatusCode,
} from 'lagent-ts';
import { MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { interpreterCall } from '../helpers/internlm-replies';

const TOOL_TURN = interpreterCall('print(63 * 63)');
const PLUGIN_TURN =
  'Search it.<|action_start|><|plugin|>\n{"name": "search", "parameters": {"q": "急"}}<|action_end|>\n';

function mixedParser(): MixedToolParser {
  return new MixedToolParser({
    template: 'Use tools.',
    parsers: [new PluginParser(), new InterpreterParser()],
  });
}

/** An agent with a tool parser whose memory holds tool turns and ActionReturn results (ok and failed). */
function toolAgent(responses: string[]): { agent: Agent; llm: MockLLM } {
  const llm = new MockLLM({ responses });
  const agent = new Agent({
    llm,
    template: 'Solve it.',
    aggregator: new InternLMToolAggregator({ environmentBegin: '<env>', environmentEnd: '</env>' }),
    outputFormat: mixedParser(),
  });
  return { agent, llm };
}

function ok(text: string): AgentMessage {
  return new AgentMessage({
    sender: 'ActionExecutor',
    content: new ActionReturn({
      args: { command: 'print(63 * 63)' },
      type: 'IPythonInterpreter',
      result: [
        { type: 'text', content: text },
        { type: 'image', content: '/tmp/plot.png' },
      ],
    }),
    extraInfo: { elapsedMs: 12 },
  });
}

function failed(): AgentMessage {
  return new AgentMessage({
    sender: 'ActionExecutor',
    content: new ActionReturn({
      args: { q: '急' },
      type: 'search',
      errmsg: 'search is down',
      state: ActionStatusCode.API_ERROR,
    }),
  });
}

/** Runs a conversation: question, plugin call, failed result, interpreter call, result. */
function converse(more: string[] = []): { agent: Agent; llm: MockLLM } {
  const made = toolAgent([PLUGIN_TURN, TOOL_TURN, 'It is 3969.', ...more]);
  made.agent.call('What is 63 * 63?');
  made.agent.call(failed());
  made.agent.call(ok('3969'));
  return made;
}

function promptOf(agent: Agent): ChatMessage[] {
  return agent.aggregator.aggregate(agent.memory!.get(0), agent.name, agent.outputFormat, agent.template);
}

function nested(depth: number, leaf: unknown = 'x'): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function nestedObject(depth: number): unknown {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('stateDict / loadStateDict keep ActionReturns', () => {
  it('the InternLMToolAggregator prompt is identical before and after a round trip (also through JSON)', () => {
    const { agent } = converse();
    const before = promptOf(agent);
    expect(before.filter((message) => message.role === 'environment').map((m) => m.content)).toEqual([
      '<env>search is down</env>',
      '<env>3969\n[image](/tmp/plot.png)</env>',
    ]);
    for (const dict of [agent.stateDict(), JSON.parse(JSON.stringify(agent.stateDict()))]) {
      const { agent: fresh } = toolAgent([]);
      fresh.loadStateDict(dict);
      expect(promptOf(fresh)).toEqual(before);
      const contents = fresh.memory!.getMemory().map((message) => message.content);
      expect(contents.filter((content) => content instanceof ActionReturn)).toHaveLength(2);
    }
  });

  it('the next model call sees the same prompt after a save and load as without one', () => {
    const { agent, llm } = converse(['It is 4096.']);
    const dict = JSON.parse(JSON.stringify(agent.stateDict()));
    agent.call('And 64 * 64?');
    const { agent: fresh, llm: freshLLM } = toolAgent(['It is 4096.']);
    fresh.loadStateDict(dict);
    fresh.call('And 64 * 64?');
    expect(freshLLM.calls[0]!.messages).toEqual(llm.calls.at(-1)!.messages);
    expect(fresh.stateDict()).toEqual(JSON.parse(JSON.stringify(agent.stateDict())));
  });

  it('the DefaultAggregator renders loaded ActionReturns as their result text, not JSON', () => {
    const llm = new MockLLM({ responses: ['done', 'again'] });
    const agent = new Agent({ llm });
    agent.call([new AgentMessage({ content: 'run it' }), ok('42')]);
    const dict = JSON.parse(JSON.stringify(agent.stateDict()));
    const fresh = new Agent({ llm: new MockLLM({ responses: [] }) });
    fresh.loadStateDict(dict);
    expect(fresh.aggregator.aggregate(fresh.memory!.get(0), fresh.name)).toEqual(
      agent.aggregator.aggregate(agent.memory!.get(0), agent.name),
    );
    expect(llm.calls[0]!.messages.at(-1)!.content).toBe('run it42\n[image](/tmp/plot.png)');
  });

  it('a list of ActionReturns as content comes back as ActionReturns', () => {
    const agent = new Agent({ llm: new MockLLM({ responses: [] }) });
    agent.memory!.add(
      new AgentMessage({ sender: 'ActionExecutor', content: [ok('1').content, failed().content, 'note'] }),
      0,
    );
    const fresh = new Agent({ llm: new MockLLM({ responses: [] }) });
    fresh.loadStateDict(JSON.parse(JSON.stringify(agent.stateDict())));
    const [first, second, third] = fresh.memory!.getMemory()[0]!.content as unknown[];
    expect(first).toBeInstanceOf(ActionReturn);
    expect(second).toBeInstanceOf(ActionReturn);
    expect((second as ActionReturn).errmsg).toBe('search is down');
    expect(third).toBe('note');
  });
});

describe("stateDict(sessionId, { format: 'lagent' })", () => {
  it("writes Python Lagent's shape: snake_case fields, tool_type in formatted, ActionReturns as their dump", () => {
    const { agent } = converse();
    const dict = agent.stateDict(0, { format: 'lagent' });
    expect(Object.keys(dict)).toEqual(['memory']);
    const memory = dict.memory!;
    for (const message of memory) {
      expect(Object.keys(message)).toEqual([
        'content',
        'sender',
        'formatted',
        'extra_info',
        'type',
        'receiver',
        'stream_state',
      ]);
    }
    expect(memory[1]!.formatted).toEqual({
      tool_type: 'plugin',
      thought: 'Search it.',
      action: { name: 'search', parameters: { q: '急' } },
      status: ToolStatusCode.VALID_TOOL,
    });
    expect(Object.keys(memory[1]!.formatted as object)).toEqual(['tool_type', 'thought', 'action', 'status']);
    expect(memory[2]!.content).toEqual({
      args: { q: '急' },
      url: null,
      type: 'search',
      result: null,
      errmsg: 'search is down',
      state: ActionStatusCode.API_ERROR,
      thought: null,
    });
    expect(memory[4]!.extra_info).toEqual({ elapsedMs: 12 });
    expect(memory[4]!.stream_state).toBe(0);
    expect(JSON.stringify(dict)).not.toMatch(/toolType|extraInfo|streamState/);
  });

  it('leaves formatted that is not a tool parser result as it is', () => {
    const agent = new Agent({ llm: new MockLLM({ responses: [] }) });
    agent.memory!.add(
      [
        new AgentMessage({ content: 'a', formatted: { toolType: 'mine' } }),
        new AgentMessage({ content: 'b', formatted: 'plain' }),
        new AgentMessage({ content: 'c', formatted: { name: 'search', parameters: {} } }),
      ],
      0,
    );
    const formatted = agent.stateDict(0, { format: 'lagent' }).memory!.map((message) => message.formatted);
    expect(formatted).toEqual([{ toolType: 'mine' }, 'plain', { name: 'search', parameters: {} }]);
  });

  it('the default format is unchanged (camelCase)', () => {
    const { agent } = converse();
    const dict = agent.stateDict();
    expect(Object.keys(dict.memory![0]!)).toContain('extraInfo');
    expect(dict.memory![1]!.formatted).toMatchObject({ toolType: 'plugin' });
    expect(agent.stateDict(0, { format: 'lagent-ts' })).toEqual(dict);
  });
});

describe('loadStateDict reads both shapes', () => {
  it('a Lagent-shaped dict loads with camelCase formatted, extraInfo, streamState and ActionReturns', () => {
    const { agent } = converse();
    const before = promptOf(agent);
    const lagent = JSON.parse(JSON.stringify(agent.stateDict(0, { format: 'lagent' })));
    const { agent: fresh } = toolAgent([]);
    fresh.loadStateDict(lagent);
    expect(fresh.stateDict()).toEqual(JSON.parse(JSON.stringify(agent.stateDict())));
    expect(promptOf(fresh)).toEqual(before);
    const messages = fresh.memory!.getMemory();
    expect(messages[1]!.formatted).toEqual({
      toolType: 'plugin',
      thought: 'Search it.',
      action: { name: 'search', parameters: { q: '急' } },
      status: 1,
    });
    expect(messages[4]!.extraInfo).toEqual({ elapsedMs: 12 });
    expect(messages[4]!.content).toBeInstanceOf(ActionReturn);
  });

  it("accepts Lagent's null memory list as an empty memory", () => {
    const { agent } = toolAgent([]);
    agent.memory!.add('old', 0);
    agent.loadStateDict({ memory: null } as never);
    expect(agent.memory!.getMemory()).toEqual([]);
  });

  it('a message with both extra_info and extraInfo is a StateDictError and nothing changes', () => {
    const { agent } = toolAgent([]);
    agent.memory!.add('kept', 0);
    const bad = { content: 'x', extra_info: { a: 1 }, extraInfo: { a: 2 } };
    expect(() => agent.loadStateDict({ memory: [bad] } as never)).toThrow(StateDictError);
    expect(() => agent.loadStateDict({ memory: [bad] } as never)).toThrow(/extra_info.*extraInfo/);
    const both = { content: 'x', stream_state: 0, streamState: 1 };
    expect(() => agent.loadStateDict({ memory: [both] } as never)).toThrow(StateDictError);
    const formatted = {
      content: 'x',
      formatted: { tool_type: 'plugin', toolType: 'plugin', thought: '', action: null, status: 0 },
    };
    expect(() => agent.loadStateDict({ memory: [formatted] } as never)).toThrow(/tool_type.*toolType/);
    expect(agent.memory!.getMemory().map((message) => message.content)).toEqual(['kept']);
  });
});

describe('state dicts and nesting deeper than JSON can take', () => {
  it('loading 100,000 levels of nesting is a StateDictError, not a stack overflow', () => {
    const { agent } = toolAgent([]);
    for (const message of [
      { content: nested(100_000) },
      { content: nestedObject(100_000) },
      { content: 'x', formatted: nested(100_000) },
      { content: 'x', extra_info: nestedObject(100_000) },
    ]) {
      let error: unknown;
      try {
        agent.loadStateDict({ memory: [message] } as never);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(StateDictError);
      expect((error as StateDictError).key).toBe('memory');
      expect((error as Error).message).toMatch(/512 levels/);
    }
  });

  it('also when the dict came from JSON.parse', () => {
    const { agent } = toolAgent([]);
    const text = `{"memory": [{"content": ${'['.repeat(100_000)}${']'.repeat(100_000)}}]}`;
    expect(() => agent.loadStateDict(JSON.parse(text))).toThrow(StateDictError);
    expect(() => agent.loadStateDict(JSON.parse(text))).toThrow(
      /"content" nests arrays or objects more than 512/,
    );
  });

  it('saving a memory that holds 100,000 levels of nesting is a StateDictError naming the key', () => {
    const writer = new Agent({ llm: new MockLLM({ responses: [] }) });
    const team = new (class Team extends Agent {
      writer = writer;
    })({ memory: null });
    writer.memory!.add(new AgentMessage({ content: nested(100_000) }), 0);
    for (const format of ['lagent-ts', 'lagent'] as const) {
      let error: unknown;
      try {
        team.stateDict(0, { format });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(StateDictError);
      expect((error as StateDictError).key).toBe('writer.memory');
    }
  });

  it('saving a circular value is a StateDictError (it has no JSON form)', () => {
    const agent = new Agent({ llm: new MockLLM({ responses: [] }) });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    agent.memory!.add(new AgentMessage({ content: 'x', extraInfo: cyclic }), 0);
    expect(() => agent.stateDict()).toThrow(StateDictError);
    expect(() => agent.stateDict()).toThrow(/circular/);
  });

  it('512 levels save and load; 513 do not', () => {
    const agent = new Agent({ llm: new MockLLM({ responses: [] }) });
    agent.memory!.add(new AgentMessage({ content: nested(512) }), 0);
    const dict = JSON.parse(JSON.stringify(agent.stateDict()));
    const fresh = new Agent({ llm: new MockLLM({ responses: [] }) });
    fresh.loadStateDict(dict);
    expect(fresh.stateDict()).toEqual(dict);
    expect(() => fresh.loadStateDict({ memory: [{ content: nested(513) }] } as never)).toThrow(
      StateDictError,
    );
  });

  it('wide and shared (but not circular) values are fine: a shared value is not copied once per path', () => {
    const agent = new Agent({ llm: new MockLLM({ responses: [] }) });
    // 60 levels of [shared, shared]: 2^60 paths to the leaf, which a save walking every path would never end.
    let shared: unknown = 'leaf';
    for (let i = 0; i < 60; i++) shared = [shared, shared];
    const wide = Array.from({ length: 100_000 }, (_, i) => ({ i }));
    agent.memory!.add(new AgentMessage({ content: wide, extraInfo: shared }), 0);
    const dict = agent.stateDict();
    expect(dict.memory![0]!.content).toHaveLength(100_000);
    let level = dict.memory![0]!.extraInfo as unknown;
    for (let i = 0; i < 60; i++) {
      expect(level).toHaveLength(2);
      level = (level as unknown[])[1];
    }
    expect(level).toBe('leaf');
  });
});

describe('sub-agent names in Python Lagent state dicts', () => {
  it('writes camelCase sub-agent paths in snake_case for Lagent and reads both back', () => {
    class Pair extends Agent {
      selectAgent = new Agent({ llm: new MockLLM({ responses: () => 'picked' }) });
      override forward(messages: AgentMessage[], { sessionId }: ForwardOptions): AgentMessage {
        return this.selectAgent.call(messages, { sessionId });
      }
    }
    const pair = new Pair();
    pair.call('hi');
    const lagent = pair.stateDict(0, { format: 'lagent' });
    expect(Object.keys(lagent)).toEqual(['memory', 'select_agent.memory']);
    const restored = new Pair();
    restored.loadStateDict(JSON.parse(JSON.stringify(lagent)));
    expect(restored.stateDict()).toEqual(pair.stateDict());
    const again = new Pair();
    again.loadStateDict(pair.stateDict());
    expect(Object.keys(pair.stateDict())).toEqual(['memory', 'selectAgent.memory']);
    expect(again.stateDict()).toEqual(pair.stateDict());
  });
});
