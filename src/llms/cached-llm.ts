import { createHash } from 'node:crypto';
import type { Steps } from '../core/steps';
import { ConfigurationError } from '../schema/errors';
import { ModelStatusCode } from '../schema/status';
import type { MaybePromise, SessionStore } from '../stores/types';
import { isThenable } from '../utils/is';
import type { AsyncBaseLLM, BaseLLM } from './base-llm';
import {
  answerChunks,
  canonicalRequest,
  copyReply,
  replyOfChunks,
  requestKey,
  type StoredAnswer,
  storeChunks,
} from './llm-request';
import {
  awaited,
  type ChunkSteps,
  type ModelMiddleware,
  type ModelRequest,
  type NextReply,
  type NextStream,
  relayChunks,
} from './model-middleware';
import type { LLMCallParams, ModelReply, ResolvedGenParams, StreamChunk } from './types';
import { AsyncWrappedLLM, WrappedLLM } from './wrapped-llm';

/** Where a {@link CachedLLM} keeps answers: get, set and clear by request key. */
export interface LLMCacheBackend {
  get(key: string): MaybePromise<StoredAnswer | undefined>;
  set(key: string, answer: StoredAnswer, ttlMs: number | undefined): MaybePromise<void>;
  clear(): MaybePromise<void>;
}

/** Options of {@link CachedLLM} and {@link AsyncCachedLLM}. */
export interface CacheOptions {
  /**
   * Where answers are kept: in this process's memory (the default), or any `SessionStore` (answers then
   * outlive the process and are shared by every process using the store; a sync `CachedLLM` needs a
   * synchronous store such as `MemoryStore` or `SQLiteStore`).
   */
  store?: SessionStore | 'memory' | undefined;
  /** How long an answer is served, in ms. @default forever */
  ttlMs?: number | undefined;
  /** The store namespace answers are kept under (a store only). @default 'lagent-llm-cache' */
  namespace?: string | undefined;
  /** The most answers kept in memory; the least recently used goes first (in memory only). @default 1000 */
  maxEntries?: number | undefined;
}

interface MemoryEntry {
  answer: StoredAnswer;
  expiresAt: number;
}

/** Answers in a `Map`, least recently used dropped past `maxEntries`, expired ones dropped when read. */
class MemoryCache implements LLMCacheBackend {
  readonly #entries = new Map<string, MemoryEntry>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string): StoredAnswer | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAt <= Date.now()) return undefined;
    this.#entries.set(key, entry);
    return entry.answer;
  }

  set(key: string, answer: StoredAnswer, ttlMs: number | undefined): void {
    this.#entries.delete(key);
    this.#entries.set(key, {
      answer,
      expiresAt: ttlMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + ttlMs,
    });
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value as string);
  }

  clear(): void {
    this.#entries.clear();
  }
}

/** The journal entry of a cached answer in a store. */
interface StoredEntry {
  answer: StoredAnswer;
  /** Epoch ms, or null for never. */
  expiresAt: number | null;
}

/** The store's session every cached answer's journal belongs to (deleting it clears the cache). */
const CACHE_SESSION = 'llm-cache';

/**
 * Answers in a `SessionStore`'s journals: one journal per request (its id the SHA-256 of the request key) in a
 * namespace of its own, all under one session. The newest entry of a journal is the answer.
 */
class StoreCache implements LLMCacheBackend {
  readonly #store: SessionStore;
  readonly #namespace: string;

  constructor(store: SessionStore, namespace: string) {
    this.#store = store;
    this.#namespace = namespace;
  }

  get(key: string): MaybePromise<StoredAnswer | undefined> {
    const id = hash(key);
    return then(this.#store.readJournal(this.#namespace, id), (journal) => {
      const entry = journal?.entries.at(-1)?.data as StoredEntry | undefined;
      if (entry === undefined) return undefined;
      if (entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
        return then(this.#store.deleteJournal(this.#namespace, id), () => undefined);
      }
      return entry.answer;
    });
  }

  set(key: string, answer: StoredAnswer, ttlMs: number | undefined): MaybePromise<void> {
    const entry: StoredEntry = { answer, expiresAt: ttlMs === undefined ? null : Date.now() + ttlMs };
    return then(this.#store.appendJournal(this.#namespace, CACHE_SESSION, hash(key), entry), () => undefined);
  }

  clear(): MaybePromise<void> {
    return then(this.#store.deleteSession(this.#namespace, CACHE_SESSION), () => undefined);
  }
}

function hash(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** `next` of a value, or of a promise's value: sync stores stay sync. */
function then<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return isThenable<T>(value) ? Promise.resolve(value).then(next) : next(value as T);
}

function backendOf(options: CacheOptions, owner: string, synchronous: boolean): LLMCacheBackend {
  const { store, ttlMs } = options;
  if (ttlMs !== undefined && !(typeof ttlMs === 'number' && ttlMs > 0)) {
    throw new ConfigurationError({
      message: `${owner}: ttlMs must be a positive number of ms, got ${String(ttlMs)}`,
    });
  }
  if (store === undefined || store === 'memory') {
    const max = options.maxEntries ?? 1000;
    if (!(Number.isInteger(max) && max > 0)) {
      throw new ConfigurationError({
        message: `${owner}: maxEntries must be a positive integer, got ${String(max)}`,
      });
    }
    return new MemoryCache(max);
  }
  if (typeof store?.readJournal !== 'function' || typeof store.appendJournal !== 'function') {
    throw new ConfigurationError({
      message: `${owner}: store must be a SessionStore (MemoryStore, SQLiteStore, ...)`,
    });
  }
  if (synchronous && !store.synchronous) {
    throw new ConfigurationError({
      message: `${owner} needs a synchronous store (MemoryStore, SQLiteStore); ${store.description} returns promises: use AsyncCachedLLM`,
    });
  }
  return new StoreCache(store, options.namespace ?? 'lagent-llm-cache');
}

/** A request answered from the cache cost no tokens: a budgeted call is told so. */
function answeredFromCache(params: LLMCallParams | undefined): void {
  params?.onUsage?.({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
}

/**
 * The cache as model middleware: a request answered before (the same messages, answer-shaping params over the
 * model's defaults, and tools) is answered from the backend, a stream chunk by chunk; failures are not kept.
 */
class CacheMiddleware implements ModelMiddleware {
  readonly name = 'cache';
  /** Answers served from the cache, and requests passed on. */
  readonly stats = { hits: 0, misses: 0 };
  readonly #backend: LLMCacheBackend;
  readonly #ttlMs: number | undefined;
  readonly #defaults: ResolvedGenParams;

  constructor(backend: LLMCacheBackend, ttlMs: number | undefined, defaults: ResolvedGenParams) {
    this.#backend = backend;
    this.#ttlMs = ttlMs;
    this.#defaults = defaults;
  }

  *#lookup(request: ModelRequest): Steps<[string, StoredAnswer | undefined]> {
    const key = requestKey(canonicalRequest(request.mode, request.messages, request.params, this.#defaults));
    const answer = yield* awaited(this.#backend.get(key));
    if (answer === undefined) this.stats.misses++;
    else {
      this.stats.hits++;
      answeredFromCache(request.params);
    }
    return [key, answer];
  }

  #keep(key: string, answer: StoredAnswer): Steps<void> {
    return awaited(this.#backend.set(key, answer, this.#ttlMs));
  }

  *call(request: ModelRequest, next: NextReply): Steps<ModelReply> {
    const [key, hit] = yield* this.#lookup(request);
    if (request.mode === 'text') {
      if (hit !== undefined) return { content: hit.reply.content, toolCalls: [] };
      const reply = yield* next();
      yield* this.#keep(key, { reply: { content: reply.content, toolCalls: [] } });
      return reply;
    }
    if (hit !== undefined) return copyReply(hit.reply);
    const reply = yield* next();
    yield* this.#keep(key, { reply: copyReply(reply) });
    return reply;
  }

  *stream(request: ModelRequest, next: NextStream): ChunkSteps {
    const [key, hit] = yield* this.#lookup(request);
    if (hit !== undefined) {
      yield* answerChunks(hit);
      return;
    }
    const chunks: StreamChunk[] = [];
    const keep = () => this.#keep(key, { reply: replyOfChunks(chunks), chunks: storeChunks(chunks) });
    let kept = false;
    yield* relayChunks(next(), (chunk) => {
      chunks.push(structuredClone(chunk));
      // Kept before the END chunk is given: a reader may stop once it has it.
      if (chunk.state !== ModelStatusCode.END || kept) return undefined;
      kept = true;
      return keep();
    });
    if (!kept) yield* keep();
  }

  clear(): MaybePromise<void> {
    return this.#backend.clear();
  }
}

/** The cache of a wrapper named `owner`; a `synchronous` one needs a store that answers at once. */
function cacheOf(
  llm: BaseLLM | AsyncBaseLLM,
  options: CacheOptions,
  owner: string,
  synchronous: boolean,
): CacheMiddleware {
  if (typeof llm?.chat !== 'function')
    throw new ConfigurationError({ message: `${owner} needs a model to wrap` });
  return new CacheMiddleware(backendOf(options, owner, synchronous), options.ttlMs, llm.genParams);
}

/**
 * A synchronous model that answers a request it has answered before from its cache: the same messages, the
 * same answer-shaping params (the model's `genParams` with the call's overrides, stop words, tool choice) and
 * the same tools. Streams are cached as their chunks and replayed chunk by chunk. Failures are not cached.
 *
 * `genParams` is the wrapped model's own object. Usage is the wrapped model's (a cached answer spends nothing).
 */
export class CachedLLM extends WrappedLLM {
  readonly llm: BaseLLM;
  readonly ttlMs: number | undefined;
  readonly #cache: CacheMiddleware;

  constructor(llm: BaseLLM, options: CacheOptions = {}) {
    const cache = cacheOf(llm, options, 'CachedLLM', true);
    super(llm, [cache]);
    this.llm = llm;
    this.ttlMs = options.ttlMs;
    this.#cache = cache;
  }

  /** Answers served from the cache, and requests passed to the model. */
  get stats(): { hits: number; misses: number } {
    return this.#cache.stats;
  }

  /** Forgets every cached answer. */
  clear(): void {
    this.#cache.clear();
  }
}

/**
 * The async twin of {@link CachedLLM}; takes any store, sync or async. Two identical requests in flight at
 * once both go to the model (the later answer is kept).
 */
export class AsyncCachedLLM extends AsyncWrappedLLM {
  readonly llm: AsyncBaseLLM;
  readonly ttlMs: number | undefined;
  readonly #cache: CacheMiddleware;

  constructor(llm: AsyncBaseLLM, options: CacheOptions = {}) {
    const cache = cacheOf(llm, options, 'AsyncCachedLLM', false);
    super(llm, [cache]);
    this.llm = llm;
    this.ttlMs = options.ttlMs;
    this.#cache = cache;
  }

  /** Answers served from the cache, and requests passed to the model. */
  get stats(): { hits: number; misses: number } {
    return this.#cache.stats;
  }

  /** Forgets every cached answer. */
  async clear(): Promise<void> {
    await this.#cache.clear();
  }
}
