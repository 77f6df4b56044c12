/**
 * DataVisualizer: a multi-agent workflow that researches on the web and then draws a chart. A researcher
 * (`WebBrowser`) and a charter (`IPythonInterpreter`) share one `ActionExecutor` whose
 * `InternLMActionProcessor` turns each agent's parsed output into a tool call. The researcher searches and
 * reads pages until it answers without a tool call; the charter then writes matplotlib code until one of them
 * starts a reply with the finish pattern.
 *
 * What it runs against:
 * - the web: a local fake (Bing's search API and the pages its results link to, on 127.0.0.1, in a worker
 *   thread) unless a search key is set: BING_API_KEY, BRAVE_API_KEY, SERPER_API_KEY, or
 *   TENCENTCLOUD_SECRET_ID with TENCENTCLOUD_SECRET_KEY (LAGENT_SEARCHER=DuckDuckGoSearch uses DuckDuckGo,
 *   which needs no key). Real searches read real pages, and private addresses stay refused;
 * - the model: the scripted mock, or a real endpoint when OPENAI_API_KEY / OPENAI_BASE_URL is set;
 * - Python: the real interpreter (the chart is drawn and its PNG kept) when Python 3 with matplotlib runs
 *   here; otherwise only the research half runs, and the example says what the chart is waiting for.
 *
 * Needs the optional peers `@mozilla/readability` and `linkedom` (WebBrowser reads pages with them):
 * `npm install @mozilla/readability linkedom`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ActionExecutor,
  ActionStatusCode,
  Agent,
  AgentMessage,
  type BaseLLM,
  type ChatMessage,
  type ForwardOptions,
  getPluginPrompt,
  InternLMActionProcessor,
  InternLMToolAggregator,
  ToolParser,
  type ToolResponse,
} from 'lagent-ts';
import { IPythonInterpreter, WebBrowser } from 'lagent-ts/tools';
import { type FakeWeb, type FakeWebRequest, startFakeWeb } from './shared/fake-web';
import { describeModel, pickLLM, usesRealModel } from './shared/model';
import { requirePeers } from './shared/peers';
import { heading, isMain } from './shared/print';
import { realSearcher } from './shared/searchers';

const FINISH_PATTERN = 'Final Answer';
const RESEARCH_PROMPT = 'You should provide accurate data for the chart generator to use.';
const CHART_PROMPT = 'Any charts you display will be visible by the user.';
const QUESTION =
  "Fetch China's GDP over the past 5 years, then draw a line graph of it. Once you code it up, finish.";

/** The instruction both agents get: team work, the finish pattern, their tools and how to call them. */
function toolTemplate(parts: {
  toolDescription: string;
  invocationFormat: string;
  systemPrompt: string;
}): string {
  return [
    'You are a helpful AI assistant working in a team with other assistants. Use the tools below to make',
    'progress towards answering the question. If you cannot answer it completely, that is fine: an assistant',
    'with other tools will continue where you stop, so do what you can. When you or another assistant has',
    `the final answer or deliverable, begin your reply with ${FINISH_PATTERN} so that the team stops.`,
    `Your tools:\n${parts.toolDescription}`,
    'Explain your reasoning when you use a tool, then write the call like this:',
    parts.invocationFormat,
    `**${parts.systemPrompt}**`,
  ].join('\n');
}

/** The part of a call's text that comes before the closing fence (a stop word may already have cut it). */
function unfenced(action: string): string {
  return action.replace(/`+\s*$/, '').trim();
}

/**
 * A researcher and a charter taking turns: the researcher searches and reads pages until it has nothing left to
 * look up, then the charter plots what it found, until one of them says it is finished.
 */
class DataVisualizer extends Agent {
  researcher: Agent<ToolResponse>;
  charter: Agent<ToolResponse>;
  executor: ActionExecutor;

  constructor(
    llm: BaseLLM,
    browser: WebBrowser,
    /** The interpreter; absent when Python cannot draw here (then only the research runs). */
    private readonly interpreter: IPythonInterpreter | undefined,
    private readonly maxTurn = 10,
  ) {
    super();
    this.researcher = new Agent({
      llm,
      name: 'researcher',
      template: toolTemplate({
        toolDescription: getPluginPrompt(browser),
        invocationFormat: '```json\n{"name": <tool name>, "parameters": <keyword arguments>}\n```\n',
        systemPrompt: RESEARCH_PROMPT,
      }),
      outputFormat: new ToolParser({
        toolType: 'browser',
        begin: '```json\n',
        end: '\n```\n',
        validate: (action) => JSON.parse(unfenced(action)) as unknown,
      }),
      // The charter's hand-back is a user turn for the researcher; tool results are environment turns.
      aggregator: new InternLMToolAggregator({ userNames: ['user', 'charter'] }),
    });
    this.charter = new Agent({
      llm,
      name: 'charter',
      template: toolTemplate({
        toolDescription: interpreter ? getPluginPrompt(interpreter) : 'IPythonInterpreter',
        invocationFormat: '```python\n<code>\n```\n',
        systemPrompt: CHART_PROMPT,
      }),
      outputFormat: new ToolParser({
        toolType: 'interpreter',
        begin: '```python\n',
        end: '\n```\n',
        validate: unfenced,
      }),
      aggregator: new InternLMToolAggregator({ userNames: ['user', 'researcher'] }),
    });
    // The interpreter comes first: InternLMActionProcessor sends plain code to the executor's first tool,
    // and the browser's calls name their tool ({"name": "WebBrowser.search", ...}).
    this.executor = new ActionExecutor({
      actions: interpreter ? [interpreter, browser] : [browser],
      hooks: [new InternLMActionProcessor()],
    });
  }

  override forward([message]: AgentMessage[], { sessionId }: ForwardOptions): AgentMessage {
    // The researcher writes JSON calls; stop it before it writes code, which is the charter's job.
    const researchOptions = { sessionId, stopWords: ['```\n', '```python'] };
    let current: AgentMessage = message!;
    for (let turn = 0; turn < this.maxTurn; turn++) {
      let research = this.researcher.call(current, researchOptions);
      while (research.formatted.toolType !== null) {
        research = this.researcher.call(this.executor.call(research, { sessionId }), researchOptions);
      }
      current = research;
      if (research.content.includes(FINISH_PATTERN) || !this.interpreter) return current;
      let chart = this.charter.call(current, { sessionId });
      while (chart.formatted.toolType !== null) {
        chart = this.charter.call(this.executor.call(chart, { sessionId }), { sessionId });
      }
      current = chart;
      if (chart.content.includes(FINISH_PATTERN)) return current;
    }
    return current;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The scripted model: plays both agents from what they see, so the figures it charts are the ones the
// browser really read from the page.

function text(message: ChatMessage | undefined): string {
  return typeof message?.content === 'string' ? message.content : '';
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** `year: value` pairs found in text such as "2019\n14.28" or "- 2019: 14.28". */
function yearValues(source: string): [number, number][] {
  const pairs = new Map<number, number>();
  for (const match of source.matchAll(/\b((?:19|20)\d{2})\b[:\s]+(\d+(?:\.\d+)?)\b/g)) {
    pairs.set(Number(match[1]), Number(match[2]));
  }
  return [...pairs].sort(([a], [b]) => a - b);
}

function researcherTurn(last: ChatMessage | undefined): string {
  if (last?.role !== 'environment') {
    return (
      'Accurate figures first: I will search the web.\n```json\n' +
      JSON.stringify({
        name: 'WebBrowser.search',
        parameters: { query: "China's GDP over the past 5 years" },
      }) +
      '\n```\n'
    );
  }
  const found = parseJson(text(last));
  const entries =
    found !== null && typeof found === 'object'
      ? Object.entries(found as Record<string, { summ?: string; content?: string; url?: string }>)
      : [];
  // Search results have snippets (summ): read the one that promises a table of China's GDP.
  if (entries.length > 0 && entries.every(([, value]) => typeof value?.summ === 'string')) {
    const [id] = entries.find(([, value]) => /china/i.test(JSON.stringify(value))) ?? entries[0]!;
    return (
      `Result ${id} looks like a table of China's GDP by year; I will read it.\n\`\`\`json\n` +
      JSON.stringify({ name: 'WebBrowser.select', parameters: { select_ids: [Number(id)] } }) +
      '\n```\n'
    );
  }
  // A page: hand its figures to the charter.
  const page = entries.find(([, value]) => typeof value?.content === 'string')?.[1];
  const rows = yearValues(page?.content ?? '');
  if (rows.length === 0)
    return `I could not find yearly figures in what I read:\n${text(last).slice(0, 300)}`;
  return [
    `From ${page?.url}: China's GDP by year, in trillions of current US dollars:`,
    ...rows.map(([year, value]) => `- ${year}: ${value}`),
    'These are the figures for the line graph.',
  ].join('\n');
}

function charterTurn(last: ChatMessage | undefined): string {
  if (last?.role === 'environment') {
    const images = [...text(last).matchAll(/\[image\]\(([^)]+)\)/g)].map((match) => match[1]);
    return images.length > 0
      ? `${FINISH_PATTERN}: the line graph of China's GDP is drawn (${images.join(', ')}).`
      : `${FINISH_PATTERN}: the chart could not be drawn: ${text(last).slice(0, 300)}`;
  }
  const rows = yearValues(text(last));
  if (rows.length === 0) return `${FINISH_PATTERN}: the researcher found no figures to plot.`;
  const years = rows.map(([year]) => year);
  const values = rows.map(([, value]) => value);
  return [
    'I will plot the figures as a line graph.',
    '```python',
    'import matplotlib.pyplot as plt',
    '',
    `years = ${JSON.stringify(years)}`,
    `gdp = ${JSON.stringify(values)}  # current US$ trillion`,
    'plt.figure(figsize=(7, 4))',
    "plt.plot(years, gdp, marker='o')",
    `plt.title("China's GDP, ${years[0]}-${years.at(-1)}")`,
    "plt.xlabel('Year')",
    "plt.ylabel('GDP (current US$ trillion)')",
    'plt.xticks(years)',
    'plt.grid(True, alpha=0.3)',
    "print(f'plotted {len(years)} points')",
    '```',
    '',
  ].join('\n');
}

function scriptedModel(messages: ChatMessage[]): string {
  const last = messages.at(-1);
  const isResearcher = messages.some(
    (message) => message.role === 'system' && text(message).includes(RESEARCH_PROMPT),
  );
  return isResearcher ? researcherTurn(last) : charterTurn(last);
}

// ---------------------------------------------------------------------------------------------------------
// The web and Python this run uses.

/** The browser: on the real web when a searcher is configured, else on the local fake. */
async function openBrowser(): Promise<{ browser: WebBrowser; fake: FakeWeb | undefined }> {
  const searcherType = realSearcher();
  if (searcherType) {
    console.log(`web: ${searcherType} and real pages (private addresses refused)`);
    return { browser: new WebBrowser({ searcherType, topK: 5 }), fake: undefined };
  }
  const fake = await startFakeWeb();
  console.log(
    `web: a local fake of Bing's search API and its pages at ${fake.url} (set BING_API_KEY, BRAVE_API_KEY or SERPER_API_KEY to search the real web)`,
  );
  const browser = new WebBrowser({
    searcherType: 'BingSearch',
    baseURL: fake.url,
    apiKey: fake.apiKey,
    topK: 5,
    // Only for the fake: its pages are on 127.0.0.1, which the browser refuses by default. The real web
    // (above) keeps the default, so pages on loopback or private addresses stay out of reach.
    allowedHosts: ['127.0.0.1'],
  });
  return { browser, fake };
}

/** The interpreter when Python 3 with matplotlib runs here, else what the chart is waiting for. */
function openInterpreter(): { interpreter: IPythonInterpreter | undefined; waiting: string | undefined } {
  // Figures are saved under workDir, which (unlike the default temporary directories) outlives close().
  const workDir = mkdtempSync(join(tmpdir(), 'lagent-data-visualizer-'));
  // The interpreter gets none of this process's environment; the project's test-run marker is passed on so
  // that the test suite's leftover-process check also sees the Python processes.
  const marker = process.env.LAGENT_TEST_RUN;
  const interpreter = new IPythonInterpreter({
    timeout: 60_000,
    workDir,
    ...(marker ? { env: { LAGENT_TEST_RUN: marker } } : {}),
  });
  const probe = interpreter.call(
    { command: 'import sys, matplotlib; print(sys.version.split()[0], matplotlib.__version__)' },
    'run',
  );
  if (probe.state === ActionStatusCode.SUCCESS) {
    const [python, matplotlib] = probe.toText().trim().split(/\s+/);
    console.log(
      `python: Python ${python} with matplotlib ${matplotlib} (IPythonInterpreter; figures in ${workDir})`,
    );
    return { interpreter, waiting: undefined };
  }
  interpreter.close();
  rmSync(workDir, { recursive: true, force: true });
  const why = probe.errmsg ?? probe.toText();
  const waiting = /matplotlib/.test(why)
    ? 'matplotlib for the Python interpreter: python3 -m pip install matplotlib (or apt-get install python3-matplotlib)'
    : `Python 3 with matplotlib: install it (e.g. apt-get install python3 python3-matplotlib) or point LAGENT_PYTHON at one. The interpreter said: ${why.split('\n')[0]}`;
  console.log(`python: not available, so only the research half runs (waiting for ${waiting.split(':')[0]})`);
  return { interpreter: undefined, waiting };
}

function summarizeFake(requests: readonly FakeWebRequest[]): void {
  const searches = requests.filter((request) => request.path === '/v7.0/search');
  const pages = requests.filter((request) => request.path.startsWith('/pages/'));
  console.log(
    `fake web: ${searches.length} search request(s) (${searches.map((request) => JSON.stringify(request.query.q)).join(', ')}), ${pages.length} page(s) read (${pages.map((request) => request.path).join(', ')})`,
  );
}

export async function main(): Promise<void> {
  heading('DataVisualizer: research on the web, then chart with Python', describeModel());
  await requirePeers('examples/data-visualizer.ts', ['@mozilla/readability', 'linkedom']);
  const { browser, fake } = await openBrowser();
  let interpreter: IPythonInterpreter | undefined;
  try {
    const python = openInterpreter();
    interpreter = python.interpreter;
    const llm = pickLLM(scriptedModel);
    if (usesRealModel()) llm.genParams.maxNewTokens = 1024;
    llm.genParams.stopWords.push('```\n');
    const visualizer = new DataVisualizer(llm, browser, interpreter);
    const answer = visualizer.call(new AgentMessage({ sender: 'user', content: QUESTION }));

    const state = visualizer.stateDict();
    for (const agent of ['researcher', 'charter'] as const) {
      for (const message of state[`${agent}.memory`] ?? []) {
        console.log(
          `* ${agent} memory, ${message.sender}:\n${String(message.content).replace(/^/gm, '    ')}`,
        );
      }
    }
    console.log('-'.repeat(80));
    console.log(`${answer.sender}: ${answer.content}`);
    if (python.waiting) {
      console.log(`\nThe chart half is waiting for ${python.waiting}`);
    } else {
      const charts = (state['charter.memory'] ?? []).flatMap((message) =>
        [...String(message.content).matchAll(/\[image\]\(([^)]+\.png)\)/g)].map((match) => match[1]),
      );
      console.log(charts.length > 0 ? `chart(s): ${charts.join(', ')}` : 'no chart was drawn');
    }
  } finally {
    interpreter?.close();
    browser.close();
    if (fake) summarizeFake(await fake.close());
  }
}

if (isMain(import.meta.url)) await main();
