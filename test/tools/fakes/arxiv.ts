import { type FakeHttpServer, startFakeHttp } from '../../helpers/http-server';

/**
 * A fake of the arXiv API (`GET /api/query`), answering in its Atom format: a feed with OpenSearch counts and
 * one `<entry>` per article (id, updated, published, title, summary, authors, links, categories). A negative
 * `max_results` gets arXiv's error answer: HTTP 400 with an error entry whose id is under `/api/errors`.
 * `fault()` replaces the next answers, as in the search fakes.
 */

export interface FakeArticle {
  id: string;
  published: string;
  updated: string;
  title: string;
  summary: string;
  authors: string[];
}

export interface FakeArxivFault {
  status?: number | undefined;
  headers?: Record<string, string> | undefined;
  body?: string | undefined;
  hang?: boolean | undefined;
}

export interface FakeArxivServer extends FakeHttpServer {
  fault(...faults: FakeArxivFault[]): void;
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function feed(query: string, entries: string[], total: number): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query?search_query=${encodeURIComponent(query)}" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: search_query=${escapeXml(query)}</title>
  <id>http://arxiv.org/api/fake</id>
  <updated>2026-01-01T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">${total}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">${entries.length}</opensearch:itemsPerPage>
${entries.join('\n')}
</feed>`;
}

function entry(article: FakeArticle): string {
  return `  <entry>
    <id>http://arxiv.org/abs/${article.id}</id>
    <updated>${article.updated}</updated>
    <published>${article.published}</published>
    <title>${escapeXml(article.title)}</title>
    <summary>${escapeXml(article.summary)}</summary>
${article.authors.map((name) => `    <author>\n      <name>${escapeXml(name)}</name>\n    </author>`).join('\n')}
    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">12 pages</arxiv:comment>
    <link href="http://arxiv.org/abs/${article.id}" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/${article.id}" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
    <category term="cs.CL" scheme="http://arxiv.org/schemas/atom"/>
  </entry>`;
}

function errorEntry(message: string): string {
  const id = `http://arxiv.org/api/errors#${message.replace(/\W+/g, '_')}`;
  return `  <entry>
    <id>${id}</id>
    <title>Error</title>
    <summary>${escapeXml(message)}</summary>
    <updated>2026-01-01T00:00:00-05:00</updated>
    <link href="${id}" rel="alternate" type="text/html"/>
    <author>
      <name>arXiv api core</name>
    </author>
  </entry>`;
}

/** Starts the fake arXiv API; `index` maps a `search_query` to its articles, best first. */
export async function startFakeArxiv(index: Record<string, FakeArticle[]>): Promise<FakeArxivServer> {
  const faults: FakeArxivFault[] = [];
  const server = await startFakeHttp((request, response) => {
    const fault = faults.shift();
    if (fault) {
      if (fault.hang) return;
      response.writeHead(fault.status ?? 200, { 'content-type': 'application/atom+xml', ...fault.headers });
      return response.end(fault.body ?? '');
    }
    if (request.method !== 'GET' || request.path !== '/api/query') {
      response.writeHead(404, { 'content-type': 'text/plain' });
      return response.end('not found');
    }
    const query = request.query.search_query ?? '';
    const max = Number(request.query.max_results ?? 10);
    response.setHeader('content-type', 'application/atom+xml; charset=utf-8');
    if (max < 0) {
      response.statusCode = 400;
      return response.end(feed(query, [errorEntry('max_results must be non-negative')], 1));
    }
    const articles = index[query] ?? [];
    response.end(feed(query, articles.slice(0, max).map(entry), articles.length));
  });
  return Object.assign(server, {
    fault(...next: FakeArxivFault[]) {
      faults.push(...next);
    },
  });
}

/** Hosts {@link startFakeArxiv} in the sync bridge's worker thread, for the sync `ArxivSearch`. */
export class FakeArxivHost {
  #server: FakeArxivServer | undefined;
  readonly #index: Record<string, FakeArticle[]>;

  constructor(index: Record<string, FakeArticle[]>) {
    this.#index = index;
  }

  async start(): Promise<string> {
    this.#server ??= await startFakeArxiv(this.#index);
    return this.#server.url;
  }

  async close(): Promise<void> {
    await this.#server?.close();
    this.#server = undefined;
  }
}
