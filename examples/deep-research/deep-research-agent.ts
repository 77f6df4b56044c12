/**
 * A MindSearch-style research agent: a planner breaks the question into a graph of sub-questions, one
 * function-calling searcher per sub-question answers it with the web browser (a question starts as soon as
 * the questions it needs are answered, so independent ones run in parallel), and a writer streams the final
 * answer, citing the pages the searchers actually read as [1], [2], ...
 */
import {
  type ActionReturn,
  ActionStatusCode,
  AgentMessage,
  AgentStatusCode,
  AsyncAgent,
  type AsyncBaseAction,
  type AsyncBaseLLM,
  type AsyncForwardOptions,
  AsyncFunctionCallingAgent,
  AsyncStreamingAgent,
  type ForwardResult,
  ParseError,
  type SessionId,
  type StreamReturn,
  type ToolCall,
  toolCallsOf,
} from 'lagent-ts';
import { graphParser, parentsOf, type ResearchGraph, type ResearchNode } from './graph';
import {
  plannerPrompt,
  repairPrompt,
  SEARCHER_PROMPT,
  searcherTask,
  WRITER_PROMPT,
  writerTask,
} from './prompts';

/** A page a searcher read. */
export interface ResearchPageRead {
  url: string;
  title: string;
}

/** One sub-question's outcome. */
export interface NodeResult {
  id: string;
  question: string;
  /** The ids of the questions it needed. */
  parents: string[];
  answer: string;
  /** The pages its searcher read (select / open_url that succeeded), in order. */
  pages: ResearchPageRead[];
  /** The searches its searcher made. */
  queries: string[];
  /** When its searcher started, from the start of the search phase, and how long it took (ms). */
  startMs: number;
  ms: number;
}

/** A numbered source of the final answer. */
export interface ResearchSource extends ResearchPageRead {
  n: number;
}

/** The `formatted` of the final reply. */
export interface ResearchReport {
  question: string;
  graph: ResearchGraph;
  /** Whether the planner's first graph was invalid and it was asked to repair it. */
  repaired: boolean;
  nodes: NodeResult[];
  /** Every page read, numbered in the order they were first read. */
  sources: ResearchSource[];
  /** The answer text without the sources list. */
  answer: string;
  /** The source numbers the answer cites, in order of first citation. */
  citations: number[];
  /** Numbers cited that are no source (a model's mistake; the mock never makes one). */
  unknownCitations: number[];
  /** Wall time of the search phase (ms). */
  searchMs: number;
}

/** What {@link DeepResearchAgent} reports while it works. */
export type ResearchProgress =
  | { type: 'plan'; sessionId: SessionId; graph: ResearchGraph; repaired: boolean }
  | { type: 'searchStart'; sessionId: SessionId; node: ResearchNode }
  | {
      type: 'toolCalls';
      sessionId: SessionId;
      node: ResearchNode;
      calls: { name: string; arguments: Record<string, unknown> }[];
    }
  | { type: 'searchEnd'; sessionId: SessionId; result: NodeResult }
  | { type: 'sources'; sessionId: SessionId; sources: ResearchSource[] };

/** Options of {@link DeepResearchAgent}. */
export interface DeepResearchOptions {
  /** The model of the planner, the searchers and the writer. */
  llm: AsyncBaseLLM;
  /** The searchers' tool: an `AsyncWebBrowser` (its `search`, `select`, `open_url`). */
  browser: AsyncBaseAction;
  /** @default 'DeepResearchAgent' */
  name?: string | undefined;
  /** Model turns of one searcher. @default 6 */
  searcherMaxTurn?: number | undefined;
  /** Told about the plan, each searcher's start, tool calls and answer, and the sources. */
  onProgress?: ((event: ResearchProgress) => void) | undefined;
}

/** The session of one node's searcher: the call's session and the node, so parallel searchers never share one. */
function nodeSession(sessionId: SessionId, id: string): string {
  return `${String(sessionId)}:${id}`;
}

/**
 * Plans the research: asks the model for the graph, and once more with the problem when the graph cannot be
 * read (not JSON, not the shape, unknown ids, a cycle). The reply's `formatted` is `{ graph, repaired }`.
 */
export class ResearchPlanner extends AsyncAgent {
  model: AsyncAgent;
  readonly #parser = graphParser();

  constructor(options: { llm: AsyncBaseLLM; name?: string | undefined }) {
    super({ name: options.name ?? 'planner' });
    this.model = new AsyncAgent({
      llm: options.llm,
      name: 'planner',
      template: plannerPrompt(this.#parser.formatInstruction()),
    });
  }

  override async forward(
    messages: AgentMessage[],
    { sessionId }: AsyncForwardOptions,
  ): Promise<AgentMessage<string, { graph: ResearchGraph; repaired: boolean }>> {
    let reply = await this.model.call(messages, { sessionId });
    let repaired = false;
    let graph: ResearchGraph;
    try {
      graph = this.#parser.parseResponse(String(reply.content));
    } catch (error) {
      if (!(error instanceof ParseError)) throw error;
      repaired = true;
      reply = await this.model.call(repairPrompt(error.message), { sessionId });
      try {
        graph = this.#parser.parseResponse(String(reply.content));
      } catch (again) {
        if (!(again instanceof ParseError)) throw again;
        throw new ParseError({
          text: String(reply.content),
          message: `${this.name}: the plan is still invalid after one repair: ${again.message}`,
          cause: again,
        });
      }
    }
    return new AgentMessage({
      sender: this.name,
      content: String(reply.content),
      formatted: { graph, repaired },
    });
  }
}

/**
 * The pages read and the queries searched in a searcher's tool turns: each results message answers the
 * tool calls of the message before it, `content[i]` answering `formatted.toolCalls[i]`.
 */
function toolTrace(messages: readonly AgentMessage[]): { pages: ResearchPageRead[]; queries: string[] } {
  const pages: ResearchPageRead[] = [];
  const queries: string[] = [];
  let calls: readonly ToolCall[] = [];
  for (const message of messages) {
    if (!Array.isArray(message.content)) {
      calls = toolCallsOf(message.formatted) ?? [];
      continue;
    }
    (message.content as ActionReturn[]).forEach((result, index) => {
      const call = calls[index];
      const api = call?.name.split(/\.|__/).pop();
      const args = call === undefined || typeof call.arguments === 'string' ? {} : call.arguments;
      if (api === 'search') {
        const query = args.query;
        queries.push(...(Array.isArray(query) ? query.map(String) : [String(query)]));
      }
      if (result.state !== ActionStatusCode.SUCCESS || !result.result) return;
      if (api === 'select') {
        const read = JSON.parse(String(result.result[0]?.content)) as Record<string, ResearchPageRead>;
        for (const page of Object.values(read)) pages.push({ url: page.url, title: page.title });
      } else if (api === 'open_url') {
        const text = String(result.result[0]?.content ?? '');
        pages.push({ url: String(args.url).trim(), title: text.split('\n', 1)[0] ?? '' });
      }
    });
  }
  return { pages, queries };
}

/** The source numbers cited in `text` (`[1]`, `[2][3]`, `[1, 2]`), in order of first citation. */
export function citedNumbers(text: string): number[] {
  const cited = new Set<number>();
  for (const match of text.matchAll(/\[(\d+(?:\s*,\s*\d+)*)\]/g)) {
    for (const n of match[1]!.split(',')) cited.add(Number(n.trim()));
  }
  return [...cited];
}

/**
 * The deep-research agent. A streaming agent: `call()` yields the final answer as it is written, then its
 * sources list (`Sources:` and one `[n] title <url>` line per page cited); the final reply's `formatted` is
 * the whole {@link ResearchReport}. Its sub-agents are `planner`, `searcher` (called once per sub-question,
 * in the session `<session>:<node id>`, cleared once its answer is kept) and `writer`.
 *
 * @example
 * const agent = new DeepResearchAgent({ llm, browser: new AsyncWebBrowser({ searcherType: 'BingSearch' }) });
 * for await (const chunk of agent.call('How did the EU and China grow since 2019?')) process.stdout.write(chunk.delta ?? '');
 */
export class DeepResearchAgent extends AsyncStreamingAgent<ResearchReport> {
  planner: ResearchPlanner;
  searcher: AsyncFunctionCallingAgent;
  writer: AsyncStreamingAgent;
  readonly #onProgress: ((event: ResearchProgress) => void) | undefined;
  /** The node each searcher session works on, for its tool-call progress. */
  readonly #running = new Map<string, { sessionId: SessionId; node: ResearchNode }>();

  constructor(options: DeepResearchOptions) {
    super({ name: options.name ?? 'DeepResearchAgent' });
    this.planner = new ResearchPlanner({ llm: options.llm });
    this.searcher = new AsyncFunctionCallingAgent({
      llm: options.llm,
      actions: [options.browser],
      template: SEARCHER_PROMPT,
      maxTurn: options.searcherMaxTurn ?? 6,
      name: 'searcher',
    });
    this.writer = new AsyncStreamingAgent({ llm: options.llm, template: WRITER_PROMPT, name: 'writer' });
    this.#onProgress = options.onProgress;
    if (this.#onProgress) {
      this.searcher.events.on('toolStart', (event) => {
        const running = this.#running.get(String(event.sessionId));
        if (event.path !== '' || !running) return;
        this.#report({
          type: 'toolCalls',
          ...running,
          calls: event.toolCalls.map((call) => ({
            name: call.name,
            arguments: typeof call.arguments === 'string' ? { text: call.arguments } : call.arguments,
          })),
        });
      });
    }
  }

  #report(event: ResearchProgress): void {
    this.#onProgress?.(event);
  }

  override async *forward(
    messages: AgentMessage[],
    { sessionId }: AsyncForwardOptions,
  ): AsyncGenerator<ForwardResult, StreamReturn, undefined> {
    const question = String(messages.at(-1)?.content ?? '');
    const plan = await this.planner.call(messages, { sessionId });
    const { graph, repaired } = plan.formatted!;
    this.#report({ type: 'plan', sessionId, graph, repaired });

    const searchStart = performance.now();
    const nodes = await this.#searchAll(graph, sessionId, searchStart);
    const searchMs = performance.now() - searchStart;

    const sources: ResearchSource[] = [];
    const numberOf = new Map<string, number>();
    for (const node of nodes) {
      for (const page of node.pages) {
        if (numberOf.has(page.url)) continue;
        numberOf.set(page.url, sources.length + 1);
        sources.push({ n: sources.length + 1, ...page });
      }
    }
    this.#report({ type: 'sources', sessionId, sources });
    const task = writerTask(
      question,
      nodes.map((node) => ({
        question: node.question,
        answer: node.answer,
        sources: [...new Set(node.pages.map((page) => numberOf.get(page.url)!))],
      })),
      sources,
    );

    let answer = '';
    for await (const chunk of this.writer.call(task, { sessionId })) {
      answer = String(chunk.content);
      // The writer's final reply (END) ends its stream; this agent's own final reply comes last.
      if (chunk.streamState !== AgentStatusCode.END)
        yield new AgentMessage({
          sender: this.name,
          content: answer,
          streamState: AgentStatusCode.STREAM_ING,
        });
    }
    const citations = citedNumbers(answer);
    const cited = sources.filter((source) => citations.includes(source.n));
    const list = cited.map((source) => `[${source.n}] ${source.title} <${source.url}>`).join('\n');
    const report: ResearchReport = {
      question,
      graph,
      repaired,
      nodes,
      sources,
      answer,
      citations,
      unknownCitations: citations.filter((n) => n < 1 || n > sources.length),
      searchMs,
    };
    return new AgentMessage({
      sender: this.name,
      content: cited.length > 0 ? `${answer}\n\nSources:\n${list}` : answer,
      formatted: report,
    });
  }

  /**
   * Every node's searcher, each started once the nodes it needs are answered. When one fails, the others are
   * stopped (their calls aborted with that error) and the failure is the call's.
   */
  async #searchAll(graph: ResearchGraph, sessionId: SessionId, searchStart: number): Promise<NodeResult[]> {
    const parents = parentsOf(graph);
    const byId = new Map(graph.nodes.map((node) => [node.id, node]));
    const stop = new AbortController();
    const done = new Map<string, Promise<NodeResult>>();
    const run = (node: ResearchNode): Promise<NodeResult> => {
      let promise = done.get(node.id);
      if (promise === undefined) {
        promise = (async () => {
          const needed = await Promise.all(parents.get(node.id)!.map((id) => run(byId.get(id)!)));
          stop.signal.throwIfAborted();
          return this.#searchNode(node, needed, sessionId, searchStart, stop.signal);
        })();
        promise.catch((error: unknown) => {
          if (!stop.signal.aborted) stop.abort(error);
        });
        done.set(node.id, promise);
      }
      return promise;
    };
    const all = graph.nodes.map(run);
    try {
      return await Promise.all(all);
    } catch (error) {
      // The first failure, rather than a sibling's abort that it caused.
      throw stop.signal.aborted ? stop.signal.reason : error;
    } finally {
      // Wait for the stopped searchers, so none is still using the browser when the call ends.
      await Promise.allSettled(all);
    }
  }

  async #searchNode(
    node: ResearchNode,
    needed: readonly NodeResult[],
    sessionId: SessionId,
    searchStart: number,
    signal: AbortSignal,
  ): Promise<NodeResult> {
    const session = nodeSession(sessionId, node.id);
    const started = performance.now();
    this.#running.set(session, { sessionId, node });
    this.#report({ type: 'searchStart', sessionId, node });
    try {
      const reply = await this.searcher.call(searcherTask(node.question, needed), {
        sessionId: session,
        signal,
      });
      const trace = toolTrace(this.searcher.agent.memory?.getMemory(session) ?? []);
      const result: NodeResult = {
        id: node.id,
        question: node.question,
        parents: needed.map((parent) => parent.id),
        answer: String(reply.content),
        ...trace,
        startMs: started - searchStart,
        ms: performance.now() - started,
      };
      this.#report({ type: 'searchEnd', sessionId, result });
      return result;
    } finally {
      this.#running.delete(session);
      this.searcher.reset(session, { recursive: true });
    }
  }
}
