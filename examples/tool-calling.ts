/**
 * Consistency of Tool Calling: an ActionExecutor speaks AgentMessage like an agent. Its input's content is
 * `{ name, parameters }`; hooks convert messages before and after (CodeProcessor). Then a coder: an agent that
 * writes Python, an executor that runs it for real (`IPythonInteractive`, one
 * sandboxed Python process per session; a stand-in when Python is not installed), until the agent answers.
 * Runs on the built-in mock model, or on a real endpoint when OPENAI_API_KEY / OPENAI_BASE_URL is set.
 */
import {
  ActionExecutor,
  ActionReturn,
  ActionStatusCode,
  Agent,
  AgentMessage,
  type BaseLLM,
  type ForwardOptions,
  getPluginPrompt,
  Hook,
  type HookExecutor,
  InternLMToolAggregator,
  ToolParser,
  type ToolResponse,
  toolkit,
} from 'lagent-ts';
import { z } from 'zod';
import { describeModel, pickLLM } from './shared/model';
import { heading, isMain } from './shared/print';
import { pythonInterpreter } from './shared/python';

/** The real IPythonInteractive when Python runs here, else a stand-in that says how to get Python. */
let interpreter: ReturnType<typeof pythonInterpreter>;

/** The agent's parsed code becomes an interpreter call; the result becomes text. */
class CodeProcessor extends Hook {
  override beforeAction(_executor: HookExecutor, message: AgentMessage): AgentMessage {
    const call = message.clone();
    // The executor's input is any message; this one is the agent's reply, parsed by its ToolParser.
    const { action } = message.formatted as ToolResponse;
    call.content = { name: 'IPythonInteractive', parameters: { command: action } };
    return call;
  }

  override afterAction(_executor: HookExecutor, message: AgentMessage): AgentMessage {
    const result = message.content;
    if (result instanceof ActionReturn) {
      message.content = result.state === ActionStatusCode.SUCCESS ? result.formatResult() : result.errmsg;
    }
    return message;
  }
}

/** Writes code, runs it, reads the result, until there is no more code to run. */
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
      outputFormat: new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' }),
      // Tool results reach the model in the `environment` role, the agent's turns re-rendered by the parser.
      aggregator: new InternLMToolAggregator(),
    });
    this.executor = new ActionExecutor({ actions: [interpreter], hooks: [new CodeProcessor()] });
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

function executorBasics(): void {
  heading('An executor and a hook');
  const executor = new ActionExecutor({ actions: [interpreter], hooks: [new CodeProcessor()] });
  const botMessage = new AgentMessage({
    sender: 'Agent',
    content: '首先，我们需要... print(63 * 63)',
    formatted: {
      toolType: 'code interpreter',
      thought: '首先，我们需要...',
      action: 'x = 63\nprint(63 * 63)',
      status: 1,
    },
  });
  const reply = executor.call(botMessage);
  console.log(`${reply.sender}: ${reply.content}`);

  heading('Tools, toolkits and their errors (as data the model can act on)');
  const calculator = toolkit({
    name: 'Calculator',
    description: 'Exact arithmetic',
    apis: {
      add: {
        description: 'a + b',
        parameters: z.object({ a: z.number(), b: z.number() }),
        run: ({ a, b }) => a + b,
      },
      divide: {
        description: 'a / b',
        parameters: z.object({ a: z.number(), b: z.number() }),
        run: ({ a, b }) => {
          if (b === 0) throw new RangeError('cannot divide by zero');
          return a / b;
        },
      },
    },
  });
  const tools = new ActionExecutor({ actions: [calculator, interpreter] });
  const calls: [string, unknown][] = [
    ['Calculator.add', { a: 40, b: 2 }],
    ['Calculator.add', '```json\n{"a": 1.5, "b": 1}\n```'],
    ['Calculator.add', { a: 1 }],
    ['Calculator.add', { a: 1, b: 2, c: 3 }],
    ['Calculator.divide', { a: 1, b: 0 }],
    ['Calculator.power', { a: 2, b: 8 }],
    ['Calculater.add', { a: 1, b: 2 }],
  ];
  for (const [name, parameters] of calls) {
    const result = tools.forward(name, parameters);
    const text =
      result.state === ActionStatusCode.SUCCESS
        ? result.formatResult()
        : `error ${result.state}: ${result.errmsg}`;
    console.log(`${name}(${JSON.stringify(parameters)})\n  -> ${text}`);
  }
  console.log('\nwhat a plugin prompt shows the model (getPluginPrompt, first entry):');
  console.log(JSON.stringify(JSON.parse(getPluginPrompt([calculator, interpreter]))[0], null, 2));
}

function coderLoop(): void {
  heading('The Coder loop', describeModel());
  const llm = pickLLM([
    'The projection needs a dot product; let me compute the scale factor.\n```python\nprint(2 / (1 * 1 + -3 * -3))\n```\n',
    'The scale factor is 0.2, so the projection is $\\begin{pmatrix} 1/5 \\\\ -3/5 \\end{pmatrix}$.',
  ]);
  llm.genParams.stopWords.push('\n```\n');
  const coder = new Coder(llm, 'Solve the problem step by step with assistance of Python code');
  const answer = coder.call(
    new AgentMessage({
      sender: 'user',
      content:
        'Find the projection of $\\mathbf{a}$ onto $\\mathbf{b} = \\begin{pmatrix} 1 \\\\ -3 \\end{pmatrix}$ if $\\mathbf{a} \\cdot \\mathbf{b} = 2.$',
    }),
  );
  console.log(answer.content);
  console.log('-'.repeat(80));
  const state = coder.stateDict();
  console.log(`stateDict keys: ${Object.keys(state).join(', ')}`);
  for (const message of state['agent.memory'] ?? []) {
    console.log(`* ${message.sender}:\n${String(message.content).replace(/^/gm, '    ')}`);
  }
}

export function main(): void {
  interpreter = pythonInterpreter();
  try {
    executorBasics();
    coderLoop();
  } finally {
    interpreter.close();
  }
}

if (isMain(import.meta.url)) main();
