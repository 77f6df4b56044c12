import { effectiveSignal } from '../core/call-context';
import { Deadline } from '../core/deadline';
import { toSharedAISDKError } from '../llms/ai-sdk-results';
import { type RetryPolicy, withRetries } from '../llms/request-retry';
import { resolveTiming, type TimingOptions } from '../llms/timing';
import { reportedCount } from '../llms/usage';
import { ConfigurationError, LLMRequestError } from '../schema/errors';
import { embedInBatches } from './embedding-batches';
import { checkTexts, estimateTokens } from './texts';
import type { Embedder, EmbeddingUsage, EmbedOptions } from './types';

/**
 * The parts of the AI SDK's embedding model specification (`EmbeddingModelV2`, `V3` and `V4` of
 * `@ai-sdk/provider`) the embedder uses: `openai.embedding('text-embedding-3-small')`,
 * `createOpenAICompatible(...).embeddingModel(...)`, `google.textEmbeddingModel(...)` are all assignable.
 */
export interface AISDKEmbeddingModel {
  readonly specificationVersion: 'v2' | 'v3' | 'v4';
  readonly provider: string;
  readonly modelId: string;
  readonly maxEmbeddingsPerCall: PromiseLike<number | undefined> | number | undefined;
  readonly supportsParallelCalls: PromiseLike<boolean> | boolean;
  doEmbed(options: {
    values: string[];
    abortSignal?: AbortSignal;
  }): PromiseLike<{ embeddings: number[][]; usage?: { tokens: number } | undefined }>;
}

/** Options of {@link AISDKEmbedder}. */
export interface AISDKEmbedderOptions extends TimingOptions {
  /** An AI SDK embedding model. */
  model: AISDKEmbeddingModel;
  /** The length of the model's vectors (the specification does not say it). */
  dimensions: number;
  /** Texts per call. @default the model's `maxEmbeddingsPerCall`, else 128 */
  batchSize?: number | undefined;
  /** Calls in flight at once (1 for a model that does not support parallel calls). @default 2 */
  maxParallel?: number | undefined;
}

/**
 * An embedder over any AI SDK embedding model: batches of at most the model's `maxEmbeddingsPerCall`, in
 * parallel when the model supports it, retried as the AI SDK model client retries (the provider's
 * `isRetryable`, `retry-after`), each attempt with its timeout. `usage` sums the tokens the provider reported.
 *
 * @example
 * import { openai } from '@ai-sdk/openai';
 * const embedder = new AISDKEmbedder({ model: openai.embedding('text-embedding-3-small'), dimensions: 1536 });
 */
export class AISDKEmbedder implements Embedder {
  readonly model: AISDKEmbeddingModel;
  readonly dimensions: number;
  /** Tokens the provider reported (estimated when it reported none) and calls made, over the embedder's life. */
  readonly usage: EmbeddingUsage & { requests: number } = { tokens: 0, requests: 0 };
  readonly #batchSize: number | undefined;
  readonly #maxParallel: number;
  readonly #policy: RetryPolicy;
  readonly #timeout: number;
  readonly #where: string;

  constructor(options: AISDKEmbedderOptions) {
    const model = options?.model;
    if (model === null || typeof model !== 'object' || typeof model.doEmbed !== 'function') {
      throw new ConfigurationError({
        message: 'AISDKEmbedder needs an AI SDK embedding model (with doEmbed)',
      });
    }
    const dimensions = options.dimensions;
    if (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1) {
      throw new ConfigurationError({
        message: `AISDKEmbedder: dimensions must be the positive length of the model's vectors, got ${String(dimensions)}`,
      });
    }
    for (const [name, value] of [
      ['batchSize', options.batchSize],
      ['maxParallel', options.maxParallel],
    ] as const) {
      if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
        throw new ConfigurationError({
          message: `AISDKEmbedder: ${name} must be a positive integer, got ${String(value)}`,
        });
      }
    }
    this.model = model;
    this.dimensions = dimensions;
    this.#batchSize = options.batchSize;
    this.#maxParallel = options.maxParallel ?? 2;
    const timing = resolveTiming(options, 'AISDKEmbedder');
    this.#policy = timing.policy;
    this.#timeout = timing.timeout;
    this.#where = `AISDKEmbedder request to ${model.provider} (model ${model.modelId})`;
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<number[][]> {
    checkTexts(texts, 'AISDKEmbedder');
    if (texts.length === 0) return [];
    const limit = await this.model.maxEmbeddingsPerCall;
    const batchSize = Math.max(
      1,
      Math.min(this.#batchSize ?? limit ?? 128, limit ?? Number.POSITIVE_INFINITY),
    );
    const parallel = (await this.model.supportsParallelCalls) ? this.#maxParallel : 1;
    return embedInBatches(
      texts,
      batchSize,
      parallel,
      // Inside an agent's call, an embedding stops with the call even when not handed its signal.
      effectiveSignal(options.signal),
      (batch, signal) => this.#call(batch, signal),
      (usage) => {
        this.usage.tokens += usage.tokens;
        options.onUsage?.(usage);
      },
    );
  }

  async #call(
    batch: readonly string[],
    signal: AbortSignal,
  ): Promise<{ vectors: number[][]; usage: EmbeddingUsage }> {
    const result = await withRetries(() => this.#attempt(batch, signal), this.#policy, this.#where, signal);
    const embeddings = result.embeddings;
    if (!Array.isArray(embeddings) || embeddings.length !== batch.length) {
      throw new LLMRequestError({
        message: `${this.#where}: expected ${batch.length} embeddings, got ${Array.isArray(embeddings) ? embeddings.length : 'none'}`,
        retryable: false,
        attempts: 1,
      });
    }
    for (const vector of embeddings) {
      if (!Array.isArray(vector) || vector.length !== this.dimensions) {
        throw new LLMRequestError({
          message: `${this.#where}: the model gave vectors of ${Array.isArray(vector) ? vector.length : 'no'} dimensions, not ${this.dimensions}: set dimensions to what the model gives`,
          retryable: false,
          attempts: 1,
        });
      }
    }
    return {
      vectors: embeddings,
      usage: { tokens: reportedCount(result.usage?.tokens) || estimateTokens(batch) },
    };
  }

  #attempt(
    batch: readonly string[],
    signal: AbortSignal,
  ): Promise<{ embeddings: number[][]; usage?: { tokens: number } | undefined }> {
    const attempt = new Deadline(signal, this.#timeout);
    this.usage.requests++;
    let pending: PromiseLike<{ embeddings: number[][]; usage?: { tokens: number } | undefined }>;
    try {
      pending = this.model.doEmbed({ values: [...batch], abortSignal: attempt.signal });
    } catch (error) {
      pending = Promise.reject(error);
    }
    return Promise.resolve(pending).then(
      (result) => {
        attempt.dispose();
        return result;
      },
      (error: unknown) => {
        attempt.dispose();
        throw attempt.timedOut ? attempt.signal.reason : toSharedAISDKError(error);
      },
    );
  }
}
