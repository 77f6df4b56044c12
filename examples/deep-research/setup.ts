/** The deep-research agent on the configured model and the local research web, ready to run. */
import { AsyncMockLLM } from 'lagent-ts/testing';
import { AsyncWebBrowser } from 'lagent-ts/tools';
import { pickAsyncLLM, usesRealModel } from '../shared/model';
import { requirePeers } from '../shared/peers';
import { realSearcher } from '../shared/searchers';
import { DeepResearchAgent, type ResearchProgress } from './deep-research-agent';
import { type ResearchScriptOptions, researchScript } from './mock-script';
import { type ResearchWeb, startResearchWeb } from './research-web';

/** Options of {@link startDeepResearch}. */
export interface DeepResearchSetupOptions extends ResearchScriptOptions {
  /** Delay of each mock model reply, in ms (the mock only). @default 0 */
  modelLatencyMs?: number | undefined;
  /** Delay of each answer of the research web, in ms. @default 0 */
  webLatencyMs?: number | undefined;
  onProgress?: ((event: ResearchProgress) => void) | undefined;
}

/** The agent, the web it searches, and how to stop both. */
export interface DeepResearchSetup {
  agent: DeepResearchAgent;
  web: ResearchWeb;
  browser: AsyncWebBrowser;
  close(): Promise<void>;
}

/**
 * Starts the research web and builds the agent: on a real model when OPENAI_API_KEY / OPENAI_BASE_URL is
 * set, else on the scripted mock; the searchers' browser searches the research web (Bing format) and may
 * read its pages on 127.0.0.1, or, with a real model and a search key (BING_API_KEY, BRAVE_API_KEY,
 * SERPER_API_KEY, or LAGENT_SEARCHER), the real web (private addresses refused).
 */
export async function startDeepResearch(options: DeepResearchSetupOptions = {}): Promise<DeepResearchSetup> {
  await requirePeers('examples/deep-research', ['@mozilla/readability', 'linkedom']);
  const web = await startResearchWeb({ latencyMs: options.webLatencyMs });
  // The real web needs a real model (the mock's script knows the research web's pages only).
  const searcherType = usesRealModel() ? realSearcher() : undefined;
  const browser =
    searcherType !== undefined
      ? new AsyncWebBrowser({ searcherType, topK: 5 })
      : new AsyncWebBrowser({
          searcherType: 'BingSearch',
          baseURL: web.url,
          apiKey: web.apiKey,
          allowedHosts: ['127.0.0.1'],
          topK: 5,
        });
  const script = researchScript(options);
  const llm =
    !usesRealModel() && options.modelLatencyMs
      ? new AsyncMockLLM({ responses: script, latencyMs: options.modelLatencyMs })
      : pickAsyncLLM(script);
  const agent = new DeepResearchAgent({ llm, browser, onProgress: options.onProgress });
  return {
    agent,
    web,
    browser,
    async close() {
      browser.close();
      await web.close();
    },
  };
}
