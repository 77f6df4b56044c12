import { countTokens as estimateTokens, type TokenCountInput } from '../../llms/token-count';
import { type Memory, RECENT } from '../../memory/memory';
import type { OutputParser } from '../../prompts/output-parser';
import type { AgentMessage } from '../../schema/agent-message';
import type { ChatMessage } from '../../schema/chat-message';
import { ConfigurationError } from '../../schema/errors';
import { type SessionId, sessionKey } from '../../schema/session';
import { toolCallsOf } from '../../schema/tool-calls';
import type { RecalledMessage } from '../agent-base';
import { Recall, type RecallGroup, type RecallOptions } from '../interceptors/recall/recall';
import { FORGET_RECALLED, RECALL_INDEX, WINDOW_START, WITH_RECALLED } from '../interceptors/recall/symbols';
import { appendHistory, DefaultAggregator, type SystemInstruction } from './default-aggregator';
import { foldFrame, isSummary, type SummarizeOptions, Summarizer } from './summarize';

/** Something that counts tokens the way `llm.countTokens` does: a text, or chat messages as a prompt. */
export type TokenCounter = (input: TokenCountInput) => number;

/** Options of {@link TokenWindowAggregator}. */
export interface TokenWindowAggregatorOptions {
  /** The most tokens a prompt may have (the model's context window, or less). */
  maxTokens: number;
  /**
   * Tokens kept free for what is not in the aggregated prompt: the reply (`maxNewTokens`), an output
   * parser's format instruction, the tools offered. The history gets `maxTokens - reserve`. @default 0
   */
  reserve?: number | undefined;
  /** The model whose `countTokens` counts (its encoding when known). */
  llm?: { countTokens(input: TokenCountInput): number } | undefined;
  /**
   * A counter of its own, used instead of `llm`'s. Without either, tokens are estimated (see
   * `countTokens` of the models: `ceil(UTF-8 bytes / 4)` per text plus OpenAI's per-message framing).
   */
  countTokens?: TokenCounter | undefined;
  /**
   * Fold older turns into one summary message kept in memory once the history is over `triggerTokens`
   * (see {@link TokenWindowAggregator.compact}).
   */
  summarize?: SummarizeOptions | undefined;
  /**
   * Semantic recall: before each model call, the newest user message is embedded and the `topK` most similar
   * earlier messages that are out of the window (of the session, or with `scope: 'resource'` of every session
   * of the call's `resourceId`) are placed before the newest turn, marked as recalled. Messages are embedded
   * once their turn is committed. Async agents only; not with `summarize`. See the guide's "Semantic recall".
   */
  recall?: RecallOptions | undefined;
}

/** What the recall interceptor hands one `aggregate` call. */
interface PendingRecall {
  memory: Memory;
  /** The candidates, most similar first (see `Recall.search`). */
  groups: readonly RecallGroup[];
  /** How many matches to show at most. */
  topK: number;
  /** The position (in the whole history) of the newest turn's first message: the block goes before it. */
  before: number;
  sessionId: SessionId;
  /** The messages the prompt shows (the least similar are left out when they would take over half the room). */
  kept: readonly RecalledMessage[];
}

/** The first line of the recalled block, as the model sees it. */
export const RECALLED_HEADER =
  'Recalled from earlier in the conversation (not said now; shown because they may be relevant to the next message):';

/** A unit's count, cached on its first message: valid for the same agent name and the same last message. */
interface CachedCount {
  name: string;
  last: AgentMessage;
  tokens: number;
}

/** System-prompt counts kept (by role, name and text) before the cache starts over. */
const SYSTEM_CACHE_LIMIT = 64;

/**
 * A {@link DefaultAggregator} that sends the newest history that fits in `maxTokens - reserve` tokens: the
 * system instruction always, then as many of the newest turns as fit, oldest dropped first. An assistant
 * tool-call message and the results answering it form one unit, kept or dropped together, so the prompt
 * never has a tool result without its call nor a call without its results. The newest unit is always
 * sent: when it does not fit on its own (one huge message), it is sent anyway and the prompt is over the
 * limit, for the model to refuse rather than for the aggregator to send an empty history. With `summarize`,
 * older turns are folded into a summary message kept in memory (see {@link TokenWindowAggregator.compact}),
 * which is then always sent, after the system prompt.
 *
 * Counting: each message is counted once (its count kept with the memory's message object, so a window
 * over a long history costs what the sent part costs, not the whole history) with the given counter,
 * per message as `count([message]) - count([])`; consecutive user messages joined into one are counted
 * apart, which only overestimates. Rendering is the default aggregator's.
 *
 * @example
 * const agent = new Agent({ llm, aggregator: new TokenWindowAggregator({ maxTokens: 128_000, reserve: 4_000, llm }) });
 */
export class TokenWindowAggregator extends DefaultAggregator {
  /** The most tokens a prompt may have. */
  readonly maxTokens: number;
  /** Tokens kept free for the reply and anything added after aggregation. */
  readonly reserve: number;
  readonly #count: TokenCounter;
  /** `count([])`: what a prompt costs besides its messages (the reply priming). */
  readonly #base: number;
  readonly #counts = new WeakMap<AgentMessage, CachedCount>();
  readonly #systemCounts = new Map<string, number>();
  readonly #summarizer: Summarizer | undefined;
  /** Semantic recall's index and search, with `recall`. */
  readonly [RECALL_INDEX]: Recall | undefined;
  #pending: PendingRecall | undefined;
  #warnedNoFrame = false;

  constructor(options: TokenWindowAggregatorOptions) {
    super();
    const { maxTokens, reserve = 0 } = options ?? ({} as TokenWindowAggregatorOptions);
    if (!Number.isInteger(maxTokens) || maxTokens <= 0) {
      throw new ConfigurationError({
        message: `TokenWindowAggregator: maxTokens must be a positive integer, got ${String(maxTokens)}`,
      });
    }
    if (!Number.isInteger(reserve) || reserve < 0 || reserve >= maxTokens) {
      throw new ConfigurationError({
        message: `TokenWindowAggregator: reserve must be an integer from 0 to maxTokens - 1, got ${String(reserve)}`,
      });
    }
    const llm = options.llm;
    if (llm !== undefined && typeof llm?.countTokens !== 'function') {
      throw new ConfigurationError({ message: 'TokenWindowAggregator: llm must have countTokens()' });
    }
    if (options.countTokens !== undefined && typeof options.countTokens !== 'function') {
      throw new ConfigurationError({ message: 'TokenWindowAggregator: countTokens must be a function' });
    }
    this.maxTokens = maxTokens;
    this.reserve = reserve;
    this.#count =
      options.countTokens ?? (llm ? (input) => llm.countTokens(input) : (input) => estimateTokens(input));
    this.#base = this.#count([]);
    this.#summarizer =
      options.summarize === undefined ? undefined : new Summarizer(options.summarize, this.budget);
    if (options.recall !== undefined && options.summarize !== undefined) {
      throw new ConfigurationError({
        message:
          'TokenWindowAggregator: recall and summarize cannot be used together (a summary removes the messages recall indexes by their place in the history)',
      });
    }
    this[RECALL_INDEX] = options.recall === undefined ? undefined : new Recall(options.recall);
  }

  /** The tokens left for the prompt: `maxTokens - reserve`. */
  get budget(): number {
    return this.maxTokens - this.reserve;
  }

  /** True with `summarize`: agents then call {@link compact} before each prompt, inside their call. */
  get summarizes(): boolean {
    return this.#summarizer !== undefined;
  }

  override aggregate(
    memory: Memory | undefined,
    name: string,
    parser?: OutputParser,
    systemInstruction?: SystemInstruction,
  ): ChatMessage[] {
    const out = this.aggregateSystemInstruction(systemInstruction, parser);
    if (!memory) return out;
    if (this.#summarizer?.isSync === true) this.#compactInline(memory, name);
    const history = memory[RECENT]();
    let budget = this.budget - this.#base - this.#systemTokens(out);
    // A summary of the older turns is kept like the system prompt.
    const pinned = history.length > 1 && isSummary(history[0]!) ? 1 : 0;
    if (pinned === 1) {
      budget -= this.#unitTokens(history, 0, 1, name);
      appendHistory(out, history, name, 0, 1);
    }
    const pending = this.#pending;
    if (pending !== undefined && pending.memory === memory && pending.groups.length > 0) {
      this.#withBlock(out, history, memory.length - history.length, name, budget, pending);
      return out;
    }
    appendHistory(out, history, name, this.windowStart(history, name, budget, pinned));
    return out;
  }

  /**
   * The prompt's history with the recalled block before the newest turn. The block's tokens come off the
   * window's budget, so the window it leaves decides which candidates are recalled (those in it never are): the
   * window is taken again, starting later each time, until the block fits beside it. The least similar matches are left out (each with its
   * neighbours) when the block would take over half the budget.
   */
  #withBlock(
    out: ChatMessage[],
    history: readonly AgentMessage[],
    offset: number,
    name: string,
    budget: number,
    pending: PendingRecall,
  ): void {
    const blockFor = (windowStart: number) => {
      let chosen = chooseRecalled(pending.groups, pending.topK, offset + windowStart);
      let block = recalledBlock(flatten(chosen), name, pending.sessionId);
      let tokens = this.#count([block]) - this.#base;
      while (tokens > budget / 2 && chosen.length > 1) {
        chosen = chosen.slice(0, -1);
        block = recalledBlock(flatten(chosen), name, pending.sessionId);
        tokens = this.#count([block]) - this.#base;
      }
      return { chosen, block, tokens };
    };
    // The window without the block, then with it: it only ever starts later, so what left it is a candidate
    // from then on, and it settles (a block that came out smaller leaves room unused rather than taking back
    // into the window what it now recalls).
    let start = this.windowStart(history, name, budget);
    let fitted = blockFor(start);
    for (;;) {
      const next = this.windowStart(history, name, budget - fitted.tokens);
      if (next <= start) break;
      start = next;
      fitted = blockFor(start);
    }
    const kept = flatten(fitted.chosen);
    pending.kept = kept;
    if (kept.length === 0) {
      appendHistory(out, history, name, this.windowStart(history, name, budget));
      return;
    }
    const before = Math.min(history.length, Math.max(start, pending.before - offset));
    appendHistory(out, history, name, start, before);
    out.push(fitted.block);
    // The newest turn rendered on its own: its first user message is not joined to the block.
    const newest: ChatMessage[] = [];
    appendHistory(newest, history, name, before);
    for (const message of newest) out.push(message);
  }

  /**
   * With `recall`: removes the vectors of a session's messages from the store (`agent.reset(sessionId)` does it
   * too). With `scope: 'resource'` give the session's `resourceId` (else the one this process last saw it
   * called with). Resolves to how many vectors were removed.
   */
  forgetRecalled(sessionId: SessionId, options: { resourceId?: string | undefined } = {}): Promise<number> {
    if (this[RECALL_INDEX] === undefined) return Promise.resolve(0);
    return this[RECALL_INDEX].forgetSession(String(sessionKey(sessionId)), options.resourceId);
  }

  /**
   * With `recall`: resolves once the turns committed so far are indexed (their embedding runs in the background,
   * after the reply): before a process exits, or in tests. A turn whose indexing failed is indexed before its
   * session's next recall.
   */
  flushRecall(): Promise<void> {
    return this[RECALL_INDEX] === undefined ? Promise.resolve() : this[RECALL_INDEX].settled();
  }

  /** `agent.reset(sessionId)`: the session's vectors are removed in the background (a failure is a warning). */
  [FORGET_RECALLED](sessionId: SessionId, agentName: string): void {
    if (this[RECALL_INDEX] === undefined) return;
    this.forgetRecalled(sessionId).catch((error: unknown) => {
      process.emitWarning(
        `${agentName}: semantic recall could not remove the vectors of session ${JSON.stringify(String(sessionId))} after its reset (${error instanceof Error ? error.message : String(error)})`,
        { code: 'LAGENT_RECALL_FORGET_FAILED' },
      );
    });
  }

  /** See {@link WINDOW_START}: the window as `aggregate` would take it without recall. */
  [WINDOW_START](
    memory: Memory,
    name: string,
    parser: OutputParser | undefined,
    systemInstruction: SystemInstruction | undefined,
  ): number {
    const system = this.aggregateSystemInstruction(systemInstruction, parser);
    const history = memory[RECENT]();
    const budget = this.budget - this.#base - this.#systemTokens(system);
    return memory.length - history.length + this.windowStart(history, name, budget);
  }

  /**
   * Builds a prompt (`build` calls `aggregate` on `memory`) with the recalled candidates out of its window placed
   * before position `before`;
   * returns it and the recalled messages it shows.
   */
  [WITH_RECALLED]<T>(
    memory: Memory,
    groups: readonly RecallGroup[],
    topK: number,
    before: number,
    sessionId: SessionId,
    build: () => T,
  ): { prompt: T; kept: readonly RecalledMessage[] } {
    const pending: PendingRecall = { memory, groups, topK, before, sessionId, kept: [] };
    this.#pending = pending;
    try {
      return { prompt: build(), kept: pending.kept };
    } finally {
      this.#pending = undefined;
    }
  }

  /**
   * With `summarize`: when the history is over `triggerTokens`, replaces its older turns (all but the newest
   * `keepTokens`, whole tool turns only) with one summary message, written by the summariser agent called
   * right here, inside the current call: it is traced like any sub-call, and its undo is journaled in the
   * current call frame, so a call that fails puts the folded messages back. Returns a promise when the
   * summariser's model is async (await it in a `forward` before aggregating); does nothing without
   * `summarize` or below the trigger.
   *
   * Agents call it themselves before each prompt, inside their call's own frame (see {@link summarizes}).
   * `aggregate` also calls it for a sync model when it runs inside a call frame; outside any (a custom use of
   * `aggregate`), nothing could take a summary back if the call failed, so the history is windowed but not
   * summarised (a process warning, `LAGENT_SUMMARY_SKIPPED`, says so once).
   */
  compact(memory: Memory, name: string): void | Promise<void> {
    const summarizer = this.#summarizer;
    if (summarizer === undefined) return;
    const history = memory[RECENT]();
    if (this.#historyTokens(history, name) <= summarizer.triggerTokens) return;
    const end = this.windowStart(history, name, summarizer.keepTokens);
    // Nothing older than the kept turns but the last summary: nothing new to fold.
    if (end === 0 || (end === 1 && isSummary(history[0]!))) return;
    return summarizer.fold(memory, history, end, name, foldFrame());
  }

  #compactInline(memory: Memory, name: string): void {
    if (foldFrame() === undefined) {
      const history = memory[RECENT]();
      if (!this.#warnedNoFrame && this.#historyTokens(history, name) > this.#summarizer!.triggerTokens) {
        this.#warnedNoFrame = true;
        process.emitWarning(
          'TokenWindowAggregator: the history is over summarize.triggerTokens, but the agent runs outside any call frame (an outermost Agent with the built-in forward), where a failed call could not take a summary back: the history is windowed, not summarised',
          { code: 'LAGENT_SUMMARY_SKIPPED' },
        );
      }
      return;
    }
    void this.compact(memory, name);
  }

  /** The tokens of the whole history (counts cached per unit). */
  #historyTokens(history: readonly AgentMessage[], name: string): number {
    let tokens = 0;
    for (let end = history.length; end > 0; ) {
      const start = unitStart(history, end, name);
      tokens += this.#unitTokens(history, start, end, name);
      end = start;
    }
    return tokens;
  }

  /**
   * Where the window over `history` starts: the oldest unit (not before `floor`) such that it and every
   * newer one fit in `budget` tokens (the newest unit always included). Walks from the newest message back and stops at the
   * first unit that does not fit, so it reads only the sent part of the history.
   */
  protected windowStart(history: readonly AgentMessage[], name: string, budget: number, floor = 0): number {
    let end = history.length;
    let used = 0;
    while (end > floor) {
      const start = unitStart(history, end, name);
      const tokens = this.#unitTokens(history, start, end, name);
      if (used + tokens > budget && end !== history.length) break;
      used += tokens;
      end = start;
    }
    return end;
  }

  /** The tokens of `history[start..end)` rendered on its own, counted once per unit. */
  #unitTokens(history: readonly AgentMessage[], start: number, end: number, name: string): number {
    const first = history[start]!;
    const last = history[end - 1]!;
    const cached = this.#counts.get(first);
    if (cached !== undefined && cached.name === name && cached.last === last) return cached.tokens;
    const rendered: ChatMessage[] = [];
    appendHistory(rendered, history, name, start, end);
    let tokens = 0;
    for (const message of rendered) tokens += this.#count([message]) - this.#base;
    this.#counts.set(first, { name, last, tokens });
    return tokens;
  }

  /** The system messages' tokens (cached by text: the instruction is usually the same every call). */
  #systemTokens(messages: readonly ChatMessage[]): number {
    let tokens = 0;
    for (const message of messages) {
      const key = `${message.role}\u0000${message.name ?? ''}\u0000${message.content ?? ''}`;
      let count = this.#systemCounts.get(key);
      if (count === undefined) {
        count = this.#count([message]) - this.#base;
        if (this.#systemCounts.size >= SYSTEM_CACHE_LIMIT) this.#systemCounts.clear();
        this.#systemCounts.set(key, count);
      }
      tokens += count;
    }
    return tokens;
  }
}

/**
 * The first `topK` groups whose match is out of the window (a match of the calling session at `windowStart` or
 * after is in it), each without its members in the window or brought by an earlier group.
 */
function chooseRecalled(groups: readonly RecallGroup[], topK: number, windowStart: number): RecallGroup[] {
  const chosen: RecallGroup[] = [];
  const seen = new Set<string>();
  for (const group of groups) {
    if (chosen.length === topK) break;
    if (group.own && group.position >= windowStart) continue;
    const members = group.members.filter((member) => {
      if ((member.own && member.position >= windowStart) || seen.has(member.key)) return false;
      seen.add(member.key);
      return true;
    });
    chosen.push(members.length === group.members.length ? group : { ...group, members });
  }
  return chosen;
}

/** The messages of the groups, in order. */
function flatten(groups: readonly RecallGroup[]): RecalledMessage[] {
  const messages: RecalledMessage[] = [];
  for (const group of groups) for (const member of group.members) messages.push(member.message);
  return messages;
}

/**
 * The recalled messages as one user message, marked as recalled: the header, then a line per message
 * (`user:`, `assistant:` for the agent's own, else the sender), those of another session of the resource
 * marked `(another conversation)`.
 */
export function recalledBlock(
  recalled: readonly RecalledMessage[],
  name: string,
  sessionId: SessionId,
): ChatMessage {
  const lines = [RECALLED_HEADER];
  for (const message of recalled) {
    const who = message.sender === name ? 'assistant' : message.sender;
    const where = String(message.sessionId) === String(sessionId) ? '' : ' (another conversation)';
    lines.push(`${who}${where}: ${message.content}`);
  }
  return { role: 'user', content: lines.join('\n') };
}

/**
 * The start of the unit that ends at `end`: a message alone, or the agent's tool-call message with the run
 * of result messages after it (which answer it, or are shown as text when they do not).
 */
export function unitStart(history: readonly AgentMessage[], end: number, name: string): number {
  let at = end - 1;
  const last = history[at]!;
  if (last.sender === name || toolCallsOf(last.formatted) === null) return at;
  // A run of results: it belongs to the tool-call message before it, when there is one.
  while (at > 0) {
    const previous = history[at - 1]!;
    if (previous.sender === name) return toolCallsOf(previous.formatted) !== null ? at - 1 : end - 1;
    if (toolCallsOf(previous.formatted) === null) return end - 1;
    at--;
  }
  return end - 1;
}
