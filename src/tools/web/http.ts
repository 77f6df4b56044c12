/**
 * The HTTP layer of every networked tool in `lagent-ts/tools`.
 *
 * - {@link HttpClient} talks to one service's API (its `baseURL` is trusted): per-attempt `timeout`, retries of
 *   429 and 5xx with exponential backoff that honours `Retry-After`, and failures returned as data
 *   ({@link HttpFailure}) instead of thrown, each with a sentence the model can act on.
 * - `safeFetch` opens URLs chosen by a model or found in search results: http(s) only, bounded in size,
 *   time and redirects, and (unless `allowPrivateNetwork`) never connecting to loopback, private, link-local or
 *   metadata addresses — checked on the resolved address the socket really uses and on the connected socket, on
 *   every redirect, over connections of their own (see `CHECKED_AGENTS`).
 *
 * Nothing here throws for a failed request: every function resolves to an {@link HttpOutcome}.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
import { Deadline } from '../../core/deadline';
import { ActionReturn } from '../../schema/action-return';
import { ActionStatusCode } from '../../schema/status';
import { parseRetryAfter } from '../../utils/retry-after';
import { errorMessage } from '../../utils/text';
import { sleep } from '../../utils/timers';
import { blockedAddressReason } from './http/address';
import { BlockedAddressError, type RawResponse, sendRequest } from './http/transport';

export { blockedAddressReason } from './http/address';

/** What went wrong in a request. */
export type HttpFailureKind =
  /** The tool needs an API key and has none. */
  | 'missing-key'
  /** The server answered with an error status (see `status`). */
  | 'status'
  /** No complete answer within the time limit. */
  | 'timeout'
  /** The server could not be reached, or the connection broke. */
  | 'network'
  /** The answer could not be read (not JSON, not the expected shape, too large). */
  | 'malformed'
  /** The service answered, but with an error of its own in the body. */
  | 'service-error'
  /** The caller's signal aborted the request. */
  | 'aborted'
  /** The URL may not be fetched: not http(s), not a URL, or a non-public address. */
  | 'blocked-url'
  /** More redirects than allowed. */
  | 'too-many-redirects'
  /** The document is not text (a PDF, an image, ...). */
  | 'unsupported-content';

/** What builds an {@link HttpFailure}. */
export interface HttpFailureInit {
  kind: HttpFailureKind;
  /** One sentence the model can act on, starting with the tool's name. */
  message: string;
  /** The HTTP status, for `kind: 'status'`. */
  status?: number | undefined;
  /** Attempts made. @default 1 */
  attempts?: number | undefined;
  /** For `kind: 'status'`: the error answer's body as text (at most 64 KiB), for services that explain there. */
  body?: string | undefined;
}

const API_KINDS: ReadonlySet<HttpFailureKind> = new Set([
  'missing-key',
  'malformed',
  'service-error',
  'blocked-url',
  'unsupported-content',
]);

/**
 * A failed request, as data. `state` is `API_ERROR` when the exchange itself worked or never started (no key, a
 * malformed answer, a refused URL, an error the service reported in its body) and `HTTP_ERROR` when the
 * exchange failed (an error status, a timeout, a network failure, too many redirects).
 *
 * @example
 * const outcome = await client.json({ path: '/v7.0/search', query: { q: 'lagent' } });
 * if (!outcome.ok) return outcome.failure.toActionReturn();
 */
export class HttpFailure {
  readonly kind: HttpFailureKind;
  readonly message: string;
  readonly status: number | undefined;
  readonly attempts: number;
  readonly state: ActionStatusCode;
  /** The error answer's body, for `kind: 'status'` (see {@link HttpFailureInit.body}). */
  readonly body: string | undefined;

  constructor(init: HttpFailureInit) {
    this.kind = init.kind;
    this.message = init.message;
    this.status = init.status;
    this.attempts = init.attempts ?? 1;
    this.body = init.body;
    this.state = API_KINDS.has(init.kind) ? ActionStatusCode.API_ERROR : ActionStatusCode.HTTP_ERROR;
  }

  /** The failure as a tool's result: `errmsg` is the message, `state` is `HTTP_ERROR` or `API_ERROR`. */
  toActionReturn(args?: Record<string, unknown> | undefined): ActionReturn {
    return new ActionReturn({ args, errmsg: this.message, state: this.state });
  }
}

/** A request that got a usable answer. */
export interface HttpSuccess<T> {
  ok: true;
  status: number;
  headers: IncomingHttpHeaders;
  data: T;
  /** The URL that answered (after redirects, for `safeFetch`). */
  url: string;
  attempts: number;
}

/** A request that failed; `failure` says why. */
export interface HttpError {
  ok: false;
  failure: HttpFailure;
}

/** What every request resolves to; nothing is thrown. */
export type HttpOutcome<T> = HttpSuccess<T> | HttpError;

/** Builds the failed outcome of {@link HttpFailure}'s init. */
export function httpError(init: HttpFailureInit): HttpError {
  return { ok: false, failure: new HttpFailure(init) };
}

/** Runs `work` with a signal aborted by `signal` or after `timeout` ms; says which one stopped it. */
async function withTimeout<T>(
  timeout: number,
  signal: AbortSignal | undefined,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<{ value: T } | { error: unknown; timedOut: boolean; aborted: boolean }> {
  const deadline = new Deadline(signal, timeout);
  try {
    return { value: await work(deadline.signal) };
  } catch (error) {
    return { error, timedOut: deadline.timedOut, aborted: signal?.aborted === true };
  } finally {
    deadline.dispose();
  }
}

const RETRYABLE_NETWORK_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'EAI_AGAIN']);

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function errorText(error: unknown): string {
  const code = errorCode(error);
  const message = errorMessage(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/** A short human-readable detail the server put in an error body (JSON `message`/`error`, or plain text). */
function serverDetail(response: RawResponse): string | undefined {
  const text = response.body.toString('utf8').trim();
  if (text === '') return undefined;
  let detail: unknown = text;
  try {
    const json = JSON.parse(text) as Record<string, unknown>;
    const error = json.error as Record<string, unknown> | string | undefined;
    detail =
      (typeof error === 'object' ? (error?.message ?? error?.detail) : error) ??
      json.message ??
      json.detail ??
      json.Message ??
      text;
  } catch {
    if (/^\s*</.test(text)) return undefined; // an HTML error page says nothing useful to a model
  }
  const flat = (typeof detail === 'string' ? detail : JSON.stringify(detail)).replace(/\s+/g, ' ');
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Options of {@link HttpClient}. */
export interface HttpClientOptions {
  /** The tool's name, which starts every failure message, e.g. `'BingSearch'`. */
  service: string;
  /** The service's API root; requests' `path` is resolved against it. Trusted: no address check. */
  baseURL: string;
  /** The API key; the caller puts it in the header the service wants. */
  apiKey?: string | undefined;
  /** Whether requests fail with `missing-key` (without being sent) when `apiKey` is empty. @default false */
  requireKey?: boolean | undefined;
  /** How to supply a key, for messages, e.g. `'set BING_API_KEY or pass apiKey'`. @default 'pass apiKey' */
  keyHint?: string | undefined;
  /** Milliseconds one attempt may take. @default 20000 */
  timeout?: number | undefined;
  /** Retries after the first attempt, for 429, 5xx and broken connections. @default 2 */
  retries?: number | undefined;
  /** First backoff delay in ms, doubled per retry, when the server sends no `Retry-After`. @default 500 */
  minDelayMs?: number | undefined;
  /** Upper bound of the backoff delay in ms. @default 8000 */
  maxDelayMs?: number | undefined;
  /**
   * The longest `Retry-After` waited for, in ms. When the server asks for longer, the client does not retry
   * and the failure tells the model how long the service asked to wait. @default 10000
   */
  maxRetryAfterMs?: number | undefined;
  /** Headers sent with every request. */
  headers?: Record<string, string> | undefined;
  /** Largest response body read, in bytes; a longer one is a `malformed` failure. @default 10 MiB */
  maxResponseBytes?: number | undefined;
}

/** One request of an {@link HttpClient}. */
export interface HttpRequestOptions {
  /** @default 'POST' when there is a body, else 'GET' */
  method?: 'GET' | 'POST' | undefined;
  /** Appended to `baseURL` (which keeps its own path), e.g. `'/v7.0/search'`. @default '' */
  path?: string | undefined;
  /** Query parameters; `undefined` values are left out. */
  query?: Record<string, string | number | boolean | undefined> | undefined;
  headers?: Record<string, string> | undefined;
  /** A JSON body (sets `content-type: application/json` unless given). */
  json?: unknown;
  /** A raw body, e.g. a form; set its `content-type` in `headers`. */
  body?: string | undefined;
  /** The caller's signal (`context.signal`): aborting it stops the request and any backoff wait. */
  signal?: AbortSignal | undefined;
}

/**
 * A client for one service's API: builds URLs from `baseURL`, applies the timeout per attempt, retries
 * 429 / 5xx / broken connections with exponential backoff (or the server's `Retry-After`), and resolves to an
 * {@link HttpOutcome} — never throws.
 *
 * @example
 * const client = new HttpClient({
 *   service: 'BingSearch', baseURL: 'https://api.bing.microsoft.com', apiKey: process.env.BING_API_KEY,
 *   requireKey: true, keyHint: 'set BING_API_KEY or pass apiKey',
 * });
 * const outcome = await client.json({ path: '/v7.0/search', query: { q: 'lagent' },
 *   headers: { 'Ocp-Apim-Subscription-Key': client.apiKey ?? '' }, signal: context.signal });
 * if (!outcome.ok) return outcome.failure.toActionReturn();
 * outcome.data; // the parsed JSON
 */
export class HttpClient {
  readonly service: string;
  readonly baseURL: string;
  readonly apiKey: string | undefined;
  readonly timeout: number;
  readonly #options: HttpClientOptions;

  constructor(options: HttpClientOptions) {
    this.service = options.service;
    this.baseURL = options.baseURL;
    this.apiKey = options.apiKey === '' ? undefined : options.apiKey;
    this.timeout = options.timeout ?? 20_000;
    this.#options = options;
  }

  /** The `missing-key` failure when the client requires a key and has none; `undefined` otherwise. */
  missingKey(): HttpFailure | undefined {
    if (!this.#options.requireKey || this.apiKey !== undefined) return undefined;
    return new HttpFailure({
      kind: 'missing-key',
      message: `${this.service}: no API key is configured; ${this.#keyHint()}.`,
    });
  }

  #keyHint(): string {
    return this.#options.keyHint ?? 'pass apiKey';
  }

  /** The absolute URL of a request: `baseURL` + `path` + query. */
  url(request: Pick<HttpRequestOptions, 'path' | 'query'>): URL {
    const base = this.baseURL.replace(/\/+$/, '');
    const path = request.path ?? '';
    const url = new URL(base + (path === '' || path.startsWith('/') ? path : `/${path}`));
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.append(name, String(value));
    }
    return url;
  }

  /** Sends the request (with retries) and parses the body as JSON; unreadable JSON is a `malformed` failure. */
  async json<T = unknown>(request: HttpRequestOptions = {}): Promise<HttpOutcome<T>> {
    const outcome = await this.text(request);
    if (!outcome.ok) return outcome;
    try {
      return { ...outcome, data: JSON.parse(outcome.data) as T };
    } catch (error) {
      return httpError({
        kind: 'malformed',
        message: `${this.service}: the service answered with a body that is not valid JSON (${errorText(error)}); check baseURL, or try again later.`,
        attempts: outcome.attempts,
      });
    }
  }

  /** Sends the request (with retries) and decodes the body as UTF-8 text. */
  async text(request: HttpRequestOptions = {}): Promise<HttpOutcome<string>> {
    const missing = this.missingKey();
    if (missing) return { ok: false, failure: missing };
    let url: URL;
    try {
      url = this.url(request);
    } catch (error) {
      return httpError({
        kind: 'blocked-url',
        message: `${this.service}: the configured baseURL ${JSON.stringify(this.baseURL)} is not a valid URL (${errorText(error)}).`,
      });
    }
    const headers: Record<string, string> = {
      accept: 'application/json, text/plain;q=0.9, */*;q=0.5',
      'accept-encoding': 'gzip, deflate, br',
      'user-agent': USER_AGENT,
      ...this.#options.headers,
      ...request.headers,
    };
    let body: Buffer | undefined;
    if (request.json !== undefined) {
      body = Buffer.from(JSON.stringify(request.json));
      if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type'))
        headers['content-type'] = 'application/json';
    } else if (request.body !== undefined) {
      body = Buffer.from(request.body);
    }
    const method = request.method ?? (body === undefined ? 'GET' : 'POST');
    const retries = this.#options.retries ?? 2;
    const minDelay = this.#options.minDelayMs ?? 500;
    const maxDelay = this.#options.maxDelayMs ?? 8000;
    const maxRetryAfter = this.#options.maxRetryAfterMs ?? 10_000;
    const maxBytes = this.#options.maxResponseBytes ?? 10 * 1024 * 1024;
    const signal = request.signal;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) return this.#aborted(attempt - 1);
      const result = await withTimeout(this.timeout, signal, (combined) =>
        sendRequest(url, { method, headers, body, signal: combined, maxBytes }),
      );
      let failure: HttpFailure;
      let retryable: boolean;
      let retryAfter: number | undefined;
      if ('value' in result) {
        const response = result.value;
        if (response.status >= 200 && response.status < 300) {
          if (response.truncated) {
            return httpError({
              kind: 'malformed',
              message: `${this.service}: the answer was larger than ${maxBytes} bytes and was not read.`,
              attempts: attempt,
            });
          }
          return {
            ok: true,
            status: response.status,
            headers: response.headers,
            data: response.body.toString('utf8'),
            url: url.href,
            attempts: attempt,
          };
        }
        retryable = response.status === 429 || response.status === 408 || response.status >= 500;
        retryAfter = parseRetryAfter(headerValue(response.headers, 'retry-after'));
        if (retryable && attempt <= retries && retryAfter !== undefined && retryAfter > maxRetryAfter) {
          return this.#statusFailure(response, attempt, retryAfter);
        }
        failure = this.#statusFailure(response, attempt, undefined).failure;
      } else if (result.aborted) {
        return this.#aborted(attempt);
      } else if (result.timedOut) {
        return httpError({
          kind: 'timeout',
          message: `${this.service}: no answer from ${url.origin} within ${this.timeout} ms; try again later, or raise timeout.`,
          attempts: attempt,
        });
      } else {
        const code = errorCode(result.error);
        retryable = code !== undefined && RETRYABLE_NETWORK_CODES.has(code);
        failure = new HttpFailure({
          kind: 'network',
          message: `${this.service}: could not reach ${url.origin} (${errorText(result.error)}); check baseURL and the network, or try again later.`,
          attempts: attempt,
        });
      }
      if (!retryable || attempt > retries) return { ok: false, failure };
      const delay = retryAfter ?? Math.min(maxDelay, minDelay * 2 ** (attempt - 1));
      if (
        !(await sleep(delay, signal).then(
          () => true,
          () => false,
        ))
      )
        return this.#aborted(attempt);
    }
  }

  #aborted(attempts: number): HttpError {
    return httpError({
      kind: 'aborted',
      message: `${this.service}: the request was cancelled.`,
      attempts,
    });
  }

  /** The failure for an error status, with what the model can do about it. */
  #statusFailure(response: RawResponse, attempts: number, waitMs: number | undefined): HttpError {
    const status = response.status;
    const detail = serverDetail(response);
    const said = detail ? ` The service said: ${detail}` : '';
    const tries = attempts > 1 ? ` after ${attempts} attempts` : '';
    let message: string;
    if (status === 401 || status === 403) {
      message = `${this.service}: the API key was rejected (HTTP ${status}); ${this.#keyHint()}.${said}`;
    } else if (status === 429) {
      message =
        waitMs !== undefined
          ? `${this.service}: rate limited (HTTP 429); the service asks to wait ${Math.ceil(waitMs / 1000)} s before trying again.${said}`
          : `${this.service}: rate limited (HTTP 429)${tries}; wait a while before trying again.${said}`;
    } else if (status >= 500) {
      const wait = waitMs !== undefined ? ` (it asks to wait ${Math.ceil(waitMs / 1000)} s)` : '';
      message = `${this.service}: the service failed (HTTP ${status})${tries}${wait}; try again later.${said}`;
    } else if (status === 404) {
      message = `${this.service}: the API endpoint was not found (HTTP 404); check baseURL.${said}`;
    } else {
      message = `${this.service}: the service refused the request (HTTP ${status}); check the arguments.${said}`;
    }
    const body = response.body.subarray(0, 64 * 1024).toString('utf8');
    return httpError({ kind: 'status', status, message, attempts, body });
  }
}

const USER_AGENT = 'Mozilla/5.0 (compatible; lagent-ts; +https://github.com/InternLM/lagent)';

/** Options of `safeFetch`. */
export interface SafeFetchOptions {
  /** Starts every failure message, e.g. `'WebBrowser.open_url'`. @default 'WebBrowser' */
  service?: string | undefined;
  /** Allow loopback, private, link-local and metadata addresses (e.g. for an intranet). @default false */
  allowPrivateNetwork?: boolean | undefined;
  /**
   * Host names (or IP literals) exempt from the address check, e.g. one intranet wiki; every other host, and
   * every redirect to another host, is still checked. Matched exactly, case-insensitively. @default []
   */
  allowedHosts?: readonly string[] | undefined;
  /** Milliseconds for the whole fetch, redirects included. @default 15000 */
  timeout?: number | undefined;
  /** Bytes of (decompressed) body read; the rest is cut and `truncated` set. @default 2 MiB */
  maxBytes?: number | undefined;
  /** Redirects followed. @default 5 */
  maxRedirects?: number | undefined;
  /** The caller's signal (`context.signal`). */
  signal?: AbortSignal | undefined;
}

/** A fetched document. */
export interface FetchedDocument {
  /** The media type, e.g. `'text/html'` (no parameters). */
  contentType: string;
  /** The body decoded with its charset. */
  text: string;
  /** The body was longer than `maxBytes` and was cut. */
  truncated: boolean;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const TEXT_TYPES = /^(text\/[\w.+-]+|application\/(xhtml\+xml|xml|json|[\w.+-]+\+(xml|json)))$/;

/** The host of `url` as compared with `allowedHosts`: lower-case, IPv6 without brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/** Why `url` may not be fetched (as a sentence ending), or `undefined` when its form is fine. */
function urlProblem(url: URL, checked: boolean): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return `only http and https URLs can be opened, not ${url.protocol.replace(/:$/, '')}:`;
  }
  if (!checked) return undefined;
  const host = hostOf(url);
  if (isIP(host) !== 0) {
    const reason = blockedAddressReason(host);
    if (reason !== undefined)
      return `${host} is ${reason}, which may not be opened; only public addresses can`;
  }
  return undefined;
}

function charsetOf(contentType: string | undefined, body: Buffer): string {
  const declared = /charset\s*=\s*["']?([\w.:-]+)/i.exec(contentType ?? '')?.[1];
  if (declared) return declared;
  const head = body.subarray(0, 2048).toString('latin1');
  return /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1] ?? 'utf-8';
}

function decodeText(body: Buffer, charset: string): string {
  try {
    return new TextDecoder(charset).decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body);
  }
}

/**
 * Fetches a URL that a model chose (or a search result gave): only http(s); at most `maxBytes` of body and
 * `timeout` ms overall; redirects followed by hand, at most `maxRedirects` times. Unless `allowPrivateNetwork`,
 * every hop is checked: an IP literal before connecting, a host name on every address it resolves to, inside
 * the socket's own lookup so the checked address is the one connected to, and the connected socket's remote
 * address before the request is written. Checked hops use their own connection pool, never a keep-alive socket
 * that a trusted request ({@link HttpClient}, or a fetch with `allowPrivateNetwork`) left open. Only text
 * documents (HTML, XML, JSON, plain text) are read. Resolves to an {@link HttpOutcome}; never throws.
 *
 * @example
 * const page = await safeFetch('https://example.com', { signal: context.signal });
 * if (!page.ok) return page.failure.toActionReturn();
 * page.data.text; // the HTML
 */
export async function safeFetch(
  url: string,
  options: SafeFetchOptions = {},
): Promise<HttpOutcome<FetchedDocument>> {
  const service = options.service ?? 'WebBrowser';
  const allowPrivate = options.allowPrivateNetwork ?? false;
  const allowedHosts = new Set(
    (options.allowedHosts ?? []).map((host) => host.replace(/^\[|\]$/g, '').toLowerCase()),
  );
  const timeout = options.timeout ?? 15_000;
  const maxRedirects = options.maxRedirects ?? 5;
  const maxBytes = options.maxBytes ?? 2 * 1024 * 1024;
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    return httpError({
      kind: 'blocked-url',
      message: `${service}: ${JSON.stringify(url)} is not a valid URL; give an absolute http(s) URL.`,
    });
  }
  const result = await withTimeout(timeout, options.signal, async (signal) => {
    for (let hop = 0; ; hop++) {
      const via = hop > 0 ? ` (redirected from ${url})` : '';
      const checked = !allowPrivate && !allowedHosts.has(hostOf(current));
      const problem = urlProblem(current, checked);
      if (problem !== undefined) {
        return httpError({
          kind: 'blocked-url',
          message: `${service}: refused ${current.href}${via}: ${problem}.`,
        });
      }
      let response: RawResponse;
      try {
        response = await sendRequest(current, {
          method: 'GET',
          headers: {
            accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5',
            'accept-encoding': 'gzip, deflate, br',
            'user-agent': USER_AGENT,
          },
          signal,
          maxBytes,
          checked,
        });
      } catch (error) {
        if (error instanceof BlockedAddressError) {
          return httpError({
            kind: 'blocked-url',
            message: `${service}: refused ${current.href}${via}: ${error.message}, which may not be opened; only public addresses can.`,
          });
        }
        throw error;
      }
      const location = headerValue(response.headers, 'location');
      if (REDIRECTS.has(response.status) && location !== undefined) {
        if (hop >= maxRedirects) {
          return httpError({
            kind: 'too-many-redirects',
            message: `${service}: ${url} redirected more than ${maxRedirects} times; open the final page's URL directly, or give up on it.`,
          });
        }
        try {
          current = new URL(location, current);
        } catch {
          return httpError({
            kind: 'malformed',
            message: `${service}: ${current.href} redirected to an invalid URL (${JSON.stringify(location)}).`,
          });
        }
        continue;
      }
      if (response.status < 200 || response.status >= 300) {
        const hint =
          response.status === 404 || response.status === 410 ? 'the page does not exist' : 'try another page';
        return httpError({
          kind: 'status',
          status: response.status,
          message: `${service}: ${current.href} answered HTTP ${response.status}; ${hint}.`,
        });
      }
      const contentTypeHeader = headerValue(response.headers, 'content-type');
      const contentType = (contentTypeHeader ?? 'text/html').split(';')[0]!.trim().toLowerCase();
      if (!TEXT_TYPES.test(contentType)) {
        return httpError({
          kind: 'unsupported-content',
          message: `${service}: ${current.href} is a ${contentType} document, which cannot be read as text; try another page.`,
        });
      }
      const text = decodeText(response.body, charsetOf(contentTypeHeader, response.body));
      const success: HttpSuccess<FetchedDocument> = {
        ok: true,
        status: response.status,
        headers: response.headers,
        url: current.href,
        attempts: 1,
        data: { contentType, text, truncated: response.truncated },
      };
      return success;
    }
  });
  if ('value' in result) return result.value;
  if (result.aborted)
    return httpError({ kind: 'aborted', message: `${service}: the request was cancelled.` });
  if (result.timedOut) {
    return httpError({
      kind: 'timeout',
      message: `${service}: ${url} did not load within ${timeout} ms; try another page.`,
    });
  }
  return httpError({
    kind: 'network',
    message: `${service}: could not load ${current.href} (${errorText(result.error)}); check the URL or try another page.`,
  });
}
