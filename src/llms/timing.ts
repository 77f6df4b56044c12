import { ConfigurationError } from '../schema/errors';
import { MAX_TIMER_MS } from '../utils/timers';
import type { RetryPolicy } from './request-retry';

/** The timing options of a model API client (OpenAI-compatible or Claude), as given. */
export interface TimingOptions {
  /**
   * Milliseconds one attempt may take; for streams, the longest silence between two events. `Infinity` means no
   * timeout; finite values above 2147483647 (about 24.8 days) are a `ConfigurationError` (Node cannot time them).
   * The sync twins (`GPTAPI`, `ClaudeAPI`, ...) also derive their bridge deadline from it. @default 120000
   */
  timeout?: number | undefined;
  /** Retries after the first attempt (429, 408, 5xx and Anthropic's 529, connection failures, timeouts). @default 2 */
  retry?: number | undefined;
  /** First retry delay, doubled per retry, unless the server sends `retry-after(-ms)`. @default 1000 */
  retryMinDelayMs?: number | undefined;
  /** Longest retry delay of the backoff. At most 2147483647. @default 30000 */
  retryMaxDelayMs?: number | undefined;
  /**
   * Longest wait a server's `retry-after-ms` / `retry-after` is honoured for, in ms: a longer request is cut to
   * this, and the final error says what the server asked. `Infinity` honours any. @default 60000
   */
  maxRetryAfter?: number | undefined;
}

/** The timing options with defaults applied and checked. */
export interface ClientTiming {
  /** Per attempt (streams: between two events); `Infinity` for none. */
  timeout: number;
  retry: number;
  retryMinDelayMs: number;
  retryMaxDelayMs: number;
  /** The longest `retry-after` honoured; `Infinity` for any. */
  maxRetryAfter: number;
  /** The same, as `withRetries` takes it. */
  policy: RetryPolicy;
}

export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

/** Room for the bridge and the server's own slowness on top of a sync client's worst case. */
const BRIDGE_MARGIN_MS = 10_000;

interface Rule {
  zero: boolean;
  infinity: boolean;
}

function milliseconds(owner: string, name: string, value: unknown, fallback: number, rule: Rule): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!rule.zero && value === 0)) {
    throw new ConfigurationError({
      message: `${owner}: ${name} must be a ${rule.zero ? 'non-negative' : 'positive'} number of ms, got ${String(value)}`,
    });
  }
  if (value > MAX_TIMER_MS && !(rule.infinity && value === Number.POSITIVE_INFINITY)) {
    throw new ConfigurationError({
      message: `${owner}: ${name} must be at most ${MAX_TIMER_MS} ms (about 24.8 days)${rule.infinity ? ', or Infinity for none' : ''}; got ${value}`,
    });
  }
  return value;
}

/**
 * Applies the defaults and checks every value. `timeout` and `maxRetryAfter` may be `Infinity` (no limit);
 * other finite values above 2147483647 ms are refused, because Node would fire such a timer after 1 ms.
 * `owner` names the client in messages.
 */
export function resolveTiming(options: TimingOptions, owner: string): ClientTiming {
  const retry = options.retry ?? 2;
  if (typeof retry !== 'number' || !Number.isInteger(retry) || retry < 0) {
    throw new ConfigurationError({
      message: `${owner}: retry must be a non-negative integer, got ${String(retry)}`,
    });
  }
  const timing = {
    timeout: milliseconds(owner, 'timeout', options.timeout, DEFAULT_TIMEOUT_MS, {
      zero: false,
      infinity: true,
    }),
    retry,
    retryMinDelayMs: milliseconds(owner, 'retryMinDelayMs', options.retryMinDelayMs, 1000, {
      zero: true,
      infinity: false,
    }),
    retryMaxDelayMs: milliseconds(owner, 'retryMaxDelayMs', options.retryMaxDelayMs, 30_000, {
      zero: true,
      infinity: false,
    }),
    maxRetryAfter: milliseconds(owner, 'maxRetryAfter', options.maxRetryAfter, DEFAULT_MAX_RETRY_AFTER_MS, {
      zero: true,
      infinity: true,
    }),
  };
  const policy: RetryPolicy = {
    retries: timing.retry,
    minDelayMs: timing.retryMinDelayMs,
    maxDelayMs: timing.retryMaxDelayMs,
    maxRetryAfterMs: timing.maxRetryAfter,
  };
  return { ...timing, policy };
}

/**
 * How long one call of a sync client may block: every attempt timing out, with the longest wait between
 * attempts, plus a margin. `Infinity` when the client has no timeout.
 */
export function bridgedCallBudget(timing: ClientTiming): number {
  const attempts = timing.retry + 1;
  const wait = Math.max(timing.retryMaxDelayMs, timing.maxRetryAfter);
  const budget = attempts * timing.timeout + (timing.retry > 0 ? timing.retry * wait : 0) + BRIDGE_MARGIN_MS;
  return Number.isFinite(budget) ? Math.min(budget, MAX_TIMER_MS) : budget;
}
