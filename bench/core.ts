import { Bench } from 'tinybench';
import { activeTracer } from '../src/agents/interceptors/tracing/spans';
import { observers } from '../src/agents/observers';
import { Agent, AsyncAgent } from '../src/index';
import { AsyncMockLLM, MockLLM } from '../src/testing/index';
import { alternating, median } from './competitors/processes';
import type { Report, Suite } from './report';

const BATCH = 200;

/** Mean time of one call in µs, measured in batches so timer resolution does not dominate. */
function perCall(bench: Bench, name: string): number {
  const task = bench.getTask(name);
  const result = task?.result as { latency?: { mean: number } } | undefined;
  if (!result?.latency) throw new Error(`benchmark ${name} did not complete`);
  return (result.latency.mean * 1000) / BATCH;
}

export const run: Suite = async (report) => {
  const reply = () => 'ok';
  const syncAgent = new Agent({
    llm: new MockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
  });
  const asyncAgent = new AsyncAgent({
    llm: new AsyncMockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
  });
  let session = 0;
  // A fresh session per call; sessions are dropped now and then so memory use stays flat.
  const nextSession = (agent: Agent | AsyncAgent) => {
    if (++session % 50_000 === 0) for (const id of agent.memory!.sessions()) agent.memory!.reset(id);
    return session;
  };

  const bench = new Bench({ time: 1_500, warmupTime: 300 });
  bench
    .add('Agent.call', () => {
      for (let i = 0; i < BATCH; i++) syncAgent.call('hi', { sessionId: nextSession(syncAgent) });
    })
    .add('AsyncAgent.call', async () => {
      for (let i = 0; i < BATCH; i++) await asyncAgent.call('hi', { sessionId: nextSession(asyncAgent) });
    })
    // What observability adds to one call when nobody listens and no tracer provider is registered: the
    // tracer lookup of the call and of its model call, and the check for observers above it.
    .add('tracing and observer checks', () => {
      let found = 0;
      for (let i = 0; i < BATCH; i++) {
        if (activeTracer() !== undefined) found++;
        if (activeTracer() !== undefined) found++;
        if (observers.count > 0) found++;
      }
      if (found === -1) throw new Error('unreachable');
    });
  await bench.run();
  report({
    name: 'Agent.call, single turn, new session each call',
    value: perCall(bench, 'Agent.call'),
    unit: 'µs',
    target: 3,
  });
  report({
    name: 'AsyncAgent.call, single turn, new session each call',
    value: perCall(bench, 'AsyncAgent.call'),
    unit: 'µs',
    target: 5,
  });
  report({
    name: 'observability without a tracer provider: cost per AsyncAgent.call',
    value: (100 * perCall(bench, 'tracing and observer checks')) / perCall(bench, 'AsyncAgent.call'),
    unit: '%',
    target: 5,
    note: `${(perCall(bench, 'tracing and observer checks') * 1000).toFixed(0)} ns of checks per call`,
  });

  // A 1,000-turn conversation in one session: aggregation grows with the history.
  const talker = new Agent({
    llm: new MockLLM({ responses: reply, record: false }),
    template: 'You are terse.',
  });
  for (let i = 0; i < 50; i++) talker.call('warm up', { sessionId: 'warm' });
  const started = performance.now();
  for (let turn = 0; turn < 1_000; turn++) talker.call(`turn ${turn}`, { sessionId: 'long' });
  const conversation = performance.now() - started;
  report({
    name: '1,000-turn conversation (one session, whole history aggregated each turn)',
    value: conversation,
    unit: 'ms',
    note: `${((conversation * 1000) / 1000).toFixed(1)} µs per turn`,
  });

  await sideBySidePerCall(report);
  await sideBySideConcurrent(report);
  await oneSessionQueue(report);
};

const AI_SDK_NOTE = 'AI SDK: generateText, messages array built per call, scripted v4 model';
const AGENTS_NOTE = 'Agents JS: Runner.run(agent, input), tracing off, scripted Model';
const LANGGRAPH_NOTE =
  'LangGraph.js: StateGraph(MessagesAnnotation), one model node, MemorySaver with thread_id = session id, graph.invoke, scripted BaseChatModel';
/**
 * Fresh processes per framework and scenario; the frameworks take turns: lagent, ai, agents, langgraph,
 * lagent, ...
 */
const PROCESSES = 3;

const list = (values: number[], digits: number) => values.map((value) => value.toFixed(digits)).join(', ');

/**
 * Per-call time of lagent-ts, the AI SDK, OpenAI Agents JS and LangGraph.js, each a new session per call
 * against a 0 ms scripted model, each framework in its own process (`competitors/runner.ts`): 3 processes
 * per framework, started in turn (lagent, AI SDK, Agents JS, LangGraph.js, lagent, ...), each warming up
 * for 1.5 s and reporting the median of 60 measured rounds. Each figure is the median over its 3
 * processes; each ratio is the ratio of those medians.
 */
async function sideBySidePerCall(report: Report): Promise<void> {
  const results = await alternating(['lagent', 'ai', 'agents', 'langgraph'], 'per-call', PROCESSES);
  const medians = (framework: keyof typeof results) => results[framework].map((result) => result.median);
  const mine = median(medians('lagent'));
  const ai = median(medians('ai'));
  const agents = median(medians('agents'));
  const langgraph = median(medians('langgraph'));
  const perProcess = (framework: keyof typeof results) =>
    `each framework in its own process; median over ${PROCESSES} processes (${list(medians(framework), 2)} µs), each the median of ${results[framework][0]!.rounds.length} rounds of ${results[framework][0]!.calls} calls after a 1.5 s warm-up`;
  report({
    name: 'side by side: AsyncAgent.call, new session each call',
    value: mine,
    unit: 'µs',
    note: perProcess('lagent'),
  });
  report({
    name: 'side by side: AI SDK generateText, one turn',
    value: ai,
    unit: 'µs',
    note: `${AI_SDK_NOTE}; ${perProcess('ai')}`,
  });
  report({
    name: 'side by side: OpenAI Agents JS run, one turn',
    value: agents,
    unit: 'µs',
    note: `${AGENTS_NOTE}; ${perProcess('agents')}`,
  });
  report({
    name: 'side by side: LangGraph.js, one turn',
    value: langgraph,
    unit: 'µs',
    note: `${LANGGRAPH_NOTE}; ${perProcess('langgraph')}`,
  });
  report({
    name: 'AsyncAgent.call speed-up over AI SDK generateText',
    value: ai / mine,
    unit: 'x',
    target: 30,
    atLeast: true,
    note: 'each framework in its own process; ratio of the medians over processes',
  });
  report({
    name: 'AsyncAgent.call speed-up over OpenAI Agents JS run',
    value: agents / mine,
    unit: 'x',
    note: 'each framework in its own process; ratio of the medians over processes',
  });
  report({
    name: 'AsyncAgent.call speed-up over LangGraph.js',
    value: langgraph / mine,
    unit: 'x',
    note: 'each framework in its own process; ratio of the medians over processes',
  });
}

/**
 * 10,000 concurrent sessions against a model that takes 50 ms, through each framework, and through the
 * bare scripted model (`AsyncMockLLM.chat` alone, nothing kept): the floor any framework built on it can
 * reach. Each in its own process, 3 processes each, started in turn (model, lagent, AI SDK, Agents JS,
 * LangGraph.js, model, ...); each process warms up for at least 2 rounds and 2 s, then runs 5 measured rounds, each on fresh state, and
 * reports their medians. Figures are medians over the 3 processes.
 */
async function sideBySideConcurrent(report: Report): Promise<void> {
  const frameworks = ['model', 'lagent', 'ai', 'agents', 'langgraph'] as const;
  const results = await alternating(frameworks, 'concurrent', PROCESSES);
  const walls = (framework: keyof typeof results) => results[framework].map((result) => result.wall);
  const heaps = (framework: keyof typeof results) => results[framework].map((result) => result.heap);
  const [floorWall, mineWall, aiWall, agentsWall, langgraphWall] = frameworks.map((framework) =>
    median(walls(framework)),
  ) as [number, number, number, number, number];
  const [floorHeap, mineHeap, aiHeap, agentsHeap, langgraphHeap] = frameworks.map((framework) =>
    median(heaps(framework)),
  ) as [number, number, number, number, number];
  const own = `each framework in its own process; median over ${PROCESSES} processes`;
  const aboveFloor = ((mineWall - floorWall) * 1e6) / 10_000;
  report({
    name: 'bare scripted model, 10,000 concurrent calls, 50 ms',
    value: floorWall,
    unit: 's',
    note: `AsyncMockLLM.chat alone (system + user message), Promise.all over 10,000: the floor for any framework on this model; in its own process; median over ${PROCESSES} processes (${list(walls('model'), 3)} s); heap growth ${floorHeap.toFixed(2)} MB`,
  });
  report({
    name: '10,000 concurrent AsyncAgent sessions, 50 ms model: wall time',
    value: mineWall,
    unit: 's',
    target: 0.1,
    note: `${aboveFloor.toFixed(2)} µs per call above the bare model's ${floorWall.toFixed(3)} s; ${own} (${list(walls('lagent'), 3)} s); AI SDK ${aiWall.toFixed(3)} s, Agents JS ${agentsWall.toFixed(3)} s, LangGraph.js ${langgraphWall.toFixed(3)} s`,
  });
  report({
    name: '10,000 concurrent sessions, 50 ms model: AI SDK generateText wall time',
    value: aiWall,
    unit: 's',
    note: `${(aiWall / mineWall).toFixed(1)}x lagent-ts; ${own} (${list(walls('ai'), 3)} s)`,
  });
  report({
    name: '10,000 concurrent sessions, 50 ms model: OpenAI Agents JS run wall time',
    value: agentsWall,
    unit: 's',
    note: `${(agentsWall / mineWall).toFixed(1)}x lagent-ts; ${own} (${list(walls('agents'), 3)} s)`,
  });
  report({
    name: '10,000 concurrent sessions, 50 ms model: LangGraph.js wall time',
    value: langgraphWall,
    unit: 's',
    note: `${(langgraphWall / mineWall).toFixed(1)}x lagent-ts; ${own} (${list(walls('langgraph'), 3)} s)`,
  });
  report({
    name: '10,000 concurrent AsyncAgent sessions: heap growth (all sessions kept)',
    value: mineHeap,
    unit: 'MB',
    target: 25,
    note: `${own}; AI SDK ${aiHeap.toFixed(2)} MB, Agents JS ${agentsHeap.toFixed(2)} MB, LangGraph.js ${langgraphHeap.toFixed(2)} MB`,
  });
  report({
    name: '10,000 concurrent sessions: AI SDK heap growth (histories kept)',
    value: aiHeap,
    unit: 'MB',
    note: own,
  });
  report({
    name: '10,000 concurrent sessions: OpenAI Agents JS heap growth (histories kept)',
    value: agentsHeap,
    unit: 'MB',
    note: own,
  });
  report({
    name: '10,000 concurrent sessions: LangGraph.js heap growth (MemorySaver checkpoints kept)',
    value: langgraphHeap,
    unit: 'MB',
    note: own,
  });
}

/**
 * The one-session queue (see `queue` in `competitors/runner.ts`), each run in a fresh process of its own
 * (so that no other framework has touched the process before it), 3 runs: figures and the ratio are
 * medians over them, as one process's JIT state moves a 0 ms figure by tens of percent.
 */
async function oneSessionQueue(report: Report): Promise<void> {
  const runs = (await alternating(['lagent'], 'queue', PROCESSES)).lagent;
  const { depths, rounds } = runs[0]!;
  const inOrder = runs.every((run) => run.inOrder);
  const at = (layout: 'queued' | 'spread', d: number) => median(runs.map((run) => run[layout][d]!));
  for (const [d, depth] of depths.entries()) {
    report({
      name: `${depth.toLocaleString('en-US')} concurrent calls on one AsyncAgent session, 0 ms model: per call`,
      value: at('queued', d),
      unit: 'µs',
      note: `${at('spread', d).toFixed(2)} µs spread over ${depth.toLocaleString('en-US')} sessions; median over ${PROCESSES} processes, each the median of ${rounds} rounds`,
    });
  }
  const last = depths.length - 1;
  const ratios = (layout: 'queued' | 'spread') => runs.map((run) => run[layout][last]! / run[layout][0]!);
  report({
    name: 'one-session queue: per-call time at 4,000 vs 100 queued calls',
    value: median(ratios('queued')),
    unit: 'x',
    target: 1.5,
    note: `${inOrder ? 'calls ran one at a time in call order' : 'calls interleaved: no per-session queue'}; median over ${PROCESSES} processes (${list(ratios('queued'), 2)}); spread over as many sessions: ${median(ratios('spread')).toFixed(2)}x`,
  });
}
