import {
  type AgentMessage,
  AgentStatusCode,
  type ChatMessage,
  type LLMCallParams,
  type ModelReply,
  ParseError,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runAgent } from '#src/cli/agent-like';
import { loadAgentModule } from '#src/cli/agent-source';
import {
  citedNumbers,
  DeepResearchAgent,
  ResearchPlanner,
  type ResearchReport,
} from '../../examples/deep-research/deep-research-agent';
import { graphProblems, levelsOf } from '../../examples/deep-research/graph';
import { EXAMPLE_GRAPH, EXAMPLE_QUESTION, researchScript } from '../../examples/deep-research/mock-script';
import { startDeepResearch } from '../../examples/deep-research/setup';
import { Held } from '../helpers/held';

/** Variables that would send the example to a real model; the tests run it on the scripted mock. */
beforeEach(() => {
  vi.stubEnv('OPENAI_API_KEY', '');
  vi.stubEnv('OPENAI_BASE_URL', '');
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

const MODEL_LATENCY_MS = 100;
const WEB_LATENCY_MS = 50;

describe('deep-research example', () => {
  it('plans >= 3 sub-questions on 2 levels, searches them in parallel, streams an answer citing only pages the web served', async () => {
    const setup = await startDeepResearch({ modelLatencyMs: MODEL_LATENCY_MS, webLatencyMs: WEB_LATENCY_MS });
    try {
      const chunks: AgentMessage[] = [];
      for await (const chunk of setup.agent.call(EXAMPLE_QUESTION, { sessionId: 'q1' }))
        chunks.push(chunk as AgentMessage);
      const final = chunks.at(-1)!;
      const report = final.formatted as ResearchReport;

      // The plan.
      expect(report.graph.nodes.length).toBeGreaterThanOrEqual(3);
      expect(levelsOf(report.graph).length).toBeGreaterThanOrEqual(2);
      expect(report.repaired).toBe(false);

      // Parallel searchers: every level-0 searcher starts before the first of them ends, and the dependent one
      // starts after its parents end.
      const byId = new Map(report.nodes.map((node) => [node.id, node]));
      const level0 = levelsOf(report.graph)[0]!.map((node) => byId.get(node.id)!);
      const firstEnd = Math.min(...level0.map((node) => node.startMs + node.ms));
      for (const node of level0) expect(node.startMs).toBeLessThan(firstEnd);
      const n4 = byId.get('n4')!;
      expect(n4.parents.sort()).toEqual(['n1', 'n2']);
      for (const parent of ['n1', 'n2'])
        expect(n4.startMs).toBeGreaterThanOrEqual(byId.get(parent)!.startMs + byId.get(parent)!.ms - 1);
      // (How long the search took against the searchers' times added up is a figure for `npm run bench`, not
      // a bound: a busy machine stretches both.)

      // Each searcher searched, then read pages.
      for (const node of report.nodes) {
        expect(node.queries.length).toBeGreaterThan(0);
        expect(node.pages.length).toBeGreaterThan(0);
      }

      // Citations: every number cited is a source, and every source is a page the web served (read by a
      // searcher, not merely listed in search results).
      const served = new Set(setup.web.servedPages());
      expect(report.sources.length).toBeGreaterThan(0);
      for (const source of report.sources) expect(served.has(source.url), source.url).toBe(true);
      const cited = citedNumbers(report.answer);
      expect(cited.length).toBeGreaterThanOrEqual(3);
      expect(report.unknownCitations).toEqual([]);
      for (const n of cited) {
        const source = report.sources.find((candidate) => candidate.n === n);
        expect(source, `[${n}]`).toBeDefined();
        expect(served.has(source!.url), source!.url).toBe(true);
      }
      // The sources list in the reply names exactly the cited pages.
      const listed = [...String(final.content).matchAll(/^\[(\d+)\] .* <(.+)>$/gm)];
      expect(listed.map((match) => Number(match[1]))).toEqual([...cited].sort((a, b) => a - b));
      for (const match of listed) expect(served.has(match[2]!)).toBe(true);

      // Streaming: several chunks, whose deltas add up to the final reply.
      expect(
        chunks.filter((chunk) => chunk.streamState === AgentStatusCode.STREAM_ING).length,
      ).toBeGreaterThan(3);
      expect(chunks.map((chunk) => chunk.delta ?? '').join('')).toBe(final.content);
      expect(String(final.content).startsWith(report.answer)).toBe(true);

      // The node sessions of the searcher are cleared once their answers are kept.
      expect(setup.agent.searcher.agent.memory?.getMemory('q1:n1')).toEqual([]);
      // The state dict holds each sub-agent's memory as plain data; the searchers' node sessions are gone.
      const state = JSON.parse(JSON.stringify(await setup.agent.stateDict('q1')));
      expect(Object.keys(state).sort()).toEqual([
        'memory',
        'planner.memory',
        'planner.model.memory',
        'searcher.agent.memory',
        'searcher.memory',
        'writer.memory',
      ]);
      expect(state['writer.memory']).toHaveLength(2);
      expect(state.memory[1].formatted.sources).toEqual(report.sources);
      // The agent's own memory keeps the question and the reply.
      expect(setup.agent.memory?.getMemory('q1').map((message) => message.sender)).toEqual([
        'user',
        'DeepResearchAgent',
      ]);
    } finally {
      await setup.close();
    }
  });

  it('asks the planner once to repair an invalid graph, then uses the repaired one', async () => {
    const events: string[] = [];
    const setup = await startDeepResearch({
      badFirstPlan: true,
      onProgress: (event) => events.push(event.type),
    });
    try {
      const reply = await runAgent(setup.agent, EXAMPLE_QUESTION, { sessionId: 1 });
      const report = reply.formatted as ResearchReport;
      expect(report.repaired).toBe(true);
      expect(report.graph).toEqual(EXAMPLE_GRAPH);
      const planner = setup.agent.planner.model.memory!.getMemory(1);
      const repair = String(planner[2]?.content);
      expect(repair).toMatch(/^Your plan cannot be used/);
      expect(repair).toContain('unknown node "n5"');
      expect(events[0]).toBe('plan');
      expect(events.filter((type) => type === 'searchEnd')).toHaveLength(4);
    } finally {
      await setup.close();
    }
  });

  it('fails with a clear ParseError when the repaired graph is still invalid', async () => {
    const cyclic = JSON.stringify({
      nodes: [
        { id: 'a', question: 'A?' },
        { id: 'b', question: 'B?' },
      ],
      edges: [
        { from: 'a', to: 'b' },
        { from: 'b', to: 'a' },
      ],
    });
    const llm = new AsyncMockLLM({ responses: ['not json at all', cyclic] });
    const planner = new ResearchPlanner({ llm });
    const failure = await planner.call('question?').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ParseError);
    expect((failure as Error).message).toMatch(/still invalid after one repair/);
    expect((failure as Error).message).toMatch(/cycle: a -> b -> a/);
    // The repair request told the model why its first reply was refused.
    expect(llm.calls[1]!.messages.at(-1)!.content).toMatch(/not valid JSON/);
    llm.assertComplete();
  });

  it('a failing searcher stops the others and fails the call with its error', async () => {
    const setup = await startDeepResearch({ webLatencyMs: 0 });
    const script = researchScript();
    const isSearcher = (messages: ChatMessage[]) =>
      String(messages[0]?.content ?? '').startsWith('You are a web searcher');
    /** The planner answers at once; a searcher's model call answers only when released (or aborted). */
    class SearchersWait extends AsyncMockLLM {
      readonly held = new Held();
      override async chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
        const text = await super.chat(messages, params);
        return isSearcher(messages) ? this.held.wait(text, params?.signal) : text;
      }
      override async generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
        const reply = await super.generate(messages, params);
        return isSearcher(messages) ? this.held.wait(reply, params?.signal) : reply;
      }
    }
    const llm = new SearchersWait({
      responses: (messages) => {
        const task = messages.find((message) => message.role === 'user')?.content ?? '';
        // The searcher of n3 fails at once; the others wait in their first model call.
        if (isSearcher(messages) && String(task).includes('drove')) throw new Error('searcher model down');
        return script(messages);
      },
    });
    const agent = new DeepResearchAgent({ llm, browser: setup.browser });
    try {
      const failure = await runAgent(agent, EXAMPLE_QUESTION, { sessionId: 1 }).catch(
        (error: unknown) => error,
      );
      expect((failure as Error).message).toMatch(/searcher model down/);
      // The siblings were in their first model call, and the failure aborted it: none is left waiting, none
      // asked the model again or searched.
      expect(llm.held.started).toBeGreaterThan(0);
      expect(llm.held.pending).toBe(0);
      const searcherCalls = llm.calls.filter((call) => isSearcher(call.messages)).length;
      expect(searcherCalls).toBe(llm.held.started + 1);
      expect(setup.web.requests).toEqual([]);
      expect(agent.memory?.getMemory(1)).toEqual([]);
    } finally {
      await setup.close();
    }
  });

  it('graphProblems names duplicate ids, unknown ids and cycles', () => {
    expect(
      graphProblems({
        nodes: [
          { id: 'a', question: 'A?' },
          { id: 'a', question: 'A again?' },
        ],
        edges: [{ from: 'a', to: 'zz' }],
      }),
    ).toEqual(['node id "a" is used twice', 'edge a -> zz names unknown node "zz" (known: "a")']);
    expect(
      graphProblems({
        nodes: [
          { id: 'a', question: 'A?' },
          { id: 'b', question: 'B?' },
          { id: 'c', question: 'C?' },
        ],
        edges: [
          { from: 'a', to: 'b' },
          { from: 'b', to: 'c' },
          { from: 'c', to: 'b' },
        ],
      }),
    ).toEqual(['the edges form a cycle: b -> c -> b']);
    expect(graphProblems(EXAMPLE_GRAPH)).toEqual([]);
  });

  it('agent.ts loads as a `lagent serve --agent` module and answers through the CLI runner', async () => {
    const loaded = await loadAgentModule('examples/deep-research/agent.ts', {
      command: 'serve',
      streaming: true,
    });
    const module = await import('../../examples/deep-research/agent');
    try {
      const deltas: string[] = [];
      const reply = await runAgent(loaded.agent, EXAMPLE_QUESTION, {
        sessionId: 's',
        onChunk: (chunk) => deltas.push(chunk.delta ?? ''),
      });
      expect(String(reply.content)).toMatch(/Sources:\n\[1\] /);
      expect(deltas.join('')).toBe(reply.content);
    } finally {
      await module.close();
      await loaded.close();
    }
  });

  it('main() prints the graph, the searchers and the streamed answer with its sources', async () => {
    const lines: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void lines.push(args.join(' ')));
    const written: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((text: string | Uint8Array) => {
      written.push(String(text));
      return true;
    });
    const { main } = await import('../../examples/deep-research/main');
    const report = await main();
    const printed = lines.join('\n');
    expect(printed).toContain('level 1:');
    expect(printed).toMatch(/\[n4\] searching: /);
    expect(printed).toMatch(/WebBrowser\.select/);
    expect(written.join('')).toContain(`${report.answer}\n\nSources:\n[1] `);
  });
});
