import { AsyncBaseLLM } from './base-llm';
import type { LLMCallParams } from './types';
import { type TokenUsage, UsageTracker } from './usage';

/**
 * What the API clients share besides the model interface: token usage per call and per session, as the
 * server reports it, and a short description for logs. Subclasses record each call's usage with
 * {@link recordUsage}.
 */
export abstract class MeteredLLM extends AsyncBaseLLM {
  /** The model name sent with every request. */
  abstract readonly model: string;
  /** The server's base URL. */
  abstract readonly baseURL: string;
  readonly #usage = new UsageTracker();

  /** Counts one call's usage under its session (calls without a `sessionId` count under `0`). */
  protected recordUsage(usage: TokenUsage, sessionId: LLMCallParams['sessionId']): void {
    this.#usage.record(usage, sessionId);
  }

  /** Summed token usage of one session (calls without a `sessionId` count under `0`). */
  getUsage(sessionId: LLMCallParams['sessionId'] = 0): TokenUsage {
    return this.#usage.get(sessionId);
  }

  /** Summed token usage of every session. */
  getTotalUsage(): TokenUsage {
    return this.#usage.total();
  }

  /** The latest call's token usage, when the server reported it. */
  getLastUsage(): TokenUsage | undefined {
    return this.#usage.last;
  }

  /** Forgets one session's usage, or all of it. */
  resetUsage(sessionId?: LLMCallParams['sessionId']): void {
    this.#usage.reset(sessionId);
  }

  /** The model name and server, for logs. */
  describe(): { model: string; baseURL: string } {
    return { model: this.model, baseURL: this.baseURL };
  }
}
