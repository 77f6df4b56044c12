import {
  ActionExecutor,
  ActionReturn,
  ActionStatusCode,
  Agent,
  AgentMessage,
  AsyncActionExecutor,
  AsyncAgent,
  type AsyncForwardOptions,
  type BaseLLM,
  type ForwardOptions,
  Hook,
  type HookExecutor,
  InternLMActionProcessor,
  InternLMToolAggregator,
  ToolParser,
  type ToolResponse,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** A stand-in for IPythonInteractive: "runs" `print(<a>*<b>)` and keeps one variable store per session. */
const python = tool({
  name: 'IPythonInteractive',
  description: 'Runs Python code in a notebook',
  parameters: z.object({ command: z.string().describe('Python source') }),
  run: ({ command }) => {
    const match = /print\((\d+)\s*\*\s*(\d+)\)/.exec(command);
    if (!match) throw new Error(`NameError: cannot run ${command}`);
    return String(Number(match[1]) * Number(match[2]));
  },
});

class CodeProcessor extends Hook {
  override beforeAction(_executor: HookExecutor, message: AgentMessage) {
    const copy = message.clone();
    // The executor's input is any message; this one is the agent's reply, parsed by its ToolParser.
    const { action } = message.formatted as ToolResponse;
    copy.content = { name: 'IPythonInteractive', parameters: { command: action } };
    return copy;
  }

  override afterAction(_executor: HookExecutor, message: AgentMessage) {
    const result = message.content;
    if (result instanceof ActionReturn) {
      message.content = result.state === ActionStatusCode.SUCCESS ? result.formatResult() : result.errmsg;
    }
    return message;
  }
}

const codeParser = () =>
  new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' });

class Coder extends Agent {
  agent: Agent<ToolResponse>;
  executor: ActionExecutor;

  constructor(
    llm: BaseLLM,
    systemPrompt: string,
    private readonly maxTurn = 3,
  ) {
    super();
    this.agent = new Agent({
      llm,
      template: systemPrompt,
      aggregator: new InternLMToolAggregator(),
      outputFormat: codeParser(),
    });
    this.executor = new ActionExecutor({ actions: [python], hooks: [new CodeProcessor()] });
  }

  override forward([message]: AgentMessage[], { sessionId }: ForwardOptions): AgentMessage {
    let current: AgentMessage = message!;
    for (let turn = 0; turn < this.maxTurn; turn++) {
      const reply = this.agent.call(current, { sessionId });
      if (reply.formatted.toolType === null) return reply;
      current = this.executor.call(reply, { sessionId });
    }
    return current;
  }
}

describe('the Coder loop', () => {
  it('tool call -> executor -> environment message -> answer', () => {
    const llm = new MockLLM({
      responses: ['Let me compute.\n```python\nprint(63 * 63)\n```\nignored', 'The product is 3969.'],
      stopWords: ['\n```\n'],
    });
    const coder = new Coder(llm, 'Solve the problem step by step with Python.');
    const answer = coder.call(new AgentMessage({ sender: 'user', content: 'What is 63 * 63?' }));

    expect(answer.content).toBe('The product is 3969.');
    expect(answer.sender).toBe('Agent');
    llm.assertComplete();
    expect(llm.calls[1]!.messages).toEqual([
      { role: 'system', content: 'Solve the problem step by step with Python.' },
      { role: 'user', content: 'What is 63 * 63?' },
      { role: 'assistant', content: 'Let me compute.\n```python\nprint(63 * 63)\n```\n' },
      { role: 'environment', content: '3969', name: 'code interpreter' },
    ]);

    const state = coder.stateDict();
    expect(Object.keys(state).sort()).toEqual(['agent.memory', 'memory']);
    expect(state['agent.memory']!.map((m) => m.sender)).toEqual(['user', 'Agent', 'ActionExecutor', 'Agent']);
    expect(state['agent.memory']![2]!.content).toBe('3969');
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
  });

  it('feeds tool errors back to the model and stops after maxTurn', () => {
    const llm = new MockLLM({ responses: () => 'Try.\n```python\nundefined_name' });
    const coder = new Coder(llm, 'Use Python.', 2);
    const last = coder.call('go');
    expect(last.sender).toBe('ActionExecutor');
    expect(last.content).toBe('NameError: cannot run undefined_name');
    expect(llm.calls).toHaveLength(2);
    expect(llm.calls[1]!.messages.at(-1)).toEqual({
      role: 'environment',
      content: 'NameError: cannot run undefined_name',
      name: 'code interpreter',
    });
  });

  it('runs concurrently per session with async parts and InternLMActionProcessor', async () => {
    class AsyncCoder extends AsyncAgent {
      agent = new AsyncAgent({
        llm: new AsyncMockLLM({
          responses: (messages) =>
            messages.at(-1)!.role === 'environment'
              ? `Answer: ${messages.at(-1)!.content}`
              : `Code.\n\`\`\`python\nprint(${messages.at(-1)!.content} * 2)\n\`\`\`\n`,
          latencyMs: 5,
        }),
        aggregator: new InternLMToolAggregator(),
        outputFormat: codeParser(),
      });
      executor = new AsyncActionExecutor({ actions: [python], hooks: [new InternLMActionProcessor()] });

      override async forward([message]: AgentMessage[], { sessionId }: AsyncForwardOptions) {
        let current: AgentMessage = message!;
        for (let turn = 0; turn < 3; turn++) {
          const reply = await this.agent.call(current, { sessionId });
          if (reply.formatted.toolType === null) return reply;
          current = await this.executor.call(reply, { sessionId });
        }
        return current;
      }
    }
    const coder = new AsyncCoder();
    const answers = await Promise.all([1, 2, 3].map((n) => coder.call(String(n), { sessionId: n })));
    expect(answers.map((answer) => answer.content)).toEqual(['Answer: 2', 'Answer: 4', 'Answer: 6']);
    expect(coder.stateDict(2)['agent.memory']!.map((m) => m.content)).toEqual([
      '2',
      'Code.\n```python\nprint(2 * 2)\n```\n',
      '4',
      'Answer: 4',
    ]);
  });
});
