import {
  ActionPreprocessor,
  type AgentMessage,
  AsyncReAct,
  asyncTool,
  Hook,
  type HookAgent,
  PromptTemplate,
  REACT_PROMPTS,
  ReAct,
  reactOutputFormat,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const calculator = tool({
  name: 'Calculator',
  description: 'Adds two numbers',
  parameters: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }) => a + b,
});

const call = (a: number, b: number, name = 'Calculator') =>
  JSON.stringify({ thought_process: `add ${a} and ${b}`, action: { name, parameters: { a, b } } });
const finish = (answer: string) => JSON.stringify({ thought_process: 'done', conclusion: answer });

describe('ReAct', () => {
  it('sends Lagent-format prompts: tools and both JSON formats in the system message, results as user turns', () => {
    const llm = new MockLLM({ responses: [call(1, 2), finish('3')] });
    const agent = new ReAct({ llm, actions: [calculator], language: 'en' });
    const reply = agent.call('What is 1 + 2?');

    expect(reply.content).toBe(finish('3'));
    expect(reply.formatted).toEqual({ thought_process: 'done', conclusion: '3' });
    const [first, second] = llm.calls;
    const system = first!.messages[0]!;
    expect(system.role).toBe('system');
    const prompts = REACT_PROMPTS.en;
    expect(system.content).toBe(
      new PromptTemplate(prompts.template).format({
        action_info:
          '[{"name": "Calculator", "description": "Adds two numbers", "parameters": [{"name": "a", "type": "FLOAT", "description": ""}, {"name": "b", "type": "FLOAT", "description": ""}], "required": ["a", "b"], "parameter_description": "If you call this tool, you must pass arguments in the JSON format {key: value}, where the key is the parameter name."}]',
        output_format: reactOutputFormat('en').formatInstruction(),
      }),
    );
    expect(system.content).toContain('"thought_process": "string",  // required');
    expect(system.content).toContain('"conclusion": "string"  // required');
    expect(first!.messages.slice(1)).toEqual([{ role: 'user', content: 'What is 1 + 2?' }]);
    expect(second!.messages.slice(1)).toEqual([
      { role: 'user', content: 'What is 1 + 2?' },
      { role: 'assistant', content: call(1, 2) },
      { role: 'user', content: '3' },
    ]);
    llm.assertComplete();
  });

  it('uses the Chinese prompts by default, as Lagent does', () => {
    const llm = new MockLLM({ responses: [finish('hi')] });
    new ReAct({ llm, actions: calculator }).call('hi');
    expect(llm.calls[0]!.messages[0]!.content).toContain('你是一个能够调用外部工具的助手');
    expect(llm.calls[0]!.messages[0]!.content).toContain(REACT_PROMPTS.zh.fields.conclusion);
  });

  it('keeps the tool turns in the select agent memory and the answer in its own', () => {
    const llm = new MockLLM({ responses: [call(1, 2), finish('3')] });
    const agent = new ReAct({ llm, actions: [calculator] });
    agent.call('What is 1 + 2?');
    const state = agent.stateDict();
    expect(Object.keys(state)).toEqual(['memory', 'selectAgent.memory']);
    expect(state.memory!.map((m) => m.content)).toEqual(['What is 1 + 2?', finish('3')]);
    expect(state['selectAgent.memory']!.map((m) => [m.sender, m.content])).toEqual([
      ['user', 'What is 1 + 2?'],
      ['Agent', call(1, 2)],
      ['ActionExecutor', '3'],
      ['Agent', finish('3')],
    ]);
  });

  it('answers malformed output with a NoAction turn the model sees, never a throw', () => {
    const llm = new MockLLM({
      responses: ['this is not JSON', '{"thought_process": "hmm"}', finish('ok')],
    });
    const agent = new ReAct({ llm, actions: [calculator], language: 'en' });
    expect(agent.call('go').formatted).toEqual({ thought_process: 'done', conclusion: 'ok' });
    const second = llm.calls[1]!.messages.at(-1)!;
    expect(second.role).toBe('user');
    expect(second.content).toMatch(
      /^Your reply could not be read \(JSONParser: the output is not valid JSON/,
    );
    const third = llm.calls[2]!.messages.at(-1)!.content;
    expect(third).toMatch(/could not be read \(JSONParser: the output does not match the schema/);
    const memory = agent.selectAgent.memory!.getMemory();
    expect(memory[1]!.formatted).toEqual({ parseError: expect.stringContaining('not valid JSON') });
  });

  it('answers a call of an unknown tool with an InvalidAction turn', () => {
    const llm = new MockLLM({ responses: [call(1, 2, 'Calculater'), finish('ok')] });
    new ReAct({ llm, actions: [calculator] }).call('go');
    expect(llm.calls[1]!.messages.at(-1)!.content).toBe(
      'There is no tool named "Calculater". Available tools: Calculator.',
    );
  });

  it('stops after maxTurn model turns with a reply that says so', () => {
    const llm = new MockLLM({ responses: [call(1, 2), call(3, 4)] });
    const agent = new ReAct({ llm, actions: [calculator], maxTurn: 2 });
    const reply = agent.call('loop');
    expect(llm.calls).toHaveLength(2);
    expect(reply.sender).toBe('ReAct');
    expect(reply.content).toBe(
      'ReAct stopped after 2 turns (maxTurn) without a final answer. The last tool result was:\n7',
    );
    expect(reply.extraInfo).toEqual({ maxTurnReached: true, maxTurn: 2 });
    llm.assertComplete();
  });

  it('defaults maxTurn to 5 and refuses a bound that is not a positive integer', () => {
    const llm = new MockLLM({ responses: Array.from({ length: 5 }, () => call(1, 1)) });
    const agent = new ReAct({ llm, actions: [calculator] });
    expect(agent.maxTurn).toBe(5);
    expect(agent.call('loop').extraInfo).toEqual({ maxTurnReached: true, maxTurn: 5 });
    expect(llm.calls).toHaveLength(5);
    for (const maxTurn of [0, 1.5, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => new ReAct({ llm, actions: [calculator], maxTurn })).toThrow(
        /maxTurn must be a positive integer/,
      );
    }
  });

  it('finishes when finishCondition says so', () => {
    const llm = new MockLLM({ responses: [call(1, 2)] });
    const agent = new ReAct({
      llm,
      actions: [calculator],
      finishCondition: (message) => String(message.content).includes('add 1'),
    });
    expect(agent.call('go').content).toBe(call(1, 2));
    expect(llm.calls).toHaveLength(1);
  });

  it('formats a template of its own once, and never changes it or the prompt across calls', () => {
    const template = new PromptTemplate('Tools: {action_info}\n\n{output_format}');
    const outputFormat = reactOutputFormat('en');
    const instruction = outputFormat.formatInstruction();
    const llm = new MockLLM({ responses: [finish('a'), call(1, 1), finish('b')] });
    const agent = new ReAct({ llm, actions: [calculator], template, outputFormat });
    agent.call('one');
    agent.call('two');
    const systems = llm.calls.map((c) => c.messages[0]);
    expect(String(systems[0]!.content).startsWith('Tools: [{"name": "Calculator"')).toBe(true);
    expect(systems[1]).toEqual(systems[0]);
    expect(systems[2]).toEqual(systems[0]);
    expect(template.template).toBe('Tools: {action_info}\n\n{output_format}');
    expect(template.missingVariables).toEqual(['action_info', 'output_format']);
    expect(outputFormat.formatInstruction()).toBe(instruction);
  });

  it('accepts a template without the placeholders', () => {
    const llm = new MockLLM({ responses: [finish('a')] });
    new ReAct({ llm, actions: [calculator], template: 'Be brief.' }).call('x');
    expect(llm.calls[0]!.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
  });

  it('runs its own hooks around the call, and actionHooks in the executor', () => {
    const seen: string[] = [];
    class Watch extends Hook {
      override afterAgent(agent: HookAgent, message: AgentMessage) {
        seen.push(`${agent.name}:${(message.formatted as { conclusion?: string } | null)?.conclusion}`);
      }
    }
    class Count extends ActionPreprocessor {
      override afterAction(...args: Parameters<ActionPreprocessor['afterAction']>) {
        seen.push('action');
        return super.afterAction(...args);
      }
    }
    const llm = new MockLLM({ responses: [call(1, 2), finish('3')] });
    const agent = new ReAct({ llm, actions: [calculator], hooks: [new Watch()], actionHooks: [new Count()] });
    agent.call('go');
    expect(seen).toEqual(['action', 'ReAct:3']);
  });

  it('has the select agent as a sub-agent and gives it the memory and aggregator options', () => {
    const llm = new MockLLM({ responses: [call(1, 2), finish('3')] });
    const agent = new ReAct({ llm, actions: [calculator], memory: { recentN: 2 } });
    expect(agent.children().map(([name]) => name)).toEqual(['selectAgent']);
    agent.call('go');
    expect(llm.calls[1]!.messages.slice(1)).toEqual([
      { role: 'assistant', content: call(1, 2) },
      { role: 'user', content: '3' },
    ]);
  });

  it('takes back every turn of a failed call', () => {
    const llm = new MockLLM({ responses: [call(1, 2)] });
    const agent = new ReAct({ llm, actions: [calculator] });
    expect(() => agent.call('go')).toThrow();
    expect(agent.stateDict()).toEqual({ memory: [], 'selectAgent.memory': [] });
  });
});

describe('AsyncReAct', () => {
  const slowAdd = asyncTool({
    name: 'Calculator',
    description: 'Adds two numbers',
    parameters: z.object({ a: z.number(), b: z.number() }),
    run: async ({ a, b }) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return a + b;
    },
  });

  it('runs async tools and keeps sessions apart', async () => {
    const llm = new AsyncMockLLM({
      latencyMs: 5,
      responses: (messages) => {
        const last = String(messages.at(-1)!.content);
        if (last.startsWith('q')) return call(Number(last.slice(1)), 100);
        return finish(last);
      },
    });
    const agent = new AsyncReAct({ llm, actions: [slowAdd] });
    const replies = await Promise.all([
      agent.call('q1', { sessionId: 1 }),
      agent.call('q2', { sessionId: 2 }),
    ]);
    expect(replies.map((reply) => reply.formatted)).toEqual([
      { thought_process: 'done', conclusion: '101' },
      { thought_process: 'done', conclusion: '102' },
    ]);
    for (const [session, question] of [
      [1, 'q1'],
      [2, 'q2'],
    ] as const) {
      const turns = agent.stateDict(session)['selectAgent.memory']!.map((m) => m.content);
      expect(turns[0]).toBe(question);
      expect(turns).toHaveLength(4);
    }
    for (const request of llm.calls) {
      const users = request.messages.filter((m) => m.role === 'user').map((m) => m.content);
      expect(users.includes('q1') && users.includes('q2')).toBe(false);
    }
  });

  it('stops at maxTurn and takes back an aborted call', async () => {
    const llm = new AsyncMockLLM({ responses: () => call(1, 1), latencyMs: 5 });
    const agent = new AsyncReAct({ llm, actions: [slowAdd], maxTurn: 3 });
    const reply = await agent.call('loop');
    expect(reply.content).toMatch(/^AsyncReAct stopped after 3 turns/);
    expect(llm.calls).toHaveLength(3);
    agent.reset(0, { recursive: true });
    const controller = new AbortController();
    const pending = agent.call('loop', { signal: controller.signal });
    setTimeout(() => controller.abort(), 8);
    await expect(pending).rejects.toThrow();
    expect(agent.stateDict()).toEqual({ memory: [], 'selectAgent.memory': [] });
  });
});
