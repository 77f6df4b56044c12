/**
 * The scripted model of the deep-research example: one function answering the planner, every searcher and
 * the writer, each told apart by its system prompt and answered from what it was sent (the search results,
 * the pages read, the numbered sources), so parallel searchers can call it in any order.
 */
import type { ChatMessage } from 'lagent-ts';
import type { MockReply } from 'lagent-ts/testing';

/** The question `main()` researches. */
export const EXAMPLE_QUESTION =
  "How did the economies of China and the European Union grow from 2019 to 2023, and what drove China's growth?";

/** The plan the mock planner writes: three independent questions, and a comparison needing two of them. */
export const EXAMPLE_GRAPH = {
  nodes: [
    { id: 'n1', question: "What was China's GDP from 2019 to 2023?" },
    { id: 'n2', question: "What was the European Union's GDP from 2019 to 2023?" },
    { id: 'n3', question: "What drove China's economic growth after 2019?" },
    { id: 'n4', question: 'Which economy grew faster from 2019 to 2023, China or the European Union?' },
  ],
  edges: [
    { from: 'n1', to: 'n4' },
    { from: 'n2', to: 'n4' },
  ],
};

/** Options of {@link researchScript}. */
export interface ResearchScriptOptions {
  /** The planner's first graph names an unknown node (it is repaired when told). @default false */
  badFirstPlan?: boolean | undefined;
}

/** The page (by name) each sub-question's searcher reads, found by a word of the question. */
const WANTED: readonly [RegExp, string][] = [
  [/faster/i, 'growth-rates'],
  [/drove/i, 'china-growth-drivers'],
  [/European Union/i, 'eu-gdp'],
  [/China's GDP/i, 'china-gdp'],
];

const text = (message: ChatMessage | undefined) => message?.content ?? '';

function planner(messages: ChatMessage[], options: ResearchScriptOptions): string {
  const last = text(messages.at(-1));
  const repairing = last.startsWith('Your plan cannot be used');
  if (options.badFirstPlan && !repairing) {
    const bad = { ...EXAMPLE_GRAPH, edges: [...EXAMPLE_GRAPH.edges, { from: 'n5', to: 'n4' }] };
    return `\`\`\`json\n${JSON.stringify(bad, null, 2)}\n\`\`\``;
  }
  return `\`\`\`json\n${JSON.stringify(EXAMPLE_GRAPH, null, 2)}\n\`\`\``;
}

/** Search, then read the result the question wants, then answer from the page. */
function searcher(messages: ChatMessage[]): MockReply {
  const task = text(messages.find((message) => message.role === 'user'));
  const question = task.split('\n', 1)[0]!;
  const tools = messages.filter((message) => message.role === 'tool');
  const wanted = WANTED.find(([pattern]) => pattern.test(question))?.[1];
  if (tools.length === 0) {
    const query = /faster/i.test(question) ? [question, 'comparing economic growth rates'] : question;
    return { toolCalls: [{ name: 'WebBrowser.search', arguments: { query } }] };
  }
  const results = JSON.parse(text(tools.at(-1))) as Record<
    string,
    { url: string; title?: string; content?: string }
  >;
  if (tools.length === 1) {
    const ids = Object.entries(results)
      .filter(([, result]) => wanted !== undefined && result.url.endsWith(`/pages/${wanted}`))
      .map(([id]) => Number(id));
    return {
      toolCalls: [{ name: 'WebBrowser.select', arguments: { select_ids: ids.length > 0 ? ids : [0] } }],
    };
  }
  const facts = Object.values(results)
    .flatMap((page) => (page.content ?? '').split('\n'))
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('This page is served') && /\.$/.test(line))
    .slice(0, 2)
    .join(' ');
  return { content: `${growthComparison(task)}${facts}` };
}

/** For a question building on GDP answers: each economy's growth from the figures they give. */
function growthComparison(task: string): string {
  const growth: string[] = [];
  for (const [name, pattern] of [
    ['China', /China's GDP[^\n]*\n[^\n]*/],
    ['the EU', /European Union's GDP[^\n]*\n[^\n]*/],
  ] as const) {
    const found = pattern.exec(task)?.[0] ?? '';
    const first = /2019: ([\d.]+) trillion/.exec(found)?.[1];
    const last = /2023: ([\d.]+) trillion/.exec(found)?.[1];
    if (first && last) {
      const percent = ((Number(last) / Number(first) - 1) * 100).toFixed(1);
      growth.push(`${name} grew ${percent}% (${first} to ${last} trillion US$)`);
    }
  }
  return growth.length === 2 ? `From 2019 to 2023 ${growth.join(' and ')}. ` : '';
}

/** The final answer, citing the numbered sources it was given. */
function writer(messages: ChatMessage[]): string {
  const task = text(messages.at(-1));
  const cite = (name: string) => {
    const n = new RegExp(`^\\[(\\d+)\\] .*/pages/${name}>$`, 'm').exec(task)?.[1];
    return n === undefined ? '' : ` [${n}]`;
  };
  return [
    `From 2019 to 2023 China's GDP rose from 14.28 to 17.79 trillion US dollars, about 25 percent${cite('china-gdp')},`,
    ` while the European Union's rose from 15.69 to 18.35 trillion, about 17 percent${cite('eu-gdp')}.`,
    ` China's economy therefore grew faster, though in dollars the EU stayed slightly larger; dollar figures also reflect exchange rates${cite('growth-rates')}.`,
    `\n\nChina's growth was driven by manufacturing exports and by investment in infrastructure and industry, while household consumption recovered slowly and the property sector shrank from 2021 on${cite('china-growth-drivers')}.`,
  ].join('');
}

/** The scripted model's replies (an `AsyncMockLLM`'s `responses`). */
export function researchScript(
  options: ResearchScriptOptions = {},
): (messages: ChatMessage[]) => string | MockReply {
  return (messages) => {
    const system = text(messages[0]);
    if (system.startsWith('You are a research planner')) return planner(messages, options);
    if (system.startsWith('You are a web searcher')) return searcher(messages);
    if (system.startsWith('You write the final answer')) return writer(messages);
    throw new Error(`the deep-research mock does not know this agent: ${system.slice(0, 60)}`);
  };
}
