import { Bench } from 'tinybench';
import { z } from 'zod';
import {
  ActionExecutor,
  AgentMessage,
  AsyncActionExecutor,
  asyncTool,
  DefaultAggregator,
  InternLMToolAggregator,
  Memory,
  ToolParser,
  tool,
} from '../src/index';
import type { Suite } from './report';

/** Mean time of one operation in µs; each task runs `batch` operations so timer resolution does not dominate. */
function perCall(bench: Bench, name: string, batch: number): number {
  const result = bench.getTask(name)?.result as { latency?: { mean: number } } | undefined;
  if (!result?.latency) throw new Error(`benchmark ${name} did not complete`);
  return (result.latency.mean * 1000) / batch;
}

/** A 4 kB (4,096-character) model response: a long thought, then a fenced Python call. */
function longResponse(): string {
  const code = 'def f(n):\n    return [d for d in range(1, n + 1) if n % d == 0]\nprint(f(63))\n'.repeat(6);
  const call = `\n\`\`\`python\n${code}\n\`\`\`\n`;
  const thought = '首先，我们分析题目。We factor 63 = 3^2 * 7 and list its divisors. '.repeat(80);
  return thought.slice(0, 4096 - call.length) + call;
}

/** A 1,000-message session: user question, agent tool call, tool result, agent answer, repeated. */
function longMemory(parser: ToolParser): Memory {
  const memory = new Memory();
  for (let i = 0; i < 250; i++) {
    const call = `Step ${i}: compute.\n\`\`\`python\nprint(${i} * ${i})\n\`\`\`\n`;
    memory.add([
      new AgentMessage({ sender: 'user', content: `question ${i}` }),
      new AgentMessage({ sender: 'Agent', content: call, formatted: parser.parseResponse(call) }),
      new AgentMessage({ sender: 'ActionExecutor', content: String(i * i) }),
      new AgentMessage({
        sender: 'Agent',
        content: `answer ${i}`,
        formatted: parser.parseResponse(`answer ${i}`),
      }),
    ]);
  }
  return memory;
}

/**
 * A 1,000-message session with native tool calls: user question, agent tool-call reply (two calls), the
 * executor's results, agent answer, repeated.
 */
function toolCallMemory(executor: ActionExecutor): Memory {
  const memory = new Memory();
  for (let i = 0; i < 250; i++) {
    const calls = new AgentMessage({
      sender: 'Agent',
      content: '',
      formatted: {
        toolCalls: [
          { id: `call_${i}_a`, name: 'echo', arguments: { text: `a${i}` } },
          { id: `call_${i}_b`, name: 'echo', arguments: `{"text": "b${i}"}` },
        ],
      },
    });
    memory.add([
      new AgentMessage({ sender: 'user', content: `question ${i}` }),
      calls,
      executor.call(calls),
      new AgentMessage({ sender: 'Agent', content: `answer ${i}` }),
    ]);
  }
  return memory;
}

export const run: Suite = async (report) => {
  const parser = new ToolParser({ toolType: 'code interpreter', begin: '```python\n', end: '\n```\n' });
  const response = longResponse();
  const echo = tool({ name: 'echo', parameters: z.object({ text: z.string() }), run: ({ text }) => text });
  const asyncEcho = asyncTool({
    name: 'echo',
    parameters: z.object({ text: z.string() }),
    run: async ({ text }) => text,
  });
  const executor = new ActionExecutor({ actions: [echo] });
  const asyncExecutor = new AsyncActionExecutor({ actions: [asyncEcho] });
  const call = new AgentMessage({ sender: 'Agent', content: { name: 'echo', parameters: { text: 'hi' } } });
  const memory = longMemory(parser);
  const toolMemory = toolCallMemory(executor);
  const internlm = new InternLMToolAggregator();
  const plain = new DefaultAggregator();
  const system = 'Solve the problem step by step with Python.';

  const small = 200;
  const large = 20;
  let sink = 0;
  const bench = new Bench({ time: 1_000, warmupTime: 300 });
  bench
    .add('parse', () => {
      for (let i = 0; i < small; i++) sink += parser.parseResponse(response).thought.length;
    })
    .add('sync', () => {
      for (let i = 0; i < small; i++) sink += executor.call(call, { sessionId: i }).sender.length;
    })
    .add('async', async () => {
      for (let i = 0; i < small; i++)
        sink += (await asyncExecutor.call(call, { sessionId: i })).sender.length;
    })
    .add('internlm', () => {
      for (let i = 0; i < large; i++) sink += internlm.aggregate(memory, 'Agent', parser, system).length;
    })
    .add('default', () => {
      for (let i = 0; i < large; i++) sink += plain.aggregate(memory, 'Agent', parser, system).length;
    })
    .add('default-tools', () => {
      for (let i = 0; i < large; i++) sink += plain.aggregate(toolMemory, 'Agent', parser, system).length;
    });
  await bench.run();
  if (sink < 0) console.log(sink);

  report({
    name: `ToolParser.parseResponse, ${response.length}-character response`,
    value: perCall(bench, 'parse', small),
    unit: 'µs',
  });
  report({
    name: 'ActionExecutor.call, trivial sync tool',
    value: perCall(bench, 'sync', small),
    unit: 'µs',
    target: 5,
  });
  report({
    name: 'AsyncActionExecutor.call, trivial async tool',
    value: perCall(bench, 'async', small),
    unit: 'µs',
    target: 5,
  });
  report({
    name: 'InternLMToolAggregator.aggregate, 1,000 messages',
    value: perCall(bench, 'internlm', large),
    unit: 'µs',
    target: 100,
  });
  report({
    name: 'DefaultAggregator.aggregate, 1,000 messages',
    value: perCall(bench, 'default', large),
    unit: 'µs',
    target: 100,
  });
  report({
    name: 'DefaultAggregator.aggregate, 1,000 messages with native tool calls (250 turns of 2 calls)',
    value: perCall(bench, 'default-tools', large),
    unit: 'µs',
    target: 100,
  });
};
