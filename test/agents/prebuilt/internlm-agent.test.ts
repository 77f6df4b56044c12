import {
  AgentForInternLM,
  type AgentMessage,
  AsyncAgentForInternLM,
  asyncTool,
  getPluginPrompt,
  Hook,
  type HookAgent,
  INTERNLM_PROMPTS,
  InternLMActionProcessor,
  InternLMToolAggregator,
  internLMOutputFormat,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { interpreterCall, pluginCall } from '../../helpers/internlm-replies';
import { calculator, fakePython } from '../../helpers/tools';

describe('AgentForInternLM', () => {
  it("sends InternLM's protocol: the instructions as named system messages, results in the environment role", () => {
    const llm = new MockLLM({
      responses: [pluginCall('Calculator.add', { a: 2, b: 3 }), interpreterCall('print(5)'), 'It is 5.'],
    });
    const agent = new AgentForInternLM({ llm, plugins: [calculator], interpreter: fakePython });
    const reply = agent.call('2 + 3?');

    expect(reply.content).toBe('It is 5.');
    expect(reply.formatted).toEqual({ toolType: null, thought: 'It is 5.', action: null, status: 0 });
    const zh = INTERNLM_PROMPTS.zh;
    expect(llm.calls[2]!.messages).toEqual([
      { role: 'system', content: zh.meta },
      {
        role: 'system',
        content: zh.plugin.replace('{prompt}', getPluginPrompt([calculator])),
        name: 'plugin',
      },
      { role: 'system', content: zh.interpreter, name: 'interpreter' },
      { role: 'user', content: '2 + 3?' },
      {
        role: 'assistant',
        content:
          'Let me use a tool.<|action_start|><|plugin|>\n{"name": "Calculator.add", "parameters": {"a": 2, "b": 3}}<|action_end|>\n',
      },
      { role: 'environment', content: '5', name: 'plugin' },
      { role: 'assistant', content: interpreterCall('print(5)') },
      { role: 'environment', content: 'ran print(5)', name: 'interpreter' },
    ]);
    llm.assertComplete();
  });

  it('speaks English with language: "en" and shows only the instructions of the tools it has', () => {
    const llm = new MockLLM({ responses: ['hi'] });
    new AgentForInternLM({ llm, plugins: calculator, language: 'en', template: 'Be kind.' }).call('hi');
    expect(llm.calls[0]!.messages.slice(0, 3)).toEqual([
      { role: 'system', content: 'Be kind.' },
      { role: 'system', content: INTERNLM_PROMPTS.en.meta },
      {
        role: 'system',
        content: INTERNLM_PROMPTS.en.plugin.replace('{prompt}', getPluginPrompt([calculator])),
        name: 'plugin',
      },
    ]);
    expect(llm.calls[0]!.messages.some((m) => m.name === 'interpreter')).toBe(false);
  });

  it('keeps the tool turns in the inner agent memory; stateDict keys are memory and agent.memory', () => {
    const llm = new MockLLM({ responses: [interpreterCall('x = 1'), 'done'] });
    const agent = new AgentForInternLM({ llm, interpreter: fakePython });
    agent.call('go');
    const state = agent.stateDict();
    expect(Object.keys(state)).toEqual(['memory', 'agent.memory']);
    expect(state.memory!.map((m) => m.content)).toEqual(['go', 'done']);
    expect(state['agent.memory']!.map((m) => [m.sender, m.content])).toEqual([
      ['user', 'go'],
      ['Agent', interpreterCall('x = 1')],
      ['ActionExecutor', 'ran x = 1'],
      ['Agent', 'done'],
    ]);
  });

  it.each([
    [
      'bad plugin JSON',
      'Hmm.<|action_start|><|plugin|>\n{"name": "Calculator.add", parameters}<|action_end|>\n',
      /^The plugin call could not be parsed: .*Please follow the format\.$/s,
    ],
    [
      'an unknown plugin',
      pluginCall('Calculator.power', { a: 2, b: 8 }),
      /^invalid API: Calculator has no API "power" \(it has: add\)$/,
    ],
    [
      'an unknown tool',
      pluginCall('Search', { q: 'x' }),
      /^There is no tool named "Search"\. Available tools: Calculator\.$/,
    ],
    [
      'a kind of tool the agent lacks',
      interpreterCall('print(1)'),
      /^There is no tool named "interpreter"\.$/,
    ],
    [
      'a stray marker',
      'I will call <|plugin|> now',
      /^The reply has <\|plugin\|> but no complete tool call\./,
    ],
  ])('answers %s with a turn the model sees, never a throw', (_what, response, expected) => {
    const llm = new MockLLM({ responses: [response, 'ok'] });
    const agent = new AgentForInternLM({ llm, plugins: [calculator] });
    expect(agent.call('go').content).toBe('ok');
    const result = llm.calls[1]!.messages.at(-1)!;
    expect(result.role).toBe('environment');
    expect(result.content).toMatch(expected);
  });

  it('stops after maxTurn (4 by default) with a reply that says so', () => {
    const llm = new MockLLM({ responses: () => interpreterCall('print(1)') });
    const agent = new AgentForInternLM({ llm, interpreter: fakePython });
    const reply = agent.call('loop');
    expect(llm.calls).toHaveLength(4);
    expect(reply.content).toBe(
      'AgentForInternLM stopped after 4 turns (maxTurn) without a final answer. The last tool result was:\nran print(1)',
    );
    expect(reply.extraInfo).toEqual({ maxTurnReached: true, maxTurn: 4 });
    const limited = new AgentForInternLM({ llm, interpreter: fakePython, maxTurn: 1 });
    limited.call('loop');
    expect(llm.calls).toHaveLength(5);
  });

  it('keeps sessions apart', () => {
    const llm = new MockLLM({
      responses: (messages) => `seen ${messages.filter((m) => m.role === 'user').length}`,
    });
    const agent = new AgentForInternLM({ llm, interpreter: fakePython });
    agent.call('a', { sessionId: 1 });
    agent.call('b', { sessionId: 2 });
    agent.call('c', { sessionId: 1 });
    expect(agent.stateDict(1).memory!.map((m) => m.content)).toEqual(['a', 'seen 1', 'c', 'seen 2']);
    expect(agent.stateDict(2).memory!.map((m) => m.content)).toEqual(['b', 'seen 1']);
  });

  it('never changes its template, output format or aggregator across calls', () => {
    const template = [{ role: 'system', content: 'Be kind.' }];
    const outputFormat = internLMOutputFormat({ plugins: [calculator], language: 'en' });
    const instruction = JSON.stringify(outputFormat.formatInstruction());
    const aggregator = new InternLMToolAggregator({
      fewShot: [
        [
          { role: 'user', content: 'example' },
          { role: 'assistant', content: 'example answer' },
        ],
      ],
    });
    const llm = new MockLLM({ responses: [pluginCall('Calculator.add', { a: 1, b: 1 }), 'two', 'again'] });
    const agent = new AgentForInternLM({ llm, plugins: [calculator], template, outputFormat, aggregator });
    agent.call('one');
    agent.call('two');
    const heads = llm.calls.map((c) => c.messages.slice(0, 5));
    expect(heads[1]).toEqual(heads[0]);
    expect(heads[2]).toEqual(heads[0]);
    expect(template).toEqual([{ role: 'system', content: 'Be kind.' }]);
    expect(JSON.stringify(outputFormat.formatInstruction())).toBe(instruction);
    expect(aggregator.fewShot[0]).toHaveLength(2);
  });
});

describe('AgentForInternLM as an ordinary agent', () => {
  it('has its inner agent as a sub-agent, and runs its own hooks and the action hooks', () => {
    const seen: string[] = [];
    class Watch extends Hook {
      override beforeAgent(agent: HookAgent) {
        seen.push(`before ${agent.name}`);
      }
      override afterAgent(agent: HookAgent, message: AgentMessage) {
        seen.push(`after ${agent.name}: ${message.content}`);
      }
    }
    class Upper extends InternLMActionProcessor {
      override afterAction(...args: Parameters<InternLMActionProcessor['afterAction']>) {
        const message = super.afterAction(...args);
        message.content = String(message.content).toUpperCase();
        return message;
      }
    }
    const llm = new MockLLM({ responses: [interpreterCall('x'), 'done'] });
    const agent = new AgentForInternLM({
      llm,
      interpreter: fakePython,
      hooks: [new Watch()],
      actionHooks: [new Upper()],
    });
    expect(agent.children().map(([name]) => name)).toEqual(['agent']);
    expect(String(agent)).toBe(
      "AgentForInternLM(name='AgentForInternLM')(\n  (agent): Agent(name='Agent')\n)",
    );
    agent.call('go');
    expect(seen).toEqual(['before AgentForInternLM', 'after AgentForInternLM: done']);
    expect(llm.calls[1]!.messages.at(-1)!.content).toBe('RAN X');
  });

  it("gives a session's tool turns as a few-shot dialog (getSteps), which an aggregator renders back", () => {
    const llm = new MockLLM({ responses: [pluginCall('Calculator.add', { a: 2, b: 3 }), 'It is 5.', 'ok'] });
    const agent = new AgentForInternLM({ llm, plugins: [calculator] });
    agent.call('2 + 3?');
    const steps = agent.getSteps();
    expect(steps).toEqual([
      { role: 'thought', content: 'Let me use a tool.' },
      { role: 'tool', content: '{"name": "Calculator.add", "parameters": {"a": 2, "b": 3}}', name: 'plugin' },
      { role: 'environment', content: '5', name: 'plugin' },
      { role: 'thought', content: 'It is 5.' },
    ]);
    const student = new AgentForInternLM({
      llm,
      plugins: [calculator],
      aggregator: new InternLMToolAggregator({ fewShot: [[{ role: 'user', content: '2 + 3?' }, ...steps]] }),
    });
    student.call('4 + 4?');
    expect(llm.calls[2]!.messages.slice(2)).toEqual([
      { role: 'user', content: '2 + 3?' },
      {
        role: 'assistant',
        content:
          'Let me use a tool.<|action_start|><|plugin|>\n{"name": "Calculator.add", "parameters": {"a": 2, "b": 3}}<|action_end|>\n',
      },
      { role: 'environment', content: '5', name: 'plugin' },
      { role: 'assistant', content: 'It is 5.' },
      { role: 'user', content: '4 + 4?' },
    ]);
  });

  it('asks the model to follow the format when a reply calls no tool but finishCondition wants more', () => {
    const llm = new MockLLM({ responses: ['maybe 5', 'The answer is \\boxed{5}'] });
    const agent = new AgentForInternLM({
      llm,
      interpreter: fakePython,
      finishCondition: (message) => String(message.content).includes('\\boxed'),
    });
    expect(agent.call('go').content).toBe('The answer is \\boxed{5}');
    expect(llm.calls[1]!.messages.at(-1)).toEqual({
      role: 'environment',
      content: 'Please follow the format',
    });
  });
});

describe('AsyncAgentForInternLM', () => {
  const slowPython = asyncTool({
    name: 'AsyncPython',
    description: 'Runs Python code',
    parameters: z.object({ command: z.string() }),
    run: async ({ command }) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return `ran ${command}`;
    },
  });

  it('runs async tools, sessions concurrently and apart', async () => {
    const llm = new AsyncMockLLM({
      latencyMs: 5,
      responses: (messages) => {
        const last = messages.at(-1)!;
        return last.role === 'user'
          ? interpreterCall(`print("${last.content}")`)
          : `answer to ${last.content}`;
      },
    });
    const agent = new AsyncAgentForInternLM({ llm, interpreter: slowPython });
    const replies = await Promise.all(['a', 'b'].map((q, i) => agent.call(q, { sessionId: i })));
    expect(replies.map((r) => r.content)).toEqual(['answer to ran print("a")', 'answer to ran print("b")']);
    expect(agent.stateDict(1)['agent.memory']).toHaveLength(4);
  });

  it('takes back every turn of an aborted call', async () => {
    const llm = new AsyncMockLLM({ latencyMs: 20, responses: () => interpreterCall('print(1)') });
    const agent = new AsyncAgentForInternLM({ llm, interpreter: slowPython });
    await expect(agent.call('go', { signal: AbortSignal.timeout(30) })).rejects.toThrow();
    expect(agent.stateDict()).toEqual({ memory: [], 'agent.memory': [] });
  });
});
