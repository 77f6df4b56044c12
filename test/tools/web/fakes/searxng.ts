import { type FakeHttpServer, sendJson, startFakeHttp } from '../../../helpers/http-server';

/** One page a fake SearXNG instance knows. */
export interface SearxngHit {
  url: string;
  title: string;
  content: string;
}

/** Options of {@link startFakeSearxng}. */
export interface FakeSearxngOptions {
  /** Hits by query (an unknown query has none). */
  index: Record<string, SearxngHit[]>;
  /** Whether `format=json` is allowed (SearXNG answers 403 for a format its settings.yml does not list). @default true */
  json?: boolean;
  /** The path the instance serves under, e.g. `'/searx'`. @default '' */
  prefix?: string;
}

/**
 * A SearXNG instance on 127.0.0.1 speaking its JSON API: `GET {prefix}/search?q=&format=json` answers
 * `{ query, number_of_results, results: [{ url, title, content, engine, ... }], answers, suggestions, ... }`
 * in the shape SearXNG 2024+ sends; the HTML format and other paths are not served.
 */
export function startFakeSearxng(options: FakeSearxngOptions): Promise<FakeHttpServer> {
  const prefix = options.prefix ?? '';
  return startFakeHttp((request, response) => {
    if (request.path !== `${prefix}/search`) {
      response.writeHead(404, { 'content-type': 'text/html' });
      response.end('<html><body>Not Found</body></html>');
      return;
    }
    if (request.query.format !== 'json' || options.json === false) {
      response.writeHead(403, { 'content-type': 'text/html' });
      response.end('<html><body>403 Forbidden</body></html>');
      return;
    }
    const hits = options.index[request.query.q ?? ''] ?? [];
    sendJson(response, 200, {
      query: request.query.q,
      number_of_results: 0,
      results: hits.map((hit, index) => ({
        ...hit,
        engine: 'duckduckgo',
        parsed_url: new URL(hit.url).href.split(/[/?#]/).filter(Boolean),
        template: 'default.html',
        engines: ['duckduckgo', 'brave'],
        positions: [index + 1],
        score: 1 / (index + 1),
        category: request.query.categories ?? 'general',
        publishedDate: null,
      })),
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: [`${request.query.q} meaning`],
      unresponsive_engines: [],
    });
  });
}
