import { type HttpOutcome, httpError } from '../http';
import { BaseSearcher, decodeEntities, type SearcherOptions, type SearchResult } from './base';

/** Options of {@link DuckDuckGoSearcher}. */
export interface DuckDuckGoSearcherOptions extends Omit<SearcherOptions, 'apiKey'> {
  /** The region (`kl`), e.g. `'us-en'`, `'cn-zh'`. @default 'wt-wt' (no region) */
  region?: string | undefined;
  /** `'on'`, `'moderate'` or `'off'`. @default 'moderate' */
  safeSearch?: 'on' | 'moderate' | 'off' | undefined;
}

const SAFE_SEARCH = { on: '1', moderate: '-1', off: '-2' } as const;

/** The attributes of an HTML start tag, e.g. `{ class: 'result__a', href: '...' }` (values decoded). */
function attributes(tag: string): Record<string, string> {
  const found: Record<string, string> = {};
  for (const match of tag.matchAll(/([\w-]+)\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))/g)) {
    found[match[1]!.toLowerCase()] = decodeEntities(match[3] ?? match[4] ?? match[5] ?? '');
  }
  return found;
}

function hasClass(attrs: Record<string, string>, name: string): boolean {
  return (attrs.class ?? '').split(/\s+/).includes(name);
}

/** The destination of a result link: DuckDuckGo wraps it as `//duckduckgo.com/l/?uddg=<url>`. */
function destination(href: string): string {
  try {
    const url = new URL(href, 'https://duckduckgo.com');
    const target = url.searchParams.get('uddg');
    if (target) return target;
    return url.href;
  } catch {
    return href;
  }
}

/**
 * Reads the results of DuckDuckGo's HTML endpoint: each `a.result__a` (link and title) with the
 * `.result__snippet` after it. Ads (`result--ad`, `y.js` links) are skipped.
 */
export function parseDuckDuckGoHtml(html: string): SearchResult[] {
  const results: SearchResult[] = [];
  let current: SearchResult | undefined;
  let inAd = false;
  // Result blocks (divs) and links, in document order.
  for (const match of html.matchAll(/<div\b([^>]*)>|<a\b([^>]*)>([\s\S]*?)<\/a>/gi)) {
    if (match[1] !== undefined) {
      const attrs = attributes(match[1]);
      if (hasClass(attrs, 'result')) {
        inAd = hasClass(attrs, 'result--ad');
        current = undefined;
      }
      continue;
    }
    const attrs = attributes(match[2] ?? '');
    if (hasClass(attrs, 'result__a')) {
      const url = destination(attrs.href ?? '');
      if (inAd || /duckduckgo\.com\/y\.js/.test(url)) continue;
      current = { url, title: match[3] ?? '', summ: '' };
      results.push(current);
    } else if (hasClass(attrs, 'result__snippet') && current && current.summ === '') {
      current.summ = match[3] ?? '';
    }
  }
  return results;
}

/**
 * DuckDuckGo, which needs no key: its HTML endpoint (`POST {baseURL}/html/` with the form `q`, `kl`, `p`), the
 * way the `duckduckgo_search` package behind Lagent's searcher reads it. DuckDuckGo answers 202 with a
 * challenge page when it throttles a client; that is reported as a rate limit.
 *
 * @default baseURL 'https://html.duckduckgo.com'
 */
export class DuckDuckGoSearcher extends BaseSearcher {
  readonly #options: DuckDuckGoSearcherOptions;

  constructor(options: DuckDuckGoSearcherOptions = {}) {
    super(options, {
      name: 'DuckDuckGoSearch',
      defaultBaseURL: 'https://html.duckduckgo.com',
      requireKey: false,
    });
    this.#options = options;
  }

  async search(
    query: string,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<HttpOutcome<SearchResult[]>> {
    const form = new URLSearchParams({
      q: query,
      kl: this.#options.region ?? 'wt-wt',
      p: SAFE_SEARCH[this.#options.safeSearch ?? 'moderate'],
    });
    const outcome = await this.http.text({
      method: 'POST',
      path: '/html/',
      body: form.toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'text/html',
        referer: 'https://duckduckgo.com/',
      },
      signal: options.signal,
    });
    if (!outcome.ok) return outcome;
    if (outcome.status === 202) {
      return httpError({
        kind: 'status',
        status: 202,
        message: `${this.name}: DuckDuckGo is throttling this client (HTTP 202 challenge); wait a while before searching again, or use another searcherType.`,
      });
    }
    if (!/<html|<div|<a\b/i.test(outcome.data)) {
      return httpError({
        kind: 'malformed',
        message: `${this.name}: the answer is not a DuckDuckGo results page; check baseURL.`,
      });
    }
    return { ...outcome, data: this.filter(parseDuckDuckGoHtml(outcome.data)) };
  }
}
