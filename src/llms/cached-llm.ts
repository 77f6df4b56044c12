import { createHash } from 'node:crypto';
import { ConfigurationError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { ModelStatusCode } from '../schema/status';
import type { MaybePromise, SessionStore } from '../stores/types';
import { isThenable } from '../utils/is';
import { AsyncBaseLLM, BaseLLM } from './base-llm';
import {
  answerChunks,
  canonicalRequest,
  copyReply,
  type RequestMode,
  replyOfChunks,
  requestKey,
  type StoredAnswer,
  storeChunks,
} from './llm-request';
import type { ChatMessage, LLMCallParams, ModelReply, ResolvedGenParams, StreamChunk } from './types';
import type { TokenUsage } from './usage';
import { emptyUsage } from './usage';
import { modelName, usageOf } from './wrapped-usage';

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

/** The answer of a `chat()` call in stored form. */
function textAnswer(content: string): StoredAnswer {
  return { reply: { content, toolCalls: [] } };
}

function keyOf(
  mode: RequestMode,
  messages: ChatMessage[],
  params: LLMCallParams | undefined,
  defaults: ResolvedGenParams,
) {
  return requestKey(canonicalRequest(mode, messages, params, defaults));
}

function syncValue<T>(value: MaybePromise<T>): T {
  if (isThenable(value)) throw new ConfigurationError({ message: 'CachedLLM: the store returned a promise' });
  return value as T;
}

/** A request answered from the cache cost no tokens: a budgeted call is told so. */
function answeredFromCache(params: LLMCallParams | undefined): void {
  params?.onUsage?.({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
}

/**
 * A synchronous model that answers a request it has answered before from its cache: the same messages, the
 * same answer-shaping params (the model's `genParams` with the call's overrides, stop words, tool choice) and
 * the same tools. Streams are cached as their chunks and replayed chunk by chunk. Failures are not cached.
 *
 * `genParams` is the wrapped model's own object. Usage is the wrapped model's (a cached answer spends nothing).
 */
export class CachedLLM extends BaseLLM {
  readonly llm: BaseLLM;
  readonly ttlMs: number | undefined;
  readonly #cache: LLMCacheBackend;
  /** Answers served from the cache, and requests passed to the model. */
  readonly stats = { hits: 0, misses: 0 };

  constructor(llm: BaseLLM, options: CacheOptions = {}) {
    super();
    if (typeof llm?.chat !== 'function')
      throw new ConfigurationError({ message: 'CachedLLM needs a model to wrap' });
    this.llm = llm;
    this.ttlMs = options.ttlMs;
    this.#cache = backendOf(options, 'CachedLLM', true);
    (this as { genParams: ResolvedGenParams }).genParams = llm.genParams;
  }

  #lookup(key: string): StoredAnswer | undefined {
    const answer = syncValue(this.#cache.get(key));
    if (answer === undefined) this.stats.misses++;
    else this.stats.hits++;
    return answer;
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): string {
    const key = keyOf('text', messages, params, this.llm.genParams);
    const hit = this.#lookup(key);
    if (hit !== undefined) {
      answeredFromCache(params);
      return hit.reply.content;
    }
    const content = this.llm.chat(messages, params);
    syncValue(this.#cache.set(key, textAnswer(content), this.ttlMs));
    return content;
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): ModelReply {
    const key = keyOf('reply', messages, params, this.llm.genParams);
    const hit = this.#lookup(key);
    if (hit !== undefined) {
      answeredFromCache(params);
      return copyReply(hit.reply);
    }
    const reply = this.llm.generate(messages, params);
    syncValue(this.#cache.set(key, { reply: copyReply(reply) }, this.ttlMs));
    return reply;
  }

  override *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): Generator<StreamChunk, void, undefined> {
    const key = keyOf('reply', messages, params, this.llm.genParams);
    const hit = this.#lookup(key);
    if (hit !== undefined) {
      answeredFromCache(params);
      yield* answerChunks(hit);
      return;
    }
    const chunks: StreamChunk[] = [];
    const save = () => {
      const answer: StoredAnswer = { reply: replyOfChunks(chunks), chunks: storeChunks(chunks) };
      syncValue(this.#cache.set(key, answer, this.ttlMs));
    };
    let saved = false;
    for (const chunk of this.llm.streamChat(messages, params)) {
      chunks.push(structuredClone(chunk));
      // Kept before the END chunk is yielded: a caller may stop reading once it has it.
      if (chunk.state === ModelStatusCode.END && !saved) {
        saved = true;
        save();
      }
      yield chunk;
    }
    if (!saved) save();
  }

  /** The wrapped model's name (`llm.model`), when it has one: what logs and traces show. */
  get model(): string | undefined {
    return modelName(this.llm);
  }

  /** Forgets every cached answer. */
  clear(): void {
    syncValue(this.#cache.clear());
  }

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return usageOf(this.llm)?.getUsage(sessionId) ?? emptyUsage();
  }

  getTotalUsage(): TokenUsage {
    return usageOf(this.llm)?.getTotalUsage() ?? emptyUsage();
  }

  getLastUsage(): TokenUsage | undefined {
    return usageOf(this.llm)?.getLastUsage();
  }

  resetUsage(sessionId?: SessionId): void {
    usageOf(this.llm)?.resetUsage(sessionId);
  }
}

/**
 * The async twin of {@link CachedLLM}; takes any store, sync or async. Two identical requests in flight at
 * once both go to the model (the later answer is kept).
 */
export class AsyncCachedLLM extends AsyncBaseLLM {
  readonly llm: AsyncBaseLLM;
  readonly ttlMs: number | undefined;
  readonly #cache: LLMCacheBackend;
  /** Answers served from the cache, and requests passed to the model. */
  readonly stats = { hits: 0, misses: 0 };

  constructor(llm: AsyncBaseLLM, options: CacheOptions = {}) {
    super();
    if (typeof llm?.chat !== 'function') {
      throw new ConfigurationError({ message: 'AsyncCachedLLM needs a model to wrap' });
    }
    this.llm = llm;
    this.ttlMs = options.ttlMs;
    this.#cache = backendOf(options, 'AsyncCachedLLM', false);
    (this as { genParams: ResolvedGenParams }).genParams = llm.genParams;
  }

  async #lookup(key: string): Promise<StoredAnswer | undefined> {
    const answer = await this.#cache.get(key);
    if (answer === undefined) this.stats.misses++;
    else this.stats.hits++;
    return answer;
  }

  async chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    const key = keyOf('text', messages, params, this.llm.genParams);
    const hit = await this.#lookup(key);
    if (hit !== undefined) {
      answeredFromCache(params);
      return hit.reply.content;
    }
    const content = await this.llm.chat(messages, params);
    await this.#cache.set(key, textAnswer(content), this.ttlMs);
    return content;
  }

  override async generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    const key = keyOf('reply', messages, params, this.llm.genParams);
    const hit = await this.#lookup(key);
    if (hit !== undefined) {
      answeredFromCache(params);
      return copyReply(hit.reply);
    }
    const reply = await this.llm.generate(messages, params);
    await this.#cache.set(key, { reply: copyReply(reply) }, this.ttlMs);
    return reply;
  }

  override async *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const key = keyOf('reply', messages, params, this.llm.genParams);
    const hit = await this.#lookup(key);
    if (hit !== undefined) {
      answeredFromCache(params);
      yield* answerChunks(hit);
      return;
    }
    const chunks: StreamChunk[] = [];
    const save = () =>
      this.#cache.set(key, { reply: replyOfChunks(chunks), chunks: storeChunks(chunks) }, this.ttlMs);
    let saved = false;
    for await (const chunk of this.llm.streamChat(messages, params)) {
      chunks.push(structuredClone(chunk));
      // Kept before the END chunk is yielded: a caller may stop reading once it has it.
      if (chunk.state === ModelStatusCode.END && !saved) {
        saved = true;
        await save();
      }
      yield chunk;
    }
    if (!saved) await save();
  }

  /** The wrapped model's name (`llm.model`), when it has one: what logs and traces show. */
  get model(): string | undefined {
    return modelName(this.llm);
  }

  /** Forgets every cached answer. */
  async clear(): Promise<void> {
    await this.#cache.clear();
  }

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return usageOf(this.llm)?.getUsage(sessionId) ?? emptyUsage();
  }

  getTotalUsage(): TokenUsage {
    return usageOf(this.llm)?.getTotalUsage() ?? emptyUsage();
  }

  getLastUsage(): TokenUsage | undefined {
    return usageOf(this.llm)?.getLastUsage();
  }

  resetUsage(sessionId?: SessionId): void {
    usageOf(this.llm)?.resetUsage(sessionId);
  }
}
