import { createHash } from 'node:crypto';
import type { Memory } from '../../../memory/memory';
import type { Embedder, EmbeddingUsage, VectorMatch, VectorStore } from '../../../retrieval/types';
import type { AgentMessage } from '../../../schema/agent-message';
import { ConfigurationError, ValidationError } from '../../../schema/errors';
import type { SessionId } from '../../../schema/session';
import { toolCallsOf } from '../../../schema/tool-calls';
import type { RecalledMessage } from '../../agent-base';
import { contentToText } from '../../aggregator/content';

/*
 * Semantic recall's index and search (the interceptor in index.ts drives them; the aggregator renders what they
 * find). Each message of a session is one vector, id `<session>#<position>` in the session's namespace
 * (`<namespace>:s:<session>`) or its resource's (`<namespace>:r:<resource>`), with metadata `session`,
 * `position`, `sessionId`, `sender` and `text`. Messages are indexed in order, a batch per upsert (all or
 * nothing), so what a session has indexed is always its first N messages: N is the count of its vectors,
 * which is the watermark a process that restarted (or crashed between a commit and its embedding) takes up
 * from. An upsert repeated after a crash writes the same ids again, so nothing is ever doubled.
 */

/** Options of semantic recall (`TokenWindowAggregator`'s `recall`). */
export interface RecallOptions {
  /** Embeds the messages and the query. */
  embedder: Embedder;
  /**
   * Holds the messages' vectors. It must declare the fields recall filters on:
   * `fields: { session: 'string', position: 'number' }`.
   */
  store: VectorStore;
  /** How many matches to place before the newest turn (each with its `range` neighbours). */
  topK: number;
  /**
   * `'session'`: earlier messages of the same session; `'resource'`: of every session called with the same
   * `resourceId` call option (which such a call must give). @default 'session'
   */
  scope?: 'session' | 'resource' | undefined;
  /** Messages before and after each match brought with it (as context). @default 0 */
  range?: number | undefined;
  /**
   * The least similarity (the store's score, cosine: -1 to 1) a match must have to be placed: with it, a call
   * that resembles nothing earlier (chit-chat) sends no recalled block. Its right value depends on the embedder.
   * @default none: the `topK` nearest are placed, however far
   */
  minScore?: number | undefined;
  /**
   * Prefix of the store namespaces recall writes (give each agent sharing one vector store its own).
   * @default 'recall'
   */
  namespace?: string | undefined;
  /** Messages embedded per request and written per upsert. @default 64 */
  batchSize?: number | undefined;
}

/** The longest text kept per message (what is embedded and what a recall shows), in characters. */
export const MAX_TEXT = 4000;
/** Ids deleted per request when a session is forgotten. */
const DELETE_STEP = 64;
const SAFE_KEY = /^[A-Za-z0-9_\-.]{1,40}$/;

/** A key as a namespace part: itself when short and plain, else `@` and a hash (never taken for a plain key). */
function keyPart(key: string): string {
  return SAFE_KEY.test(key) ? key : `@${createHash('sha256').update(key).digest('hex').slice(0, 40)}`;
}

/** A message as the text recall embeds and shows: its content, and the tools it called. */
export function recallText(message: AgentMessage): string {
  let text = contentToText(message.content);
  const calls = toolCallsOf(message.formatted);
  if (calls !== null) {
    const named = calls.map((call) => `${call.name}(${contentToText(call.arguments)})`).join(', ');
    text = text === '' ? `called ${named}` : `${text}\ncalled ${named}`;
  }
  if (text.length > MAX_TEXT) text = `${text.slice(0, MAX_TEXT)}…`;
  return text.trim() === '' ? `[${message.sender}]` : text;
}

/** One session's index in this process: its watermark and the queue its index operations run in, in order. */
interface SessionIndex {
  /** Messages indexed (the first `indexed` of the session); unknown until read from the store. */
  indexed: number | undefined;
  /** The text of the last message indexed: a history rewritten before it is indexed again from the start. */
  last: string | undefined;
  queue: Promise<unknown>;
  /** Operations queued or running: a session's entry is dropped only when none is. */
  pending: number;
}

/** Sessions whose watermark a process keeps (the least recently used idle ones are dropped: read again when met). */
const KEPT_SESSIONS = 10_000;

/** What a search needs to know of the call. */
export interface RecallQuery {
  memory: Memory;
  sessionId: SessionId;
  session: string;
  namespace: string;
  /** Positions of the session from here on are this call's: never recalled. */
  committed: number;
  /** Where the window starts without a recalled block: what is over-fetched for. */
  windowStart: number;
  text: string;
  signal?: AbortSignal | undefined;
  onUsage?: ((usage: EmbeddingUsage) => void) | undefined;
  /**
   * Whether the session store still has a session (with `memory: { store }`): another session's matches are
   * recalled only while it does, so a session deleted through the store, or expired, is never recalled.
   */
  exists?: ((session: string) => Promise<boolean>) | undefined;
}

/** Where {@link Recall.index} writes a session's messages, and what it reports to. */
interface IndexTarget {
  namespace: string;
  session: string;
  sessionId: SessionId;
  signal?: AbortSignal | undefined;
  onUsage?: ((usage: EmbeddingUsage) => void) | undefined;
}
/** Semantic recall of one aggregator: its options checked, and the sessions' indexes. */
export class Recall {
  readonly embedder: Embedder;
  readonly store: VectorStore;
  readonly topK: number;
  readonly scope: 'session' | 'resource';
  readonly range: number;
  readonly prefix: string;
  readonly batchSize: number;
  readonly minScore: number | undefined;
  readonly #sessions = new Map<string, SessionIndex>();
  /** Background indexing scheduled or running (see {@link Recall.settled}). */
  readonly #background = new Set<Promise<unknown>>();
  /** The resource each session was last called with (scope `'resource'`), to find its vectors on a reset. */
  readonly #resources = new Map<string, string>();

  constructor(options: RecallOptions) {
    const owner = 'TokenWindowAggregator recall';
    if (options === null || typeof options !== 'object') {
      throw new ConfigurationError({ message: `${owner} must be { embedder, store, topK, scope? }` });
    }
    const { embedder, store } = options;
    if (typeof embedder?.embed !== 'function' || !Number.isInteger(embedder.dimensions)) {
      throw new ConfigurationError({ message: `${owner}: embedder must be an Embedder` });
    }
    if (typeof store?.query !== 'function' || typeof store.upsert !== 'function') {
      throw new ConfigurationError({ message: `${owner}: store must be a VectorStore` });
    }
    if (embedder.dimensions !== store.dimensions) {
      throw new ConfigurationError({
        message: `${owner}: the embedder gives vectors of ${embedder.dimensions} dimensions, but the store holds ${store.dimensions}`,
      });
    }
    if (store.fields?.session !== 'string' || store.fields?.position !== 'number') {
      throw new ConfigurationError({
        message: `${owner}: the store must declare the fields recall filters on: fields: { session: 'string', position: 'number' }`,
      });
    }
    const topK = options.topK;
    if (!Number.isInteger(topK) || topK < 1 || topK > 100) {
      throw new ConfigurationError({
        message: `${owner}: topK must be an integer from 1 to 100, got ${String(topK)}`,
      });
    }
    const scope = options.scope ?? 'session';
    if (scope !== 'session' && scope !== 'resource') {
      throw new ConfigurationError({
        message: `${owner}: scope must be 'session' or 'resource', got ${JSON.stringify(scope)}`,
      });
    }
    const range = options.range ?? 0;
    if (!Number.isInteger(range) || range < 0 || range > 10) {
      throw new ConfigurationError({
        message: `${owner}: range must be an integer from 0 to 10, got ${String(range)}`,
      });
    }
    const prefix = options.namespace ?? 'recall';
    if (typeof prefix !== 'string' || !/^[A-Za-z0-9_\-.]{1,40}$/.test(prefix)) {
      throw new ConfigurationError({
        message: `${owner}: namespace must be 1 to 40 letters, digits or _ - ., got ${JSON.stringify(prefix)}`,
      });
    }
    const batchSize = options.batchSize ?? 64;
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new ConfigurationError({
        message: `${owner}: batchSize must be a positive integer, got ${String(batchSize)}`,
      });
    }
    const minScore = options.minScore;
    if (minScore !== undefined && (typeof minScore !== 'number' || !(minScore >= -1 && minScore <= 1))) {
      throw new ConfigurationError({
        message: `${owner}: minScore must be a number from -1 to 1 (a cosine similarity), got ${String(minScore)}`,
      });
    }
    this.embedder = embedder;
    this.store = store;
    this.minScore = minScore;
    this.topK = topK;
    this.scope = scope;
    this.range = range;
    this.prefix = prefix;
    this.batchSize = batchSize;
  }

  /**
   * The store namespace of a session's vectors: the session's, or with scope `'resource'` its resource's
   * (a call of that scope without a `resourceId` is refused: recall never guesses whose memory to search).
   */
  namespaceOf(session: string, resourceId: unknown, agentName: string): string {
    if (this.scope === 'session') return `${this.prefix}:s:${keyPart(session)}`;
    if (typeof resourceId !== 'string' || resourceId === '') {
      throw new ValidationError({
        message: `${agentName}: its semantic recall has scope 'resource', so every call must give the resourceId call option (whom the session belongs to)`,
        field: 'resourceId',
      });
    }
    this.#resources.delete(session);
    if (this.#resources.size >= KEPT_SESSIONS) this.#resources.delete(this.#resources.keys().next().value!);
    this.#resources.set(session, resourceId);
    return `${this.prefix}:r:${keyPart(resourceId)}`;
  }

  /**
   * Removes a session's vectors: of its namespace, or with scope `'resource'` of its resource's (`resourceId`,
   * else the one this process last saw it called with; none known: nothing is removed). Resolves to how many.
   */
  forgetSession(session: string, resourceId?: string | undefined): Promise<number> {
    let namespace: string;
    if (this.scope === 'session') namespace = `${this.prefix}:s:${keyPart(session)}`;
    else {
      const resource = resourceId ?? this.#resources.get(session);
      if (resource === undefined) return Promise.resolve(0);
      namespace = `${this.prefix}:r:${keyPart(resource)}`;
    }
    return this.forget(namespace, session);
  }

  /**
   * Removes every vector of a deleted session: of its namespace, or with scope `'resource'` of every resource's
   * namespace of this recall (a session may have been called with several, by other processes). Resolves to how
   * many.
   */
  async deleteSession(session: string): Promise<number> {
    if (this.scope === 'session') return this.forget(`${this.prefix}:s:${keyPart(session)}`, session);
    const resources = `${this.prefix}:r:`;
    let removed = 0;
    for (const namespace of await this.store.namespaces()) {
      if (!namespace.startsWith(resources)) continue;
      // A session this process indexes is forgotten in its queue (after its indexing in flight); others by filter.
      if (this.#sessions.has(`${namespace}\u0000${session}`))
        removed += await this.forget(namespace, session);
      else removed += await this.store.delete({ filter: { session } }, { namespace });
    }
    this.#resources.delete(session);
    return removed;
  }

  #indexOf(namespace: string, session: string): SessionIndex {
    const key = `${namespace}\u0000${session}`;
    let index = this.#sessions.get(key);
    if (index === undefined) {
      index = { indexed: undefined, last: undefined, queue: Promise.resolve(), pending: 0 };
      this.#evict();
    } else this.#sessions.delete(key);
    // Most recently used last.
    this.#sessions.set(key, index);
    return index;
  }

  #evict(): void {
    if (this.#sessions.size < KEPT_SESSIONS) return;
    for (const [key, index] of this.#sessions) {
      if (this.#sessions.size < KEPT_SESSIONS) break;
      if (index.pending === 0) this.#sessions.delete(key);
    }
  }

  /** Keeps a background indexing until it ends, for {@link Recall.settled}. */
  track(work: Promise<unknown>): void {
    this.#background.add(work);
    void work.finally(() => this.#background.delete(work));
  }

  /** Resolves once the background indexing scheduled so far has ended (whether or not it succeeded). */
  async settled(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
    const queues = [...this.#sessions.values()].map((index) => index.queue);
    await Promise.allSettled(queues);
  }

  /** Runs `work` after the session's earlier index operations (each session's run one at a time, in order). */
  #enqueue<T>(index: SessionIndex, work: () => Promise<T>): Promise<T> {
    index.pending++;
    const run = index.queue.then(work, work);
    index.queue = run.then(
      () => {
        index.pending--;
      },
      () => {
        index.pending--;
      },
    );
    return run;
  }

  /**
   * Embeds and writes the session's messages from its watermark up to `upTo` (`messages`' positions), in
   * batches, in order. Idempotent: the ids are the positions.
   */
  index(messages: readonly AgentMessage[], upTo: number, target: IndexTarget): Promise<void> {
    const index = this.#indexOf(target.namespace, target.session);
    return this.#enqueue(index, () => this.#catchUp(index, messages, upTo, target));
  }

  async #catchUp(
    index: SessionIndex,
    messages: readonly AgentMessage[],
    upTo: number,
    target: IndexTarget,
  ): Promise<void> {
    const { namespace, session } = target;
    let indexed = index.indexed;
    if (indexed === undefined) {
      indexed = await this.store.count({ namespace, filter: { session } });
    } else if (indexed > 0 && indexed <= messages.length && index.last !== undefined) {
      // The history was rewritten below the watermark (an edited memory): index it again from the start.
      if (recallText(messages[indexed - 1]!) !== index.last) {
        await this.#remove(namespace, session);
        indexed = 0;
      }
    }
    if (indexed > messages.length) {
      // The store holds more than the session now has (it was reset elsewhere): start over.
      await this.#remove(namespace, session);
      indexed = 0;
    }
    index.indexed = indexed;
    const end = Math.min(upTo, messages.length);
    while (indexed < end) {
      target.signal?.throwIfAborted();
      const stop = Math.min(end, indexed + this.batchSize);
      const texts: string[] = [];
      for (let position = indexed; position < stop; position++) texts.push(recallText(messages[position]!));
      const vectors = await this.embedder.embed(texts, { signal: target.signal, onUsage: target.onUsage });
      const from = indexed;
      await this.store.upsert(
        texts.map((text, offset) => ({
          id: `${keyPart(session)}#${from + offset}`,
          vector: vectors[offset]!,
          metadata: {
            session,
            position: from + offset,
            sessionId: target.sessionId,
            sender: messages[from + offset]!.sender,
            text,
          },
        })),
        { namespace },
      );
      indexed = stop;
      index.indexed = stop;
      index.last = texts[texts.length - 1];
    }
  }

  /** Removes a session's vectors (after its history was reset or rewritten). */
  forget(namespace: string, session: string): Promise<number> {
    const index = this.#indexOf(namespace, session);
    return this.#enqueue(index, async () => {
      const removed = await this.#remove(namespace, session);
      index.indexed = 0;
      index.last = undefined;
      return removed;
    });
  }

  /** Deletes the ids `<session>#0` onward (indexed positions are contiguous from 0). */
  async #remove(namespace: string, session: string): Promise<number> {
    let removed = 0;
    for (let from = 0; ; from += DELETE_STEP) {
      const ids = Array.from({ length: DELETE_STEP }, (_, offset) => `${keyPart(session)}#${from + offset}`);
      const deleted = await this.store.delete(ids, { namespace });
      removed += deleted;
      if (deleted < DELETE_STEP) return removed;
    }
  }

  /**
   * The candidates to recall for a query, most similar first: the nearest indexed messages (enough that `topK`
   * remain once those in the window are left out, which the aggregator does: it knows the window), each with its
   * `range` neighbours. Never a message of the calling session at `committed` or after (this call's own). Its own
   * session's neighbours come from memory, other sessions' from the store.
   */
  async search(query: RecallQuery): Promise<RecallGroup[]> {
    const { namespace, session, committed } = query;
    const index = this.#indexOf(namespace, session);
    const hidden = Math.max(0, Math.min(index.indexed ?? 0, committed) - query.windowStart);
    const [vector] = await this.embedder.embed([query.text], {
      signal: query.signal,
      onUsage: query.onUsage,
    });
    const filter = this.scope === 'session' ? { session } : undefined;
    const matches = await this.store.query(vector!, { topK: this.topK + hidden, filter, namespace });
    const history = query.memory.getMemory({ recentN: Number.MAX_SAFE_INTEGER });
    const groups: RecallGroup[] = [];
    let others = 0;
    const gone = new Set<string>();
    const live = new Set<string>();
    const minScore = this.minScore ?? Number.NEGATIVE_INFINITY;
    for (const match of matches) {
      // Nearest first: the rest are further still.
      if (match.score < minScore) break;
      const matchSession = match.metadata.session as string;
      const position = match.metadata.position as number;
      const own = matchSession === session;
      if (own && position >= committed) continue;
      if (!own && query.exists !== undefined && !live.has(matchSession)) {
        if (gone.has(matchSession)) continue;
        if (!(await query.exists(matchSession))) {
          // Deleted or expired in the store, not through the agent: its vectors go now, in the background.
          gone.add(matchSession);
          this.track(
            this.forget(namespace, matchSession).catch((error: unknown) => {
              process.emitWarning(
                `semantic recall could not remove the vectors of deleted session ${JSON.stringify(matchSession)} (${error instanceof Error ? error.message : String(error)}); they are not recalled`,
                { code: 'LAGENT_RECALL_FORGET_FAILED' },
              );
            }),
          );
          continue;
        }
        live.add(matchSession);
      }
      // Other sessions' matches are never in the window: past the first topK of them, none is chosen.
      if (!own && ++others > this.topK) continue;
      const sessionId = own
        ? query.sessionId
        : ((match.metadata.sessionId as SessionId | undefined) ?? matchSession);
      const members: RecallMember[] = [];
      for (let at = position - this.range; at <= position + this.range; at++) {
        if (at < 0 || (own && at >= committed)) continue;
        const key = `${matchSession}#${at}`;
        if (at === position) {
          members.push({ key, own, position: at, message: entry(match, match.score, sessionId) });
        } else if (own) {
          const message = history[at];
          if (message === undefined) continue;
          members.push({
            key,
            own,
            position: at,
            message: { content: recallText(message), sender: message.sender, sessionId, score: match.score },
          });
        } else {
          const [neighbour] = await this.store.query(vector!, {
            topK: 1,
            filter: { session: matchSession, position: at },
            namespace,
          });
          if (neighbour !== undefined) {
            members.push({ key, own, position: at, message: entry(neighbour, match.score, sessionId) });
          }
        }
      }
      groups.push({ own, position, members });
    }
    return groups;
  }
}

/** One message of a {@link RecallGroup}. */
export interface RecallMember {
  /** `<session>#<position>`: one message, whichever groups bring it. */
  key: string;
  /** Of the calling session (then in the window when at its start or after). */
  own: boolean;
  position: number;
  message: RecalledMessage;
}

/** A match and its neighbours, in order. */
export interface RecallGroup {
  own: boolean;
  position: number;
  members: RecallMember[];
}

function entry(match: VectorMatch, score: number, sessionId: SessionId): RecalledMessage {
  return {
    content: typeof match.metadata.text === 'string' ? match.metadata.text : '',
    sender: typeof match.metadata.sender === 'string' ? match.metadata.sender : '',
    sessionId,
    score,
  };
}
