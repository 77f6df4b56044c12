import { createHash, createHmac } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  type FakeHttpServer,
  type RecordedRequest,
  sendJson,
  startFakeHttp,
} from '../../helpers/http-server';

/**
 * Fakes of the five search services WebBrowser speaks to, and of the web pages their results point at, on one
 * real HTTP server on 127.0.0.1. Each endpoint answers in the service's documented wire format and checks the
 * credentials the way the service does:
 *
 * - DuckDuckGo's HTML endpoint, `POST /html/` (form `q`): a results page with `a.result__a` links wrapped in
 *   `//duckduckgo.com/l/?uddg=`, `a.result__snippet` snippets, and one ad block;
 * - Bing Web Search v7, `GET /v7.0/search` (`Ocp-Apim-Subscription-Key`): `webPages`, `news` and
 *   `rankingResponse.mainline`;
 * - Brave Search, `GET /res/v1/web/search` (`X-Subscription-Token`): `web.results` with `extra_snippets`;
 * - Serper, `POST /search` (`X-API-KEY`, JSON `{ q, num }`): `answerBox`, `knowledgeGraph`, `organic`;
 * - Tencent Cloud `SearchCommon`, `POST /` (TC3-HMAC-SHA256 signature, verified): `Response.Pages` of JSON
 *   `Display` strings, errors as `Response.Error` with HTTP 200;
 * - pages, `GET /pages/<name>`, from `pages`.
 *
 * Scripted faults (`fault()`) replace the next answers of any endpoint: a status with headers and body, a
 * raw body, or no answer at all.
 */

/** One hit of the fake index; `{origin}` in `url` becomes the fake's own origin (and `{port}` its port). */
export interface FakeHit {
  url: string;
  title: string;
  snippet: string;
}

/** A page the fake serves at `/pages/<name>`. */
export interface FakePage {
  body?: string | undefined;
  contentType?: string | undefined;
  status?: number | undefined;
  /** Answers with a redirect to this location instead (`{origin}` replaced). */
  redirect?: string | undefined;
}

/** An answer that replaces the next normal one. */
export interface FakeFault {
  status?: number | undefined;
  headers?: Record<string, string> | undefined;
  /** A raw body (sent as it is). */
  body?: string | undefined;
  /** Never answer. */
  hang?: boolean | undefined;
}

export interface FakeSearchOptions {
  /** Hits per query (exact query text); other queries find nothing. */
  index?: Record<string, FakeHit[]> | undefined;
  pages?: Record<string, FakePage> | undefined;
  /** The key Bing, Brave and Serper accept. @default 'test-key' */
  apiKey?: string | undefined;
  /** Tencent's credentials. @default { secretId: 'test-id', secretKey: 'test-secret' } */
  secretId?: string | undefined;
  secretKey?: string | undefined;
}

export interface FakeSearchServer extends FakeHttpServer {
  /** Answers the next requests (one per fault) with these faults. */
  fault(...faults: FakeFault[]): void;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function duckDuckGoPage(hits: FakeHit[]): string {
  if (hits.length === 0) return '<html><body><div class="no-results">No results.</div></body></html>';
  const ad = `<div class="result results_links results_links_deep result--ad">
  <div class="links_main links_deep result__body"><h2 class="result__title">
  <a class="result__a" rel="nofollow" href="https://duckduckgo.com/y.js?ad_provider=x&amp;u3=https%3A%2F%2Fads.example">An ad</a></h2>
  <a class="result__snippet" href="https://duckduckgo.com/y.js?x">Buy things</a></div></div>`;
  const blocks = hits.map(
    (hit) => `<div class="result results_links results_links_deep web-result ">
  <div class="links_main links_deep result__body">
    <h2 class="result__title">
      <a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=${encodeURIComponent(hit.url)}&amp;rut=abc">${escapeHtml(hit.title).replace(/^(\w+)/, '<b>$1</b>')}</a>
    </h2>
    <div class="result__extras"><a class="result__url" href="${escapeHtml(hit.url)}">${escapeHtml(hit.url)}</a></div>
    <a class="result__snippet" href="${escapeHtml(hit.url)}">${escapeHtml(hit.snippet)}</a>
    <div class="clear"></div>
  </div>
</div>`,
  );
  return `<!DOCTYPE html><html><head><title>DuckDuckGo</title></head><body><div id="links" class="results">${ad}${blocks.join('\n')}</div>
<div class="nav-link"><form action="/html/" method="post"><input type="hidden" name="q" value="x"></form></div></body></html>`;
}

function bingAnswer(hits: FakeHit[], count: number) {
  const pages = hits.slice(0, count).map((hit, index) => ({
    id: `https://api.bing.microsoft.com/api/v7/#WebPages.${index}`,
    name: hit.title,
    url: hit.url,
    isFamilyFriendly: true,
    displayUrl: hit.url,
    snippet: hit.snippet,
    language: 'en',
  }));
  if (pages.length === 0) return { _type: 'SearchResponse', queryContext: { originalQuery: '' } };
  // The ranking puts the pages in reverse order, so a reader that ignores it is caught.
  const mainline = [...pages].reverse().map((page) => ({
    answerType: 'WebPages',
    resultIndex: Number(page.id.split('.').pop()),
    value: { id: page.id },
  }));
  return {
    _type: 'SearchResponse',
    queryContext: { originalQuery: '' },
    webPages: {
      webSearchUrl: 'https://www.bing.com/search?q=x',
      totalEstimatedMatches: pages.length,
      value: pages,
    },
    rankingResponse: { mainline: { items: mainline } },
  };
}

function braveAnswer(hits: FakeHit[], count: number) {
  return {
    type: 'search',
    query: { original: '' },
    web: {
      type: 'search',
      results: hits.slice(0, count).map((hit) => ({
        type: 'search_result',
        title: hit.title,
        url: hit.url,
        description: hit.snippet,
        extra_snippets: [`More about ${hit.title}.`],
        meta_url: { hostname: new URL(hit.url).hostname },
      })),
    },
  };
}

function serperAnswer(hits: FakeHit[], num: number) {
  return {
    searchParameters: { q: '', type: 'search', num, engine: 'google' },
    organic: hits.slice(0, num).map((hit, index) => ({
      title: hit.title,
      link: hit.url,
      snippet: hit.snippet,
      position: index + 1,
    })),
  };
}

function tencentAnswer(hits: FakeHit[]) {
  return {
    Response: {
      Pages: hits.map((hit) =>
        JSON.stringify({ url: hit.url, title: hit.title, content: '', abstract_info: hit.snippet }),
      ),
      RequestId: 'fake-request',
    },
  };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text).digest();

/** Why a Tencent request's TC3-HMAC-SHA256 signature is wrong, or `undefined` when it is right. */
function tencentSignatureProblem(
  request: RecordedRequest,
  secretId: string,
  secretKey: string,
): string | undefined {
  const authorization = String(request.headers.authorization ?? '');
  const match =
    /^TC3-HMAC-SHA256 Credential=([^/]+)\/(\d{4}-\d{2}-\d{2})\/(\w+)\/tc3_request, SignedHeaders=([\w;-]+), Signature=([0-9a-f]{64})$/.exec(
      authorization,
    );
  if (!match) return 'AuthFailure.SignatureFailure';
  const [, id, date, service, signedHeaders, signature] = match;
  if (id !== secretId) return 'AuthFailure.SecretIdNotFound';
  const timestamp = String(request.headers['x-tc-timestamp'] ?? '');
  if (new Date(Number(timestamp) * 1000).toISOString().slice(0, 10) !== date)
    return 'AuthFailure.SignatureFailure';
  const canonicalHeaders = signedHeaders!
    .split(';')
    .map((name) => {
      const value = String(request.headers[name] ?? '');
      return `${name}:${name === 'x-tc-action' ? value.toLowerCase() : value}\n`;
    })
    .join('');
  const canonical = ['POST', '/', '', canonicalHeaders, signedHeaders, sha256(request.body)].join('\n');
  const toSign = ['TC3-HMAC-SHA256', timestamp, `${date}/${service}/tc3_request`, sha256(canonical)].join(
    '\n',
  );
  const key = hmac(hmac(hmac(`TC3${secretKey}`, date!), service!), 'tc3_request');
  const expected = createHmac('sha256', key).update(toSign).digest('hex');
  return expected === signature ? undefined : 'AuthFailure.SignatureFailure';
}

/**
 * Starts the fake services and pages on 127.0.0.1.
 *
 * @example
 * const fake = await startFakeSearch({ index: { cats: [{ url: '{origin}/pages/cats', title: 'Cats', snippet: 'About cats' }] } });
 * new AsyncWebBrowser({ searcherType: 'BingSearch', apiKey: 'test-key', baseURL: fake.url });
 */
export async function startFakeSearch(options: FakeSearchOptions = {}): Promise<FakeSearchServer> {
  const key = options.apiKey ?? 'test-key';
  const secretId = options.secretId ?? 'test-id';
  const secretKey = options.secretKey ?? 'test-secret';
  const faults: FakeFault[] = [];
  let origin = '';
  let port = 0;
  const withOrigin = (text: string) => text.replaceAll('{origin}', origin).replaceAll('{port}', String(port));
  const hitsFor = (query: string | undefined) =>
    (options.index?.[query ?? ''] ?? []).map((hit) => ({ ...hit, url: withOrigin(hit.url) }));

  const answer = (request: RecordedRequest, response: ServerResponse) => {
    const { method, path, query, headers } = request;
    if (method === 'POST' && path === '/html/') {
      const q = new URLSearchParams(request.body).get('q') ?? undefined;
      response.writeHead(200, { 'content-type': 'text/html; charset=UTF-8' });
      return response.end(duckDuckGoPage(hitsFor(q)));
    }
    if (method === 'GET' && path === '/v7.0/search') {
      if (headers['ocp-apim-subscription-key'] !== key) {
        return sendJson(response, 401, {
          error: {
            code: '401',
            message:
              'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription.',
          },
        });
      }
      if (!query.q) {
        return sendJson(response, 400, {
          _type: 'ErrorResponse',
          errors: [
            {
              code: 'InvalidRequest',
              subCode: 'ParameterMissing',
              message: 'Required parameter is missing.',
              parameter: 'q',
            },
          ],
        });
      }
      return sendJson(response, 200, bingAnswer(hitsFor(query.q), Number(query.count ?? 10)));
    }
    if (method === 'GET' && path === '/res/v1/web/search') {
      if (headers['x-subscription-token'] !== key) {
        return sendJson(response, 401, {
          type: 'ErrorResponse',
          error: {
            id: 'fake',
            status: 401,
            code: 'SUBSCRIPTION_TOKEN_INVALID',
            detail: 'The provided subscription token is invalid.',
          },
          time: 0,
        });
      }
      const count = Number(query.count ?? 20);
      if (count > 20) {
        return sendJson(response, 422, {
          type: 'ErrorResponse',
          error: { status: 422, code: 'VALIDATION', detail: 'Unable to validate request parameter(s)' },
        });
      }
      return sendJson(response, 200, braveAnswer(hitsFor(query.q), count));
    }
    if (method === 'POST' && path === '/search') {
      if (headers['x-api-key'] !== key)
        return sendJson(response, 403, { message: 'Unauthorized.', statusCode: 403 });
      const body = JSON.parse(request.body) as { q?: string; num?: number };
      return sendJson(response, 200, serperAnswer(hitsFor(body.q), body.num ?? 10));
    }
    if (method === 'POST' && path === '/') {
      const problem = tencentSignatureProblem(request, secretId, secretKey);
      if (problem) {
        return sendJson(response, 200, {
          Response: {
            Error: { Code: problem, Message: 'The provided credentials could not be validated.' },
            RequestId: 'fake',
          },
        });
      }
      if (headers['x-tc-action'] !== 'SearchCommon' || headers['x-tc-version'] !== '2020-12-29') {
        return sendJson(response, 200, {
          Response: {
            Error: { Code: 'InvalidAction', Message: 'The action does not exist.' },
            RequestId: 'fake',
          },
        });
      }
      const body = JSON.parse(request.body) as { Query?: string };
      return sendJson(response, 200, tencentAnswer(hitsFor(body.Query)));
    }
    if (method === 'GET' && path.startsWith('/pages/')) {
      const page = options.pages?.[path.slice('/pages/'.length)];
      if (!page) {
        response.writeHead(404, { 'content-type': 'text/html' });
        return response.end('<h1>Not found</h1>');
      }
      if (page.redirect !== undefined) {
        response.writeHead(302, { location: withOrigin(page.redirect) });
        return response.end();
      }
      response.writeHead(page.status ?? 200, {
        'content-type': page.contentType ?? 'text/html; charset=utf-8',
      });
      return response.end(withOrigin(page.body ?? ''));
    }
    return sendJson(response, 404, { message: `no fake endpoint ${method} ${path}` });
  };

  const server = await startFakeHttp((request, response) => {
    const fault = faults.shift();
    if (!fault) return answer(request, response);
    if (fault.hang) return;
    response.writeHead(fault.status ?? 200, { 'content-type': 'application/json', ...fault.headers });
    response.end(fault.body ?? '');
  });
  origin = server.url;
  port = server.port;
  return Object.assign(server, {
    fault(...next: FakeFault[]) {
      faults.push(...next);
    },
  });
}

/**
 * Hosts {@link startFakeSearch} in the sync bridge's worker thread, so a sync `WebBrowser` (which blocks the
 * test's thread) can reach it. Every method is called through the bridge.
 */
export class FakeSearchHost {
  #server: FakeSearchServer | undefined;
  readonly #options: FakeSearchOptions;

  constructor(options: FakeSearchOptions) {
    this.#options = options;
  }

  async start(): Promise<string> {
    this.#server ??= await startFakeSearch(this.#options);
    return this.#server.url;
  }

  /** The paths requested so far. */
  paths(): string[] {
    return this.#server?.requests.map((request) => request.path) ?? [];
  }

  fault(faults: FakeFault[]): void {
    this.#server?.fault(...faults);
  }

  async close(): Promise<void> {
    await this.#server?.close();
    this.#server = undefined;
  }
}
