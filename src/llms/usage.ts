import type { SessionId } from '../schema/session';

/** Token counts of one call, or summed over calls. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** A zero {@link TokenUsage}. */
export function emptyUsage(): TokenUsage {
  return { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
}

/** Reads an OpenAI `usage` object (snake_case); undefined when the server sent none. */
export function usageFromAPI(usage: unknown): TokenUsage | undefined {
  if (usage === null || typeof usage !== 'object') return undefined;
  const raw = usage as Record<string, unknown>;
  const number = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
  const promptTokens = number(raw.prompt_tokens);
  const completionTokens = number(raw.completion_tokens);
  const totalTokens = number(raw.total_tokens) || promptTokens + completionTokens;
  return { promptTokens, completionTokens, totalTokens };
}

/**
 * Token usage per call and per session: `last` is the latest call's usage, `get(sessionId)` the sum over that
 * session's calls, `total()` the sum over all. Calls without a `sessionId` count under session `0`.
 */
export class UsageTracker {
  #last: TokenUsage | undefined;
  readonly #sessions = new Map<string, TokenUsage>();

  /** The latest call's usage (undefined before the first call, or when the server reported none). */
  get last(): TokenUsage | undefined {
    return this.#last ? { ...this.#last } : undefined;
  }

  /** Records one call's usage. */
  record(usage: TokenUsage, sessionId: SessionId = 0): void {
    this.#last = usage;
    const key = String(sessionId);
    const sum = this.#sessions.get(key) ?? emptyUsage();
    sum.promptTokens += usage.promptTokens;
    sum.completionTokens += usage.completionTokens;
    sum.totalTokens += usage.totalTokens;
    this.#sessions.set(key, sum);
  }

  /** The summed usage of one session. */
  get(sessionId: SessionId = 0): TokenUsage {
    const sum = this.#sessions.get(String(sessionId));
    return sum ? { ...sum } : emptyUsage();
  }

  /** The summed usage of every session. */
  total(): TokenUsage {
    const sum = emptyUsage();
    for (const usage of this.#sessions.values()) {
      sum.promptTokens += usage.promptTokens;
      sum.completionTokens += usage.completionTokens;
      sum.totalTokens += usage.totalTokens;
    }
    return sum;
  }

  /** Forgets one session's usage, or everything when no session is given. */
  reset(sessionId?: SessionId): void {
    if (sessionId === undefined) {
      this.#sessions.clear();
      this.#last = undefined;
    } else this.#sessions.delete(String(sessionId));
  }
}
