import { createHash, createHmac } from 'node:crypto';
import { isPlainObject } from '../../../utils/is';
import { type HttpOutcome, httpError } from '../http';
import { arrayAt, BaseSearcher, type SearcherOptions, type SearchResult, stringField } from './base';

/** Options of {@link TencentSearcher}. */
export interface TencentSearcherOptions extends SearcherOptions {
  /** The SecretId. @default process.env.TENCENTCLOUD_SECRET_ID */
  secretId?: string | undefined;
  /** The SecretKey. @default process.env.TENCENTCLOUD_SECRET_KEY */
  secretKey?: string | undefined;
  /**
   * `"<SecretId>:<SecretKey>"`, so that the one `apiKey` option of `WebBrowser` can carry both; `secretId` and
   * `secretKey` win when given.
   */
  apiKey?: string | undefined;
  /** A temporary credential's token (`X-TC-Token`). @default process.env.TENCENTCLOUD_SESSION_TOKEN */
  token?: string | undefined;
  /** @default 'SearchCommon' */
  action?: string | undefined;
  /** @default '2020-12-29' */
  version?: string | undefined;
  /** @default 'tms' */
  service?: string | undefined;
  /** Time filter: 1 day, 2 week, 3 month, 4 year, 5 six months, 6 three years. */
  tsn?: number | undefined;
  /** Search within one site, e.g. `'zhihu.com'`. */
  insite?: string | undefined;
  /** A vertical, e.g. `'baike'`, `'news'`. */
  category?: string | undefined;
  /** Result card types, comma-separated. */
  vrid?: string | undefined;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text).digest();

/**
 * The headers of a Tencent Cloud API 3.0 request signed with TC3-HMAC-SHA256 (POST `/`, JSON body, signed
 * headers `content-type;host;x-tc-action`). `host` is the host the request really goes to.
 */
export function tencentCloudHeaders(input: {
  host: string;
  service: string;
  action: string;
  version: string;
  payload: string;
  secretId: string;
  secretKey: string;
  token?: string | undefined;
  timestamp?: number | undefined;
}): Record<string, string> {
  const timestamp = input.timestamp ?? Math.floor(Date.now() / 1000);
  const date = new Date(timestamp * 1000).toISOString().slice(0, 10);
  const contentType = 'application/json; charset=utf-8';
  const canonicalHeaders = `content-type:${contentType}\nhost:${input.host}\nx-tc-action:${input.action.toLowerCase()}\n`;
  const signedHeaders = 'content-type;host;x-tc-action';
  const canonicalRequest = ['POST', '/', '', canonicalHeaders, signedHeaders, sha256(input.payload)].join(
    '\n',
  );
  const scope = `${date}/${input.service}/tc3_request`;
  const stringToSign = ['TC3-HMAC-SHA256', String(timestamp), scope, sha256(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(`TC3${input.secretKey}`, date), input.service), 'tc3_request');
  const signature = createHmac('sha256', signingKey).update(stringToSign).digest('hex');
  return {
    Authorization: `TC3-HMAC-SHA256 Credential=${input.secretId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    'Content-Type': contentType,
    Host: input.host,
    'X-TC-Action': input.action,
    'X-TC-Timestamp': String(timestamp),
    'X-TC-Version': input.version,
    ...(input.token ? { 'X-TC-Token': input.token } : {}),
  };
}

/**
 * Tencent Cloud's search API as Lagent calls it: action `SearchCommon` (version 2020-12-29) of service `tms`,
 * a TC3-HMAC-SHA256-signed `POST /` with `{ Query, ... }`. Credentials default to `TENCENTCLOUD_SECRET_ID` /
 * `TENCENTCLOUD_SECRET_KEY`. Each of `Response.Pages` carries a JSON `Display` with `url`, `title`, and
 * `content` or `abstract_info`; an error comes back as `Response.Error` (with HTTP 200) and is reported.
 *
 * @default baseURL 'https://tms.tencentcloudapi.com'
 */
export class TencentSearcher extends BaseSearcher {
  readonly #options: TencentSearcherOptions;
  readonly #secretId: string | undefined;
  readonly #secretKey: string | undefined;
  readonly #token: string | undefined;

  constructor(options: TencentSearcherOptions = {}) {
    const [idFromKey, keyFromKey] = options.apiKey?.includes(':') ? options.apiKey.split(':', 2) : [];
    const secretId = options.secretId ?? idFromKey ?? process.env.TENCENTCLOUD_SECRET_ID;
    const secretKey = options.secretKey ?? keyFromKey ?? process.env.TENCENTCLOUD_SECRET_KEY;
    // The client's key only says whether credentials are there; the signature is made here.
    super(
      { ...options, apiKey: secretId && secretKey ? secretId : '' },
      { name: 'TencentSearch', defaultBaseURL: 'https://tms.tencentcloudapi.com', requireKey: true },
      { keyHint: 'set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY, or pass secretId and secretKey' },
    );
    this.#options = options;
    this.#secretId = secretId;
    this.#secretKey = secretKey;
    this.#token = options.token ?? process.env.TENCENTCLOUD_SESSION_TOKEN;
  }

  async search(
    query: string,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<HttpOutcome<SearchResult[]>> {
    const missing = this.http.missingKey();
    if (missing) return { ok: false, failure: missing };
    const parameters: Record<string, unknown> = { Query: query };
    if (this.#options.tsn !== undefined) parameters.Tsn = this.#options.tsn;
    if (this.#options.insite !== undefined) parameters.Insite = this.#options.insite;
    if (this.#options.category !== undefined) parameters.Category = this.#options.category;
    if (this.#options.vrid !== undefined) parameters.Vrid = this.#options.vrid;
    const payload = JSON.stringify(parameters);
    const headers = tencentCloudHeaders({
      host: this.http.url({}).host,
      service: this.#options.service ?? 'tms',
      action: this.#options.action ?? 'SearchCommon',
      version: this.#options.version ?? '2020-12-29',
      payload,
      secretId: this.#secretId ?? '',
      secretKey: this.#secretKey ?? '',
      token: this.#token,
    });
    const outcome = await this.http.json({
      method: 'POST',
      path: '/',
      body: payload,
      headers,
      signal: options.signal,
    });
    if (!outcome.ok) return outcome;
    const response = isPlainObject(outcome.data) ? outcome.data.Response : undefined;
    if (!isPlainObject(response)) {
      return httpError({
        kind: 'malformed',
        message: `${this.name}: the answer has no "Response" object; check baseURL.`,
      });
    }
    if (isPlainObject(response.Error)) return this.#serviceError(response.Error);
    const raw: SearchResult[] = [];
    for (const page of arrayAt(response, 'Pages') ?? []) {
      const display = readDisplay(page);
      const url = stringField(display, 'url');
      if (!url) continue;
      raw.push({
        url,
        summ: stringField(display, 'content') || stringField(display, 'abstract_info'),
        title: stringField(display, 'title'),
      });
    }
    return { ...outcome, data: this.filter(raw) };
  }

  #serviceError(error: Record<string, unknown>): HttpOutcome<SearchResult[]> {
    const code = stringField(error, 'Code');
    const text = stringField(error, 'Message');
    let advice = 'check the arguments';
    if (code.startsWith('AuthFailure'))
      advice = 'the credentials were rejected; set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY';
    else if (code.startsWith('RequestLimitExceeded'))
      advice = 'rate limited; wait a while before trying again';
    else if (code.startsWith('InternalError')) advice = 'the service failed; try again later';
    return httpError({ kind: 'service-error', message: `${this.name}: ${advice} (${code}: ${text}).` });
  }
}

/** A page's `Display`: a JSON string inside an object (as Lagent reads it) or the page itself as JSON text. */
function readDisplay(page: unknown): unknown {
  const display = isPlainObject(page) ? page.Display : page;
  if (typeof display !== 'string') return display;
  try {
    return JSON.parse(display) as unknown;
  } catch {
    return undefined;
  }
}
