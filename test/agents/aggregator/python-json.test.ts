import {
  ActionReturn,
  ActionStatusCode,
  AgentMessage,
  DefaultAggregator,
  InternLMToolAggregator,
  InterpreterParser,
  Memory,
  MixedToolParser,
  PluginParser,
  ToolStatusCode,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';

const parser = new MixedToolParser({ parsers: [new PluginParser(), new InterpreterParser()] });

/** What Python Lagent prints for the DataVisualizer call below (json.dumps, ensure_ascii=False). */
const LAGENT_CALL =
  '{"name": "DataVisualizer", "parameters": {"title": "月度销量", "data": [{"月份": "一月", "销量": 120}, {"月份": "二月", "销量": 98.5}], "stacked": false}}';

function memoryWith(...messages: AgentMessage[]): Memory {
  const memory = new Memory();
  memory.add(messages);
  return memory;
}

describe("tool calls and results in prompts use Python's json.dumps form", () => {
  it('renders a parsed plugin call as Lagent does, non-ASCII kept', () => {
    const call = JSON.parse(LAGENT_CALL);
    const memory = memoryWith(
      new AgentMessage({ sender: 'user', content: '画出月度销量' }),
      new AgentMessage({
        sender: 'Agent',
        content: 'raw',
        formatted: {
          toolType: 'plugin',
          thought: '我来画图。',
          action: call,
          status: ToolStatusCode.VALID_TOOL,
        },
      }),
      new AgentMessage({ sender: 'ActionExecutor', content: { chart: 'chart.png', points: [1, 2.5] } }),
    );
    const messages = new InternLMToolAggregator().aggregate(memory, 'Agent', parser);
    expect(messages.at(-2)).toEqual({
      role: 'assistant',
      content: `我来画图。<|action_start|><|plugin|>\n${LAGENT_CALL}<|action_end|>\n`,
    });
    expect(messages.at(-1)).toEqual({
      role: 'environment',
      content: '{"chart": "chart.png", "points": [1, 2.5]}',
      name: 'plugin',
    });
  });

  it('renders few-shot tool calls given as objects the same way', () => {
    const aggregator = new InternLMToolAggregator({
      fewShot: [
        [
          { role: 'user', content: '画图' },
          { role: 'thought', content: '好的。' },
          { role: 'tool', content: JSON.parse(LAGENT_CALL) as never, name: 'plugin' },
          { role: 'environment', content: 'done', name: 'plugin' },
        ],
      ],
    });
    const messages = aggregator.aggregate(new Memory(), 'Agent', parser);
    expect(messages).toContainEqual({
      role: 'assistant',
      content: `好的。<|action_start|><|plugin|>\n${LAGENT_CALL}<|action_end|>\n`,
    });
  });

  it('shows the error of a failed call, in both aggregators', () => {
    const failed = new ActionReturn({
      errmsg: 'city not found',
      state: ActionStatusCode.API_ERROR,
      result: [{ type: 'text', content: 'partial' }],
    });
    const silent = new ActionReturn({ state: ActionStatusCode.API_ERROR });
    const memory = memoryWith(
      new AgentMessage({ sender: 'ActionExecutor', content: failed }),
      new AgentMessage({ sender: 'Agent', content: 'next' }),
      new AgentMessage({ sender: 'ActionExecutor', content: silent }),
    );
    const tool = new InternLMToolAggregator().aggregate(memory, 'Agent', parser);
    expect(tool.map((message) => message.content).slice(-3)).toEqual([
      'city not found',
      'next',
      `The tool call failed (state ${ActionStatusCode.API_ERROR}).`,
    ]);
    const plain = new DefaultAggregator().aggregate(memory, 'Agent');
    expect(plain[0]).toEqual({ role: 'user', content: 'city not found' });
  });

  it('never throws on content JSON cannot write', () => {
    const cyclic: Record<string, unknown> = { big: 2n ** 64n, set: new Set(['a']) };
    cyclic.self = cyclic;
    const memory = memoryWith(new AgentMessage({ sender: 'ActionExecutor', content: cyclic }));
    const expected = '{"big": 18446744073709551616, "set": ["a"], "self": "[Circular]"}';
    expect(new InternLMToolAggregator().aggregate(memory, 'Agent', parser).at(-1)?.content).toBe(expected);
    expect(new DefaultAggregator().aggregate(memory, 'Agent').at(-1)?.content).toBe(expected);
  });
});
