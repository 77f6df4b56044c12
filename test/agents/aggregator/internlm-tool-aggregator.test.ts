import {
  ActionReturn,
  ActionStatusCode,
  AgentMessage,
  type ChatMessage,
  DefaultAggregator,
  InternLMToolAggregator,
  InterpreterParser,
  Memory,
  MixedToolParser,
  PluginParser,
  PromptTemplate,
  ToolParser,
  ToolStatusCode,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';

const parser = new ToolParser({
  toolType: 'code interpreter',
  template: 'Write code between {begin} and {end}.',
  begin: '```python\n',
  end: '\n```\n',
});

function history(): Memory {
  const memory = new Memory();
  memory.add([
    new AgentMessage({ sender: 'user', content: 'What is 63*63?' }),
    new AgentMessage({
      sender: 'Agent',
      content: 'raw',
      formatted: parser.parseResponse('Compute.\n```python\nprint(63*63)'),
    }),
    new AgentMessage({ sender: 'ActionExecutor', content: '3969' }),
    new AgentMessage({
      sender: 'Agent',
      content: 'bad',
      formatted: {
        toolType: 'code interpreter',
        thought: 'x',
        action: 'y',
        status: ToolStatusCode.PARSING_ERROR,
      },
    }),
    new AgentMessage({
      sender: 'Agent',
      content: 'It is 3969.',
      formatted: parser.parseResponse('It is 3969.'),
    }),
  ]);
  return memory;
}

describe('InternLMToolAggregator', () => {
  it('puts instructions, the parsed turns, and tool results in the environment role', () => {
    const messages = new InternLMToolAggregator().aggregate(history(), 'Agent', parser, 'Solve it.');
    expect(messages).toEqual([
      { role: 'system', content: 'Solve it.' },
      { role: 'system', content: 'Write code between ```python\n and \n```\n.', name: 'code interpreter' },
      { role: 'user', content: 'What is 63*63?' },
      { role: 'assistant', content: 'Compute.\n```python\nprint(63*63)\n```\n' },
      { role: 'environment', content: '3969', name: 'code interpreter' },
      { role: 'assistant', content: 'It is 3969.' },
    ]);
  });

  it('wraps tool results, honours userNames and renders failed ActionReturns as their error', () => {
    const memory = new Memory();
    memory.add([
      new AgentMessage({ sender: 'boss', content: 'task' }),
      new AgentMessage({
        sender: 'tool',
        content: new ActionReturn({ state: ActionStatusCode.API_ERROR, errmsg: 'boom' }),
      }),
      new AgentMessage({
        sender: 'tool',
        content: new ActionReturn({ result: [{ type: 'text', content: 'ok' }] }),
      }),
    ]);
    const aggregator = new InternLMToolAggregator({
      environmentRole: 'tool',
      environmentBegin: '<r>',
      environmentEnd: '</r>',
      userNames: ['boss'],
    });
    expect(aggregator.aggregate(memory, 'Agent', parser)).toEqual([
      { role: 'system', content: 'Write code between ```python\n and \n```\n.', name: 'code interpreter' },
      { role: 'user', content: 'task' },
      { role: 'tool', content: '<r>boom</r>' },
      { role: 'tool', content: '<r>ok</r>' },
    ]);
  });

  it('renders few-shot dialogs with the parser', () => {
    const aggregator = new InternLMToolAggregator({
      environmentBegin: '[',
      environmentEnd: ']',
      fewShot: [
        [
          { role: 'user', content: '1+1?' },
          { role: 'thought', content: 'Compute.\n' },
          { role: 'tool', content: 'print(1+1)', name: 'code interpreter' },
          { role: 'environment', content: '2' },
          { role: 'language', content: 'It is 2.' },
        ],
      ],
    });
    const messages = aggregator.aggregate(new Memory(), 'Agent', parser);
    expect(messages.slice(1)).toEqual([
      { role: 'user', content: '1+1?' },
      { role: 'assistant', content: 'Compute.\n```python\nprint(1+1)\n```\n' },
      { role: 'environment', content: '[2]' },
      { role: 'assistant', content: 'It is 2.' },
    ]);
  });

  it('adds every MixedToolParser instruction message', () => {
    const mixed = new MixedToolParser({
      template: 'Meta.',
      parsers: [new PluginParser({ template: 'Plugins.' }), new InterpreterParser()],
    });
    const messages = new InternLMToolAggregator().aggregate(undefined, 'Agent', mixed, [
      { role: 'system', content: 'Hi' },
    ]);
    expect(messages).toEqual([
      { role: 'system', content: 'Hi' },
      { role: 'system', content: 'Meta.' },
      { role: 'system', content: 'Plugins.', name: 'plugin' },
    ]);
  });

  it('falls back to the raw content when a turn was parsed by another parser', () => {
    const memory = new Memory();
    memory.add(
      new AgentMessage({
        sender: 'Agent',
        content: 'raw web call',
        formatted: { toolType: 'web', thought: 't', action: 'a', status: 1 },
      }),
    );
    const mixed = new MixedToolParser({ parsers: [new InterpreterParser()] });
    expect(new InternLMToolAggregator().aggregate(memory, 'Agent', mixed)).toEqual([
      { role: 'assistant', content: 'raw web call' },
    ]);
  });

  it('refuses few-shot messages with unknown roles when built', () => {
    expect(() => new InternLMToolAggregator({ fewShot: [[{ role: 'robot', content: 'x' }]] })).toThrow(
      /unknown role "robot"/,
    );
  });

  it('never mutates its template, few-shot list or memory across calls', () => {
    const fewShot: ChatMessage[][] = [
      [
        { role: 'environment', content: 'result' },
        { role: 'thought', content: 'hmm' },
      ],
    ];
    const fewShotBefore = structuredClone(fewShot);
    const template: ChatMessage[] = [{ role: 'system', content: 'Be brief.' }];
    const memory = history();
    const memoryBefore = memory.save();
    const aggregator = new InternLMToolAggregator({ fewShot, environmentBegin: '<', environmentEnd: '>' });
    const first = aggregator.aggregate(memory, 'Agent', parser, template);
    for (const message of first) message.content += ' (edited by caller)';
    first.push({ role: 'user', content: 'extra' });
    const second = aggregator.aggregate(memory, 'Agent', parser, template);
    const third = aggregator.aggregate(memory, 'Agent', parser, template);
    expect(second).toEqual(third);
    expect(second).toHaveLength(first.length - 1);
    expect(second[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(template).toEqual([{ role: 'system', content: 'Be brief.' }]);
    expect(fewShot).toEqual(fewShotBefore);
    expect(memory.save()).toEqual(memoryBefore);
  });
});

describe('DefaultAggregator', () => {
  it('never mutates a list template or memory across calls (the original grew a list template)', () => {
    const template: ChatMessage[] = [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'Context: ' },
    ];
    const memory = new Memory();
    memory.add(['hello', 'world']);
    const aggregator = new DefaultAggregator();
    const first = aggregator.aggregate(memory, 'Agent', undefined, template);
    const second = aggregator.aggregate(memory, 'Agent', undefined, template);
    expect(first).toEqual(second);
    expect(first.at(-1)).toEqual({ role: 'user', content: 'Context: helloworld' });
    expect(template).toEqual([
      { role: 'system', content: 'S' },
      { role: 'user', content: 'Context: ' },
    ]);
    expect(memory.getMemory().map((m) => m.content)).toEqual(['hello', 'world']);
  });

  it('renders a PromptTemplate (with bound variables) as the system message', () => {
    const template = new PromptTemplate('You are {role}.').partial({ role: 'a coder' });
    expect(new DefaultAggregator().aggregate(undefined, 'Agent', undefined, template)).toEqual([
      { role: 'system', content: 'You are a coder.' },
    ]);
  });
});
