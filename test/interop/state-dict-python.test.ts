import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  ActionReturn,
  ActionStatusCode,
  Agent,
  AgentMessage,
  type AgentOptions,
  type BaseLLM,
  type ChatMessage,
  InternLMToolAggregator,
  InterpreterParser,
  MixedToolParser,
  PluginParser,
} from 'lagent-ts';
import { MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

// test/interop/lagent_state.py re-implements (stdlib only) Python Lagent's state-dict load, tool
// aggregation, continuation and save; see its docstring for exactly which parts.
const SCRIPT = fileURLToPath(new URL('./lagent_state.py', import.meta.url));

function hasPython(): boolean {
  try {
    return spawnSync('python3', ['-c', 'print(1)'], { encoding: 'utf8' }).stdout?.trim() === '1';
  } catch {
    return false;
  }
}

const PYTHON = hasPython();

/** A Lagent dump with `valid: 0` (OPEN, the default) left out of its ActionReturns, as lagent-ts writes them. */
function withoutDefaultValid(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutDefaultValid);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).filter(
    ([key, item]) => !(key === 'valid' && item === 0 && 'errmsg' in value && 'state' in value),
  );
  return Object.fromEntries(entries.map(([key, item]) => [key, withoutDefaultValid(item)]));
}
if (!PYTHON) {
  console.warn(
    'state-dict-python.test.ts: SKIPPED — python3 is not on PATH, so Lagent interop is not checked',
  );
}

const PLUGIN_BEGIN = '<|action_start|><|plugin|>\n';
const INTERPRETER_BEGIN = '<|action_start|><|interpreter|>\n';
const END = '<|action_end|>\n';
const PLUGIN_TURN = `Search it.${PLUGIN_BEGIN}{"name": "search", "parameters": {"q": "急"}}${END}`;
const TOOL_TURN = `Let me compute.${INTERPRETER_BEGIN}print(63 * 63)${END}`;

const ENVIRONMENT = { role: 'environment', begin: '<env>', end: '</env>' };
const TREE = {
  memory: { name: 'Coder', tool_agent: true, system: 'Solve it.' },
  'summarizer.memory': { name: 'Summarizer', system: 'Summarize.' },
};
const PARSERS = [
  { tool_type: 'plugin', begin: PLUGIN_BEGIN, end: END, json: true },
  { tool_type: 'interpreter', begin: INTERPRETER_BEGIN, end: END },
];

class Coder extends Agent {
  summarizer: Agent;
  constructor(options: AgentOptions<BaseLLM>, summaries: string[]) {
    super(options);
    this.summarizer = new Agent({
      llm: new MockLLM({ responses: summaries }),
      name: 'Summarizer',
      template: 'Summarize.',
    });
  }
}

function coder(responses: string[], summaries: string[] = []): { agent: Coder; llm: MockLLM } {
  const llm = new MockLLM({ responses });
  const agent = new Coder(
    {
      llm,
      name: 'Coder',
      template: 'Solve it.',
      aggregator: new InternLMToolAggregator({ environmentBegin: '<env>', environmentEnd: '</env>' }),
      outputFormat: new MixedToolParser({ parsers: [new PluginParser(), new InterpreterParser()] }),
    },
    summaries,
  );
  return { agent, llm };
}

/** A conversation with a plugin call, a failed and a successful ActionReturn, a text result and a sub-agent. */
function converse(): Coder {
  const { agent } = coder([PLUGIN_TURN, TOOL_TURN, 'Almost.', 'It is 3969.'], ['Summary.']);
  agent.call('What is 63 * 63?');
  agent.call(
    new AgentMessage({
      sender: 'ActionExecutor',
      content: new ActionReturn({
        args: { q: '急' },
        type: 'search',
        errmsg: 'search is down',
        state: ActionStatusCode.API_ERROR,
      }),
    }),
  );
  agent.call(
    new AgentMessage({
      sender: 'ActionExecutor',
      content: new ActionReturn({
        args: { command: 'print(63 * 63)' },
        type: 'IPythonInterpreter',
        result: [
          { type: 'text', content: '3969' },
          { type: 'image', content: '/tmp/plot.png' },
        ],
      }),
      extraInfo: { elapsedMs: 12 },
    }),
  );
  agent.call(
    new AgentMessage({ sender: 'ActionExecutor', content: 'checked: 3969', extraInfo: { step: 3 } }),
  );
  agent.summarizer.call(new AgentMessage({ content: 'It is 3969.', extraInfo: { from: 'Coder' } }));
  return agent;
}

interface PythonAnswer {
  loaded: Record<string, Record<string, unknown>[]>;
  prompts: Record<string, ChatMessage[]>;
  action_returns: { state: string; valid: string | null; text: string; errmsg: string | null }[];
  state: Record<string, Record<string, unknown>[]>;
  prompts_after: Record<string, ChatMessage[]>;
  error?: string;
  message?: string;
}

function runPython(request: Record<string, unknown>): { status: number | null; answer: PythonAnswer } {
  const run = spawnSync('python3', [SCRIPT], {
    input: JSON.stringify({ tree: TREE, parsers: PARSERS, environment: ENVIRONMENT, ...request }),
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (run.error) throw run.error;
  if (!run.stdout) throw new Error(`python3 wrote nothing: ${run.stderr}`);
  return { status: run.status, answer: JSON.parse(run.stdout) };
}

/**
 * Prompts compared across the languages: Lagent renders an environment turn with Python's `str()` of the
 * content (for a loaded ActionReturn, the repr of a dict), and a JSON action with `json.dumps`' `', '` and
 * `': '` separators; those two are normalised, everything else must match exactly.
 */
function comparable(prompt: ChatMessage[]): ChatMessage[] {
  return prompt.map((message) => {
    let content = (message.content ?? '').replace(/", "/g, '","').replace(/": /g, '":');
    if (message.role === 'environment' && !/^<env>checked/.test(content))
      content = '<env>(tool result)</env>';
    return { ...message, content };
  });
}

function prompt(agent: Agent): ChatMessage[] {
  return agent.aggregator.aggregate(agent.memory!.get(0), agent.name, agent.outputFormat, agent.template);
}

describe.skipIf(!PYTHON)(
  'state dicts interoperate with Python Lagent (python3 test/interop/lagent_state.py)',
  () => {
    it("Python loads our { format: 'lagent' } state, keeps every field, sees our prompt, and continues", () => {
      const agent = converse();
      const state = JSON.parse(JSON.stringify(agent.stateDict(0, { format: 'lagent' })));
      const { status, answer } = runPython({
        state,
        turns: [
          { key: 'memory', sender: 'user', text: 'And 64 * 64?' },
          { key: 'memory', sender: 'Coder', text: `${INTERPRETER_BEGIN}print(64 * 64)${END}` },
          {
            key: 'memory',
            sender: 'ActionExecutor',
            action_return: {
              args: { command: 'print(64 * 64)' },
              result: [{ type: 'text', content: '4096' }],
            },
          },
          { key: 'memory', sender: 'Coder', text: 'It is 4096.' },
        ],
      });
      expect(answer.error, answer.message).toBeUndefined();
      expect(status).toBe(0);
      // Nothing is dropped or changed by Lagent's AgentMessage(**message) and model_dump().
      expect(answer.loaded).toEqual(state);
      expect(answer.loaded.memory![4]!.extra_info).toEqual({ elapsedMs: 12 });
      expect(answer.loaded['summarizer.memory']![0]!.extra_info).toEqual({ from: 'Coder' });
      // Lagent's tool aggregator rebuilds the same conversation from formatted['tool_type'] etc.
      expect(comparable(answer.prompts.memory!)).toEqual(comparable(prompt(agent)));
      // The turn before it called no tool, so in both it has no tool name.
      expect(answer.prompts.memory!.find((m) => m.content === '<env>checked: 3969</env>')).toEqual({
        role: 'environment',
        content: '<env>checked: 3969</env>',
      });
      expect(answer.prompts.memory!.filter((m) => m.name === 'plugin')).toHaveLength(1);
      expect(answer.prompts['summarizer.memory']).toEqual(prompt(agent.summarizer));
      // Our ActionReturn dumps build Lagent's ActionReturn dataclass.
      expect(answer.action_returns).toEqual([
        { state: 'API_ERROR', valid: 'OPEN', text: '', errmsg: 'search is down' },
        { state: 'SUCCESS', valid: 'OPEN', text: '3969\n[image](/tmp/plot.png)', errmsg: null },
      ]);
      expect(answer.state.memory).toHaveLength(state.memory.length + 4);
    });

    it('Lagent-produced state loads into us and continues with the same prompt', () => {
      const { answer } = runPython({
        state: JSON.parse(JSON.stringify(converse().stateDict(0, { format: 'lagent' }))),
        turns: [
          { key: 'memory', sender: 'user', text: 'And 64 * 64?' },
          { key: 'memory', sender: 'Coder', text: `${INTERPRETER_BEGIN}print(64 * 64)${END}` },
          {
            key: 'memory',
            sender: 'ActionExecutor',
            action_return: {
              args: { command: 'print(64 * 64)' },
              result: [{ type: 'text', content: '4096' }],
            },
          },
          { key: 'memory', sender: 'Coder', text: 'It is 4096.' },
          { key: 'summarizer.memory', sender: 'user', text: 'It is 4096.' },
          { key: 'summarizer.memory', sender: 'Summarizer', text: 'Summary 2.' },
        ],
      });
      expect(answer.error, answer.message).toBeUndefined();
      const { agent, llm } = coder(['Done.']);
      agent.loadStateDict(answer.state as never);
      // The same state, field for field, when saved again in Lagent's shape (less an ActionReturn's
      // `valid` at its default, OPEN, which Lagent reads back as such).
      expect(JSON.parse(JSON.stringify(agent.stateDict(0, { format: 'lagent' })))).toEqual(
        withoutDefaultValid(answer.state),
      );
      const messages = agent.memory!.getMemory();
      const toolTurn = messages.at(-3)!;
      expect(toolTurn.formatted).toEqual({
        toolType: 'interpreter',
        thought: '',
        action: 'print(64 * 64)',
        status: 1,
      });
      const result = messages.at(-2)!.content as ActionReturn;
      expect(result).toBeInstanceOf(ActionReturn);
      expect(result.formatResult()).toBe('4096');
      expect(messages[4]!.extraInfo).toEqual({ elapsedMs: 12 });
      expect(comparable(prompt(agent))).toEqual(comparable(answer.prompts_after.memory!));
      expect(prompt(agent.summarizer)).toEqual(answer.prompts_after['summarizer.memory']);
      agent.call('Thanks!');
      expect(comparable(llm.calls[0]!.messages)).toEqual(
        comparable([...answer.prompts_after.memory!, { role: 'user', content: 'Thanks!' }]),
      );
    });

    it('our default (camelCase) state is what Lagent cannot continue from', () => {
      const state = JSON.parse(JSON.stringify(converse().stateDict()));
      const { status, answer } = runPython({ state });
      expect(status).toBe(1);
      expect(answer).toEqual({ error: 'KeyError', message: "'tool_type'" });
      // Without tool turns it loads, but extraInfo is silently dropped.
      const { answer: summarizer } = runPython({
        state: { 'summarizer.memory': state['summarizer.memory'] },
        tree: { 'summarizer.memory': TREE['summarizer.memory'] },
      });
      expect(summarizer.loaded['summarizer.memory']![0]!.extra_info).toBeNull();
    });

    it('a missing key is a KeyError in Lagent too', () => {
      const state = JSON.parse(JSON.stringify(converse().stateDict(0, { format: 'lagent' })));
      delete state['summarizer.memory'];
      const { status, answer } = runPython({ state });
      expect(status).toBe(1);
      expect(answer.error).toBe('KeyError');
    });
  },
);
