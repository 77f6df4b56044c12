/**
 * The local web the deep-research example searches: one HTTP server on 127.0.0.1 that speaks Bing Web
 * Search v7 (`GET /v7.0/search`, key in `Ocp-Apim-Subscription-Key`) and serves the pages its results link
 * to (`GET /pages/<name>`). Results are the pages sharing the most words with the query, best first.
 *
 * The searchers use the async `AsyncWebBrowser`, which never blocks this thread, so the server runs here
 * (unlike `examples/shared/fake-web.ts`, whose worker thread serves the sync `WebBrowser`). Every request is
 * logged, and `latencyMs` delays each answer, so a test can tell parallel searchers from serial ones.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the research web answered. */
export interface ResearchWebRequest {
  method: string;
  /** The path without the query, e.g. `/v7.0/search` or `/pages/eu-gdp`. */
  path: string;
  query: Record<string, string>;
  status: number;
  /** When it arrived and when it was answered (`performance.now()`). */
  startedAt: number;
  endedAt: number;
}

/** A page of the research web. */
export interface ResearchPage {
  title: string;
  snippet: string;
  /** The article's paragraphs (plain text). */
  paragraphs: readonly string[];
}

/** Options of {@link startResearchWeb}. */
export interface ResearchWebOptions {
  /** The key the search API accepts. @default 'fake-bing-key' */
  apiKey?: string | undefined;
  /** Delay before each answer, in ms. @default 0 */
  latencyMs?: number | undefined;
  /** The pages, by name (`/pages/<name>`). @default {@link RESEARCH_PAGES} */
  pages?: Readonly<Record<string, ResearchPage>> | undefined;
}

/** The running research web. */
export interface ResearchWeb {
  /** `http://127.0.0.1:<port>`: the `baseURL` of a `BingSearch` searcher. */
  readonly url: string;
  readonly apiKey: string;
  /** Every request answered so far, in the order they were answered. */
  readonly requests: readonly ResearchWebRequest[];
  /** The URLs of the pages served with status 200 so far. */
  servedPages(): string[];
  /** Stops the server; resolves with every request it answered. */
  close(): Promise<readonly ResearchWebRequest[]>;
}

/** The pages of the example: the economies of China and the EU, 2019 to 2023 (rounded World Bank figures). */
export const RESEARCH_PAGES: Readonly<Record<string, ResearchPage>> = {
  'china-gdp': {
    title: "China's GDP, 2019 to 2023",
    snippet: "China's gross domestic product by year, in current US dollars, from 2019 to 2023.",
    paragraphs: [
      "China's gross domestic product (GDP) in current US dollars: 2019: 14.28 trillion; 2020: 14.69 trillion; 2021: 17.82 trillion; 2022: 17.88 trillion; 2023: 17.79 trillion.",
      "From 2019 to 2023 China's GDP in dollars grew by about 25 percent, most of it in 2021.",
    ],
  },
  'eu-gdp': {
    title: 'European Union GDP, 2019 to 2023',
    snippet: 'GDP of the 27 EU member states by year, in current US dollars, from 2019 to 2023.',
    paragraphs: [
      'The GDP of the European Union (27 countries) in current US dollars: 2019: 15.69 trillion; 2020: 15.37 trillion; 2021: 17.34 trillion; 2022: 16.77 trillion; 2023: 18.35 trillion.',
      'From 2019 to 2023 the EU economy grew by about 17 percent in dollars; the fall of the euro in 2022 lowered its dollar figure that year.',
    ],
  },
  'china-growth-drivers': {
    title: "What drove China's growth after 2019",
    snippet:
      "Investment, exports and the recovery after the pandemic drove China's economy from 2019 to 2023.",
    paragraphs: [
      "China's growth from 2019 to 2023 was driven by manufacturing exports, which rose during the pandemic, and by investment in infrastructure and industry.",
      'Household consumption recovered slowly after 2022, and the property sector, long a driver of growth, shrank from 2021 on.',
    ],
  },
  'growth-rates': {
    title: 'Comparing economic growth rates',
    snippet: 'How to compare the growth of two economies: growth over a period and the average annual rate.',
    paragraphs: [
      'Growth over a period is the last value divided by the first, minus one; the average annual growth rate over n years is that ratio to the power 1/n, minus one.',
      'Figures in current US dollars mix real growth with inflation and exchange rates; compare economies in the same currency.',
    ],
  },
  'what-is-gdp': {
    title: 'What is GDP?',
    snippet:
      'Gross domestic product measures the value of the goods and services a country produces in a year.',
    paragraphs: [
      'Gross domestic product (GDP) is the market value of all final goods and services produced in a country in a given period.',
    ],
  },
};

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function pageHtml(page: ResearchPage): string {
  const body = page.paragraphs.map((paragraph) => `<p>${escapeHtml(paragraph)}</p>`).join('');
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${escapeHtml(page.title)}</title></head><body><nav><a href="/">Home</a></nav><main><article><h1>${escapeHtml(page.title)}</h1>${body}<p>This page is served by the local research web of the lagent-ts examples.</p></article></main><footer>Research web for examples</footer></body></html>`;
}

const words = (text: string) => new Set(text.toLowerCase().match(/[a-z0-9]+/g) ?? []);
const STOP = new Set(['the', 'of', 'and', 'a', 'in', 'to', 'from', 'by', 'what', 'how', 'is', 'did', 's']);

/** The pages sharing at least one word with the query, most shared words first. */
function rank(pages: Readonly<Record<string, ResearchPage>>, query: string): [string, ResearchPage][] {
  const asked = [...words(query)].filter((word) => !STOP.has(word));
  return Object.entries(pages)
    .map(([name, page]) => {
      const text = words(`${page.title} ${page.snippet}`);
      return { name, page, score: asked.filter((word) => text.has(word)).length };
    })
    .filter(({ score }) => score > 0)
    .sort((a, b) => b.score - a.score)
    .map(({ name, page }) => [name, page]);
}

/**
 * Starts the research web on 127.0.0.1; resolves once it listens. The server never keeps the process alive
 * by itself (a script that forgot `close()` still exits).
 */
export async function startResearchWeb(options: ResearchWebOptions = {}): Promise<ResearchWeb> {
  const apiKey = options.apiKey ?? 'fake-bing-key';
  const latencyMs = options.latencyMs ?? 0;
  const pages = options.pages ?? RESEARCH_PAGES;
  const requests: ResearchWebRequest[] = [];
  let origin = '';

  const answer = (request: IncomingMessage, response: ServerResponse): number => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const send = (status: number, type: string, body: unknown) => {
      response.writeHead(status, { 'content-type': `${type}; charset=utf-8` });
      response.end(typeof body === 'string' ? body : JSON.stringify(body));
      return status;
    };
    if (request.method === 'GET' && url.pathname === '/v7.0/search') {
      const query = url.searchParams.get('q') ?? '';
      if (request.headers['ocp-apim-subscription-key'] !== apiKey) {
        return send(401, 'application/json', {
          error: { code: 'PermissionDenied', message: 'Access denied due to invalid subscription key.' },
        });
      }
      const count = Math.max(1, Number(url.searchParams.get('count')) || 10);
      const hits = rank(pages, query)
        .slice(0, count)
        .map(([name, page], index) => ({
          id: `https://api.bing.microsoft.com/api/v7/#WebPages.${index}`,
          name: page.title,
          url: `${origin}/pages/${name}`,
          displayUrl: `${origin}/pages/${name}`,
          snippet: page.snippet,
          language: 'en',
        }));
      return send(200, 'application/json', {
        _type: 'SearchResponse',
        queryContext: { originalQuery: query },
        webPages: { totalEstimatedMatches: hits.length, value: hits },
        rankingResponse: {
          mainline: {
            items: hits.map((hit, index) => ({
              answerType: 'WebPages',
              resultIndex: index,
              value: { id: hit.id },
            })),
          },
        },
      });
    }
    const page = url.pathname.startsWith('/pages/') ? pages[url.pathname.slice(7)] : undefined;
    if (request.method === 'GET' && page !== undefined && Object.hasOwn(pages, url.pathname.slice(7))) {
      return send(200, 'text/html', pageHtml(page));
    }
    return send(404, 'text/html', '<html><body><h1>Not found</h1></body></html>');
  };

  const server = createServer((request, response) => {
    const startedAt = performance.now();
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    setTimeout(() => {
      const status = answer(request, response);
      requests.push({
        method: request.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        status,
        startedAt,
        endedAt: performance.now(),
      });
    }, latencyMs);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  server.unref();
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: origin,
    apiKey,
    requests,
    servedPages: () =>
      requests
        .filter((request) => request.path.startsWith('/pages/') && request.status === 200)
        .map((request) => origin + request.path),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      return requests;
    },
  };
}
