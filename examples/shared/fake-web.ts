/**
 * A small fake of the web for the examples: one HTTP server on 127.0.0.1 that speaks Bing Web Search v7
 * (`GET /v7.0/search`, key in `Ocp-Apim-Subscription-Key`, answer with `webPages` and
 * `rankingResponse.mainline`) and serves the pages its results link to (`GET /pages/<name>`).
 *
 * Sync tools (`WebBrowser`) block the thread that calls them until their answer arrives, so a server in that
 * thread could never answer. The server therefore runs in a `worker_threads` Worker of its own. The worker is
 * plain JavaScript evaluated from a string (`eval: true`), so it needs no TypeScript loader and behaves the
 * same under tsx, vitest and the built package.
 */
import { Worker } from 'node:worker_threads';

/** A request the fake received. */
export interface FakeWebRequest {
  method: string;
  /** The path without the query, e.g. `/v7.0/search`. */
  path: string;
  query: Record<string, string>;
  /** The HTTP status the fake answered with. */
  status: number;
}

/** The running fake. */
export interface FakeWeb {
  /** `http://127.0.0.1:<port>`: the `baseURL` of a `BingSearch` searcher. */
  readonly url: string;
  /** The key the fake search API accepts. */
  readonly apiKey: string;
  /** The requests received so far (as far as this thread has read its messages). */
  readonly requests: readonly FakeWebRequest[];
  /** Stops the server and ends its thread; resolves with every request it received. */
  close(): Promise<readonly FakeWebRequest[]>;
}

/** The figures of the page: China's GDP, current US$ trillion (rounded World Bank figures). */
export const FAKE_GDP_TABLE: readonly (readonly [year: number, trillionUSD: number])[] = [
  [2019, 14.28],
  [2020, 14.69],
  [2021, 17.82],
  [2022, 17.88],
  [2023, 17.79],
];

const WORKER_SOURCE = `
const { createServer } = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { apiKey, table } = workerData;

const escape = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const pages = {
  'china-gdp': {
    title: "China's GDP, 2019 to 2023",
    snippet: "China's gross domestic product by year, in current US dollars, from 2019 to 2023.",
    body: () => '<p>The table lists the gross domestic product (GDP) of China for the last five years with full data, in trillions of current US dollars (rounded World Bank figures).</p>' +
      '<table><thead><tr><th>Year</th><th>GDP (US$ trillion)</th></tr></thead><tbody>' +
      table.map(([year, value]) => '<tr><td>' + year + '</td><td>' + value.toFixed(2) + '</td></tr>').join('') +
      '</tbody></table>' +
      '<p>This page is served by the local fake web of the lagent-ts examples.</p>',
  },
  'what-is-gdp': {
    title: 'What is GDP?',
    snippet: 'Gross domestic product measures the value of the goods and services a country produces in a year.',
    body: () => '<p>Gross domestic product (GDP) is the market value of all final goods and services produced in a country in a given period.</p>' +
      '<p>It is usually reported per year, in the local currency or in US dollars.</p>',
  },
};

function pageHtml(page) {
  return '<!DOCTYPE html><html><head><meta charset="utf-8"><title>' + escape(page.title) + '</title><script>window.tracker = 1;</script></head>' +
    '<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav><main><article><h1>' + escape(page.title) + '</h1>' +
    page.body() + '</article></main><footer>Fake web for examples</footer></body></html>';
}

function bingAnswer(origin, query, count) {
  const hits = Object.entries(pages).slice(0, count).map(([name, page], index) => ({
    id: 'https://api.bing.microsoft.com/api/v7/#WebPages.' + index,
    name: page.title,
    url: origin + '/pages/' + name,
    isFamilyFriendly: true,
    displayUrl: origin + '/pages/' + name,
    snippet: page.snippet,
    language: 'en',
  }));
  return {
    _type: 'SearchResponse',
    queryContext: { originalQuery: query },
    webPages: { webSearchUrl: origin + '/search?q=' + encodeURIComponent(query), totalEstimatedMatches: hits.length, value: hits },
    rankingResponse: { mainline: { items: hits.map((hit, index) => ({ answerType: 'WebPages', resultIndex: index, value: { id: hit.id } })) } },
  };
}

function send(response, status, type, body) {
  response.writeHead(status, { 'content-type': type + '; charset=utf-8' });
  response.end(typeof body === 'string' ? body : JSON.stringify(body));
  return status;
}

const server = createServer((request, response) => {
  const url = new URL(request.url || '/', 'http://127.0.0.1');
  const origin = 'http://127.0.0.1:' + server.address().port;
  let status;
  if (request.method === 'GET' && url.pathname === '/v7.0/search') {
    const query = url.searchParams.get('q') || '';
    if (request.headers['ocp-apim-subscription-key'] !== apiKey) {
      status = send(response, 401, 'application/json', { error: { code: 'PermissionDenied', message: 'Access denied due to invalid subscription key.' } });
    } else if (query.trim() === '') {
      status = send(response, 400, 'application/json', { _type: 'ErrorResponse', errors: [{ code: 'InvalidRequest', subCode: 'ParameterMissing', message: 'Required parameter is missing.', parameter: 'q' }] });
    } else {
      const count = Math.max(1, Number(url.searchParams.get('count')) || 10);
      status = send(response, 200, 'application/json', bingAnswer(origin, query, count));
    }
  } else if (request.method === 'GET' && url.pathname.startsWith('/pages/') && pages[url.pathname.slice(7)]) {
    status = send(response, 200, 'text/html', pageHtml(pages[url.pathname.slice(7)]));
  } else {
    status = send(response, 404, 'text/html', '<html><body><h1>Not found</h1></body></html>');
  }
  parentPort.postMessage({ type: 'request', request: { method: request.method, path: url.pathname, query: Object.fromEntries(url.searchParams), status } });
});

parentPort.on('message', (message) => {
  if (message === 'close') {
    server.closeAllConnections();
    server.close(() => parentPort.close());
  }
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ type: 'ready', port: server.address().port }));
`;

type WorkerMessage = { type: 'ready'; port: number } | { type: 'request'; request: FakeWebRequest };

/**
 * Starts the fake web in a worker thread; resolves once it listens.
 *
 * @example
 * const web = await startFakeWeb();
 * const browser = new WebBrowser({ searcherType: 'BingSearch', baseURL: web.url, apiKey: web.apiKey,
 *   allowedHosts: ['127.0.0.1'] });
 * // ...
 * browser.close();
 * await web.close();
 */
export function startFakeWeb(apiKey = 'fake-bing-key'): Promise<FakeWeb> {
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { apiKey, table: FAKE_GDP_TABLE } });
  // The fake never keeps the process alive by itself: a script that forgot close() still exits.
  worker.unref();
  const requests: FakeWebRequest[] = [];
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    worker.once('error', reject);
    worker.on('message', (message: WorkerMessage) => {
      if (message.type === 'request') {
        requests.push(message.request);
        return;
      }
      resolve({
        url: `http://127.0.0.1:${message.port}`,
        apiKey,
        requests,
        async close() {
          worker.postMessage('close');
          // A worker that does not stop on its own within a second is ended.
          const timer = setTimeout(() => void worker.terminate(), 1000);
          await exited;
          clearTimeout(timer);
          return requests;
        },
      });
    });
  });
}
