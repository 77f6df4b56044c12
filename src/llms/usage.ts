import type { SessionId } from '../schema/session';

/** Token counts of one call, or summed over calls. */
export interface TokenUsage {
  /** Every prompt token, cached ones included. */
  promptTokens: number;
  /** Every completion token, reasoning included. */
  completionTokens: number;
  totalTokens: number;
  /** Of `promptTokens`, those read from the provider's prompt cache (when it reported them). */
  cacheReadTokens?: number | undefined;
  /** Of `promptTokens`, those written to the provider's prompt cache (when it reported them). */
  cacheWriteTokens?: number | undefined;
  /** Of `completionTokens`, the model's reasoning (when the provider reported it). */
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

/**
 * Reads an OpenAI `usage` object (snake_case); undefined when the server sent none. Cached prompt tokens
 * (`prompt_tokens_details.cached_tokens`) and reasoning tokens (`completion_tokens_details.reasoning_tokens`)
 * are kept when the server reported some.
 */
export function usageFromAPI(usage: unknown): TokenUsage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const raw = usage as Record<string, unknown>;
  const promptTokens = reportedCount(raw.prompt_tokens);
  const completionTokens = reportedCount(raw.completion_tokens);
  const totalTokens = reportedCount(raw.total_tokens) || promptTokens + completionTokens;
  const result: TokenUsage = { promptTokens, completionTokens, totalTokens };
  const cached = reportedCount(
    (raw.prompt_tokens_details as { cached_tokens?: unknown } | null)?.cached_tokens,
  );
  if (cached > 0) result.cacheReadTokens = Math.min(cached, promptTokens);
  const reasoning = reportedCount(
    (raw.completion_tokens_details as { reasoning_tokens?: unknown } | null)?.reasoning_tokens,
  );
  if (reasoning > 0) result.reasoningTokens = reasoning;
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
}
