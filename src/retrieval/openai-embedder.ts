import { effectiveSignal } from '../core/call-context';
import { Deadline } from '../core/deadline';
import { postJSON } from '../llms/post-json';
import { type RetryPolicy, withRetries } from '../llms/request-retry';
import { resolveTiming, type TimingOptions } from '../llms/timing';
import { reportedCount } from '../llms/usage';
import { ConfigurationError, LLMRequestError } from '../schema/errors';
import { embedInBatches } from './embedding-batches';
import { checkTexts, estimateTokens } from './texts';
import type { Embedder, EmbeddingUsage, EmbedOptions } from './types';

/** Options of {@link OpenAIEmbedder}. */
export interface OpenAIEmbedderOptions extends TimingOptions {
  /** The embedding model the server knows, e.g. `text-embedding-3-small`, or a local model's name. */
  model: string;
  /** @default process.env.OPENAI_BASE_URL, else 'https://api.openai.com/v1' */
  baseURL?: string | undefined;
  /** @default process.env.OPENAI_API_KEY (any placeholder when a custom baseURL is set) */
  apiKey?: string | undefined;
  /**
   * The length of the vectors. Known for OpenAI's models (and sent as `dimensions` to the `text-embedding-3`
   * models, which can shorten their vectors); required for any other model. A server answering with vectors
   * of another length fails the call.
   */
  dimensions?: number | undefined;
  /** Texts per request (OpenAI takes up to 2048). @default 128 */
  batchSize?: number | undefined;
  /** Requests in flight at once for one `embed` call. @default 2 */
  maxParallel?: number | undefined;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string> | undefined;
}

/** OpenAI's embedding models and the length of their vectors. */
const KNOWN_DIMENSIONS: Readonly<Record<string, number>> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

function positiveInteger(value: unknown, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new ConfigurationError({
      message: `OpenAIEmbedder: ${name} must be a positive integer, got ${String(value)}`,
    });
  }
  return value;
}

/**
 * An embedder over any server speaking OpenAI's `/v1/embeddings` (OpenAI, Azure-compatible gateways, vLLM,
 * Ollama, LM Studio, text-embeddings-inference...): texts are sent in batches, several at once, over
 * keep-alive connections; 429, 408, 5xx, timeouts and dropped connections are retried with backoff (or
 * after the server's `retry-after`), as the chat clients do; empty texts are refused before anything is sent.
 * `usage` sums the tokens the server reported.
 *
 * @example
 * const embedder = new OpenAIEmbedder({ model: 'text-embedding-3-small' });
 * const local = new OpenAIEmbedder({ model: 'bge-small-en-v1.5', baseURL: 'http://127.0.0.1:8000/v1', dimensions: 384 });
 */
export class OpenAIEmbedder implements Embedder {
  readonly model: string;
  readonly baseURL: string;
  readonly dimensions: number;
  readonly batchSize: number;
  readonly maxParallel: number;
  /** Tokens the server reported (estimated when it reported none) and requests sent, over the embedder's life. */
  readonly usage: EmbeddingUsage & { requests: number } = { tokens: 0, requests: 0 };
  readonly #url: URL;
  readonly #headers: Record<string, string>;
  readonly #policy: RetryPolicy;
  readonly #timeout: number;
  readonly #sendDimensions: boolean;

  constructor(options: OpenAIEmbedderOptions) {
    if (typeof options?.model !== 'string' || options.model === '') {
      throw new ConfigurationError({ message: 'OpenAIEmbedder needs a model name' });
    }
    this.model = options.model;
    const customURL = options.baseURL ?? process.env.OPENAI_BASE_URL;
    this.baseURL = (customURL ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
    try {
      this.#url = new URL(`${this.baseURL}/embeddings`);
    } catch {
      throw new ConfigurationError({ message: `OpenAIEmbedder: baseURL is not a URL: ${this.baseURL}` });
    }
    const apiKey =
      options.apiKey ?? (process.env.OPENAI_API_KEY || undefined) ?? (customURL ? 'none' : undefined);
    if (apiKey === undefined) {
      throw new ConfigurationError({
        message:
          'OpenAIEmbedder needs an API key: pass apiKey or set OPENAI_API_KEY (for a local server, set baseURL or OPENAI_BASE_URL)',
      });
    }
    const known = KNOWN_DIMENSIONS[this.model];
    const dimensions = options.dimensions ?? known;
    if (dimensions === undefined) {
      throw new ConfigurationError({
        message: `OpenAIEmbedder: the vectors' length of the model ${this.model} is not known: pass dimensions`,
      });
    }
    this.dimensions = positiveInteger(dimensions, 0, 'dimensions');
    this.#sendDimensions = options.dimensions !== undefined && this.model.startsWith('text-embedding-3');
    this.batchSize = positiveInteger(options.batchSize, 128, 'batchSize');
    this.maxParallel = positiveInteger(options.maxParallel, 2, 'maxParallel');
    const timing = resolveTiming(options, 'OpenAIEmbedder');
    this.#policy = timing.policy;
    this.#timeout = timing.timeout;
    this.#headers = {
      accept: 'application/json',
      'content-type': 'application/json',
      authorization: `Bearer ${apiKey}`,
      ...options.headers,
    };
  }

  /** The vectors of `texts`, in order. Throws `ValidationError` for an empty text, `LLMRequestError` when a request fails for good. */
  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<number[][]> {
    checkTexts(texts, 'OpenAIEmbedder');
    if (texts.length === 0) return [];
    return embedInBatches(
      texts,
      this.batchSize,
      this.maxParallel,
      // Inside an agent's call, an embedding stops with the call even when not handed its signal.
      effectiveSignal(options.signal),
      (batch, signal) => this.#request(batch, signal),
      (usage) => {
        this.usage.tokens += usage.tokens;
        options.onUsage?.(usage);
      },
    );
  }

  async #request(
    batch: readonly string[],
    signal: AbortSignal,
  ): Promise<{ vectors: number[][]; usage: EmbeddingUsage }> {
    const where = `OpenAIEmbedder request to ${this.#url.href} (model ${this.model})`;
    const body = JSON.stringify({
      model: this.model,
      input: batch,
      encoding_format: 'float',
      ...(this.#sendDimensions ? { dimensions: this.dimensions } : {}),
    });
    const reply = await withRetries(
      () =>
        Deadline.run(signal, this.#timeout, (attempt) => {
          this.usage.requests++;
          return postJSON(this.#url, this.#headers, body, attempt);
        }),
      this.#policy,
      where,
      signal,
    );
    return {
      vectors: this.#vectors(reply, batch.length, where),
      usage: { tokens: this.#tokens(reply, batch) },
    };
  }

  #vectors(reply: unknown, count: number, where: string): number[][] {
    const data = (reply as { data?: unknown } | null)?.data;
    const fail = (message: string) =>
      new LLMRequestError({ message: `${where}: ${message}`, retryable: false, attempts: 1 });
    if (!Array.isArray(data) || data.length !== count) {
      throw fail(`expected ${count} embeddings, got ${Array.isArray(data) ? data.length : 'no data array'}`);
    }
    const vectors = new Array<number[]>(count);
    for (const [position, item] of data.entries()) {
      const index = typeof item?.index === 'number' ? item.index : position;
      const embedding: unknown = item?.embedding;
      if (!Array.isArray(embedding) || index < 0 || index >= count || vectors[index] !== undefined) {
        throw fail(`embedding ${position} is malformed`);
      }
      if (embedding.length !== this.dimensions) {
        throw fail(
          `the server sent vectors of ${embedding.length} dimensions, not ${this.dimensions}: set dimensions to what the model gives`,
        );
      }
      if (!embedding.every((value) => typeof value === 'number' && Number.isFinite(value))) {
        throw fail(`embedding ${position} holds a value that is not a finite number`);
      }
      vectors[index] = embedding as number[];
    }
    return vectors;
  }

  #tokens(reply: unknown, batch: readonly string[]): number {
    const usage = (reply as { usage?: Record<string, unknown> } | null)?.usage;
    return reportedCount(usage?.total_tokens) || reportedCount(usage?.prompt_tokens) || estimateTokens(batch);
  }
}
