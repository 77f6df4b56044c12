import type { SessionId } from '../schema/session';

/**
 * Token counts of one call, or summed over calls. `promptTokens` counts every prompt token, the cached ones
 * included; `completionTokens` every output token, reasoning included. The details are set when the server
 * reports them (and they are not 0).
 */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Prompt tokens read from the provider's prompt cache (OpenAI `cached_tokens`, Anthropic `cache_read_input_tokens`, DeepSeek's hits). */
  cachedPromptTokens?: number | undefined;
  /** Prompt tokens written to the prompt cache (Anthropic `cache_creation_input_tokens`). */
  cacheWriteTokens?: number | undefined;
  /** Completion tokens spent reasoning (OpenAI `reasoning_tokens`). */
  reasoningTokens?: number | undefined;
}

/** A zero {@link TokenUsage}. */
export function emptyUsage(): TokenUsage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
}

/** A count a server reported: a finite number >= 0, else 0. */
export function reportedCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/** A count a server reported, or undefined when it reported none (a negative or non-finite one is none). */
function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/**
 * Reads an OpenAI `usage` object (snake_case), chat completions' (`prompt_tokens`, `prompt_tokens_details.
 * cached_tokens`, `completion_tokens_details.reasoning_tokens`; DeepSeek's `prompt_cache_hit_tokens`) or the
 * Responses API's (`input_tokens`, `output_tokens` and their details); undefined when the server sent none.
 * Counts that are not finite numbers >= 0 are read as none.
 */
export function usageFromAPI(usage: unknown): TokenUsage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const raw = usage as Record<string, any>;
  const promptTokens = count(raw.prompt_tokens) ?? count(raw.input_tokens) ?? 0;
  const completionTokens = count(raw.completion_tokens) ?? count(raw.output_tokens) ?? 0;
  const totalTokens = count(raw.total_tokens) || promptTokens + completionTokens;
  const result: TokenUsage = { promptTokens, completionTokens, totalTokens };
  const cached =
    count(raw.prompt_tokens_details?.cached_tokens) ??
    count(raw.input_tokens_details?.cached_tokens) ??
    count(raw.prompt_cache_hit_tokens);
  // DeepSeek sends both its own hit count and OpenAI's detail; a zero detail does not hide a real hit count.
  const hits = count(raw.prompt_cache_hit_tokens);
  const cachedPromptTokens = hits !== undefined && hits > (cached ?? 0) ? hits : cached;
  // Cached tokens are part of the prompt: never more of them than the prompt had.
  if (cachedPromptTokens) result.cachedPromptTokens = Math.min(cachedPromptTokens, promptTokens);
  const reasoning =
    count(raw.completion_tokens_details?.reasoning_tokens) ??
    count(raw.output_tokens_details?.reasoning_tokens);
  if (reasoning) result.reasoningTokens = reasoning;
  return result;
}

/**
 * Token usage per call and per session: `last` is the latest call's usage, `get(sessionId)` the sum over that
 * session's calls, `total()` the sum over all. Calls without a `sessionId` count under session `0`.
 * Sessions are bounded like memories: past `maxSessions` the least recently used one is forgotten
 * (`total()` keeps counting it), and `agent.reset(sessionId)` forgets a session's usage.
 */
export class UsageTracker {
  #last: TokenUsage | undefined;
  readonly #sessions = new Map<string, TokenUsage>();
  readonly #forgotten = emptyUsage();
  readonly maxSessions: number;

  /** @param maxSessions sessions kept (least recently used dropped first). @default 10_000 */
  constructor(maxSessions = 10_000) {
    this.maxSessions = maxSessions;
  }

  /** The latest call's usage (undefined before the first call, or when the server reported none). */
  get last(): TokenUsage | undefined {
    return this.#last ? { ...this.#last } : undefined;
  }

  /** Records one call's usage. */
  record(usage: TokenUsage, sessionId: SessionId = 0): void {
    this.#last = usage;
    const key = String(sessionId);
    const sum = this.#sessions.get(key) ?? emptyUsage();
    add(sum, usage);
    this.#sessions.delete(key);
    this.#sessions.set(key, sum);
    if (this.#sessions.size > this.maxSessions) {
      const [oldest, dropped] = this.#sessions.entries().next().value as [string, TokenUsage];
      this.#sessions.delete(oldest);
      add(this.#forgotten, dropped);
    }
  }

  /** The summed usage of one session. */
  get(sessionId: SessionId = 0): TokenUsage {
    const sum = this.#sessions.get(String(sessionId));
    return sum ? { ...sum } : emptyUsage();
  }

  /** The summed usage of every session. */
  total(): TokenUsage {
    const sum = { ...this.#forgotten };
    for (const usage of this.#sessions.values()) add(sum, usage);
    return sum;
  }

  /** Forgets one session's usage, or everything when no session is given. */
  reset(sessionId?: SessionId): void {
    if (sessionId === undefined) {
      this.#sessions.clear();
      this.#last = undefined;
      Object.assign(this.#forgotten, emptyUsage());
    } else this.#sessions.delete(String(sessionId));
  }
}

function add(sum: TokenUsage, usage: TokenUsage): void {
  sum.promptTokens += usage.promptTokens;
  sum.completionTokens += usage.completionTokens;
  sum.totalTokens += usage.totalTokens;
  if (usage.cachedPromptTokens !== undefined)
    sum.cachedPromptTokens = (sum.cachedPromptTokens ?? 0) + usage.cachedPromptTokens;
  if (usage.cacheWriteTokens !== undefined)
    sum.cacheWriteTokens = (sum.cacheWriteTokens ?? 0) + usage.cacheWriteTokens;
  if (usage.reasoningTokens !== undefined)
    sum.reasoningTokens = (sum.reasoningTokens ?? 0) + usage.reasoningTokens;
}

/**
 * The usage a model counts itself (an API client, a replay): each call's usage counted under its session and
 * given to the call's `onUsage`, and the four usage methods models offer (`getUsage()`, ...).
 */
export class UsageMeter {
  readonly #tracker = new UsageTracker();

  /** Counts one call's usage under its session (`0` without one) and gives it to the call's `onUsage`. */
  record(
    usage: TokenUsage,
    call:
      | { sessionId?: SessionId | undefined; onUsage?: ((usage: TokenUsage) => void) | undefined }
      | undefined,
  ): void {
    this.#tracker.record(usage, call?.sessionId);
    call?.onUsage?.(usage);
  }

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return this.#tracker.get(sessionId);
  }

  getTotalUsage(): TokenUsage {
    return this.#tracker.total();
  }

  getLastUsage(): TokenUsage | undefined {
    return this.#tracker.last;
  }

  resetUsage(sessionId?: SessionId): void {
    this.#tracker.reset(sessionId);
  }
}
