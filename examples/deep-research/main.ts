/**
 * Deep research, MindSearch style: a planner breaks the question into a graph of sub-questions, searchers
 * (function-calling agents with a web browser) answer them, in parallel where they do not depend on each
 * other, and a writer streams the answer citing the pages they read. Runs on the scripted mock and a local
 * research web unless OPENAI_API_KEY / OPENAI_BASE_URL points at a real model.
 *
 *   npx tsx examples/deep-research/main.ts ["your question"]
 *
 * Needs the optional peers `@mozilla/readability` and `linkedom` (WebBrowser reads pages with them):
 * `npm install @mozilla/readability linkedom`.
 */
import type { AgentMessage } from 'lagent-ts';
import { describeModel } from '../shared/model';
import { heading, isMain } from '../shared/print';
import type { ResearchProgress, ResearchReport } from './deep-research-agent';
import { describeGraph } from './graph';
import { EXAMPLE_QUESTION } from './mock-script';
import { startDeepResearch } from './setup';

/** One line per step of the research. */
function progressLine(event: ResearchProgress): string | undefined {
  switch (event.type) {
    case 'plan':
      return `plan${event.repaired ? ' (repaired once)' : ''}:\n  ${describeGraph(event.graph).join('\n  ')}`;
    case 'searchStart':
      return `[${event.node.id}] searching: ${event.node.question}`;
    case 'toolCalls':
      return event.calls
        .map((call) => `[${event.node.id}]   ${call.name}(${JSON.stringify(call.arguments)})`)
        .join('\n');
    case 'searchEnd':
      return `[${event.result.id}] answered in ${Math.round(event.result.ms)} ms, read ${event.result.pages.length} page(s): ${event.result.answer}`;
    case 'sources':
      return `${event.sources.length} page(s) read in all; the answer:\n`;
  }
}

export async function main(question = EXAMPLE_QUESTION): Promise<ResearchReport> {
  heading('Deep research: plan, parallel searchers, cited answer', describeModel());
  const setup = await startDeepResearch({
    onProgress: (event) => {
      const line = progressLine(event);
      if (line) console.log(line);
    },
  });
  try {
    console.log(`question: ${question}`);
    let last: AgentMessage | undefined;
    for await (const chunk of setup.agent.call(question)) {
      process.stdout.write(chunk.delta ?? '');
      last = chunk;
    }
    process.stdout.write('\n');
    const report = last!.formatted as ResearchReport;
    console.log(
      `searchers: ${report.nodes.length}, search phase ${Math.round(report.searchMs)} ms (their times add up to ${Math.round(report.nodes.reduce((sum, node) => sum + node.ms, 0))} ms)`,
    );
    return report;
  } finally {
    await setup.close();
  }
}

if (isMain(import.meta.url)) await main(process.argv[2]);
