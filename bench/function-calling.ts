import { alternating, median } from './competitors/processes';
import { TOOL_FRAMEWORKS } from './competitors/tool-contenders';
import type { Suite } from './report';

/** Fresh processes per framework; the frameworks take turns: lagent, ai, agents, langgraph, lagent, ... */
const PROCESSES = 3;

const list = (values: number[]) => values.map((value) => value.toFixed(2)).join(', ');

/**
 * One function-calling turn with one tool call against a zero-latency scripted model: the model asks
 * for `Weather({ city: 'Paris' })`, the framework runs the tool (synchronous, zod-checked arguments) and
 * sends its result back, the model answers with text. lagent-ts: `AsyncFunctionCallingAgent.call` on
 * `AsyncMockLLM`; the AI SDK: `generateText` with one `tool()` and `stopWhen: isStepCount(2)`; OpenAI
 * Agents JS: `Runner.run` with one `tool()`, tracing off; LangGraph.js: `graph.invoke` on a
 * `StateGraph(MessagesAnnotation)` with an agent node (scripted `BaseChatModel`, `bindTools`) and a
 * `ToolNode` running one `tool()` with a zod schema, routed by `toolsCondition`, compiled with a
 * `MemorySaver` (`thread_id` = the session id). A new session every turn, sessions dropped
 * every 10,000 turns. Each framework in its own process (`competitors/runner.ts`, scenario `tool-turn`):
 * 3 processes per framework, started in turn, each warming up for 1.5 s and reporting the median of 60
 * measured rounds. Figures are medians over the processes; ratios are ratios of those medians.
 */
export const run: Suite = async (report) => {
  const results = await alternating(TOOL_FRAMEWORKS, 'tool-turn', PROCESSES);
  const medians = (framework: keyof typeof results) => results[framework].map((result) => result.median);
  const [mine, ai, agents, langgraph] = TOOL_FRAMEWORKS.map((framework) => median(medians(framework))) as [
    number,
    number,
    number,
    number,
  ];
  const perProcess = (framework: keyof typeof results) =>
    `in its own process; median over ${PROCESSES} processes (${list(medians(framework))} µs), each the median of ${results[framework][0]!.rounds.length} rounds of ${results[framework][0]!.calls} turns after a 1.5 s warm-up`;
  report({
    name: 'One AsyncFunctionCallingAgent turn with one tool call, zero-latency scripted model',
    value: mine,
    unit: 'µs',
    target: 20,
    note: `two model turns and one sync tool() run, new session each turn; ${perProcess('lagent')}`,
  });
  report({
    name: 'side by side: AI SDK generateText, one turn with one tool call',
    value: ai,
    unit: 'µs',
    note: `tool() with a zod inputSchema, stopWhen: isStepCount(2), scripted v4 model; ${perProcess('ai')}`,
  });
  report({
    name: 'side by side: OpenAI Agents JS run, one turn with one tool call',
    value: agents,
    unit: 'µs',
    note: `tool() with zod parameters, tracing off, scripted Model; ${perProcess('agents')}`,
  });
  report({
    name: 'side by side: LangGraph.js, one turn with one tool call',
    value: langgraph,
    unit: 'µs',
    note: `StateGraph(MessagesAnnotation): agent node (scripted BaseChatModel, bindTools) + ToolNode, toolsCondition, MemorySaver with thread_id = session id; tool() with a zod schema; ${perProcess('langgraph')}`,
  });
  report({
    name: 'AsyncFunctionCallingAgent tool turn speed-up over AI SDK generateText',
    value: ai / mine,
    unit: 'x',
    target: 10,
    atLeast: true,
    note: 'each framework in its own process; ratio of the medians over processes',
  });
  report({
    name: 'AsyncFunctionCallingAgent tool turn speed-up over OpenAI Agents JS run',
    value: agents / mine,
    unit: 'x',
    target: 10,
    atLeast: true,
    note: 'each framework in its own process; ratio of the medians over processes',
  });
  report({
    name: 'AsyncFunctionCallingAgent tool turn speed-up over LangGraph.js',
    value: langgraph / mine,
    unit: 'x',
    note: 'each framework in its own process; ratio of the medians over processes',
  });
};
