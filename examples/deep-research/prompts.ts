/** The model-visible text of the deep-research agent: planner, searchers, final answer. */

/** The planner's system prompt; `format` is the graph's JSON format instruction. */
export function plannerPrompt(format: string): string {
  return [
    'You are a research planner. Break the user question into a small graph of sub-questions that web searches can answer:',
    '- each node is one simple question (a fact, a figure, a definition) that a single search can answer;',
    '- an edge from A to B means B needs the answer of A first (B may compare or combine its parents); questions that do not depend on each other have no edge and are searched in parallel;',
    '- use 3 to 6 nodes, no cycles, and only ids you define.',
    format,
  ].join('\n');
}

/** What the planner is told when its graph could not be read. */
export function repairPrompt(problem: string): string {
  return `Your plan cannot be used: ${problem}\nWrite the whole corrected graph again, as JSON only.`;
}

/** The searchers' system prompt. */
export const SEARCHER_PROMPT = [
  'You are a web searcher answering one sub-question of a larger research task.',
  'Use the WebBrowser tools: first search (you may give several queries), then select the most relevant results to read them (or open_url a page), then answer.',
  'Answer in two or three sentences with the facts and figures the pages give; do not guess what the pages do not say.',
].join('\n');

/** The searcher's task for one node, with the answers of the nodes it needs. */
export function searcherTask(
  question: string,
  context: readonly { question: string; answer: string }[],
): string {
  if (context.length === 0) return question;
  const known = context.map((item) => `- ${item.question}\n  ${item.answer}`).join('\n');
  return `${question}\n\nAnswers already found that this question builds on:\n${known}`;
}

/** The final answer's system prompt. */
export const WRITER_PROMPT = [
  'You write the final answer of a research task from the answers to its sub-questions.',
  'Cite the sources with their numbers in square brackets, e.g. [1] or [2][3], right after the sentence they support. Cite only the numbered sources given; do not add a list of sources.',
  'Be concise: a short paragraph or two.',
].join('\n');

/** The final answer's task: the question, each sub-question's answer with its sources, the numbered sources. */
export function writerTask(
  question: string,
  answers: readonly { question: string; answer: string; sources: readonly number[] }[],
  sources: readonly { n: number; title: string; url: string }[],
): string {
  const found = answers
    .map(
      (item) =>
        `- ${item.question}\n  ${item.answer}\n  (sources: ${item.sources.map((n) => `[${n}]`).join(' ') || 'none'})`,
    )
    .join('\n');
  const list = sources.map((source) => `[${source.n}] ${source.title} <${source.url}>`).join('\n');
  return `Question: ${question}\n\nSub-questions and their answers:\n${found}\n\nSources:\n${list || '(none)'}`;
}
