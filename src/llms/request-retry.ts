import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import pRetry, { AbortError } from 'p-retry';
import { LLMRequestError, TimeoutError } from '../schema/errors';
import { retryAfterMs } from '../utils/retry-after';
import { errorMessage } from '../utils/text';
import { sleep } from '../utils/timers';
import type { RetryNotice } from './types';

/** How a client retries failed requests. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff delay; it doubles per retry. */
  minDelayMs: number;
  /** Upper bound of the backoff delay. */
  maxDelayMs: number;
  /** The longest `retry-after` waited for; a longer one is cut to this, and the final error says so. */
  maxRetryAfterMs: number;
}

/** The longest delay Node's timers support. */

/** How {@link withRetries} tells a client that it sends a request again (the client counts its retries). */
export const COUNT_RETRY: unique symbol = Symbol('lagent.countRetry');

/** A client that counts its retries. */
export interface RetryCounting {
  [COUNT_RETRY](): void;
}

/** Extra facts about a failed attempt that only the retry loop needs. */
interface AttemptFacts {
  /** How long the server asked us to wait. */
  retryAfterMs?: number | undefined;
}

const facts = new WeakMap<Error, AttemptFacts>();

/** The message the server gave, without the SDK's status prefix. */
function serverMessage(error: APIError): string {
  const body = error.error as { message?: unknown } | undefined;
  if (body && typeof body.message === 'string' && body.message.length > 0) return body.message;
  return error.message;
}

function isNetworkFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^(ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|UND_ERR_SOCKET)$/.test(code))
    return true;
  return (
    error.name === 'TypeError' && /terminated|fetch failed|socket|other side closed/i.test(error.message)
  );
}

/**
 * Turns whatever one attempt threw into an `LLMRequestError` saying whether to retry: 429, 408, 5xx,
 * connection failures and timeouts are retryable; other 4xx, malformed responses and error events are not.
 * `where` names the request in the message.
 */
export function toRequestError(error: unknown, where: string, attempts: number): LLMRequestError {
  if (error instanceof LLMRequestError) return error;
  if (error instanceof TimeoutError) {
    return new LLMRequestError({
      message: `${where} timed out: ${error.message}`,
      retryable: true,
      attempts,
      cause: error,
    });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new LLMRequestError({ message: `${where} timed out`, retryable: true, attempts, cause: error });
  }
  if (error instanceof APIUserAbortError) {
    return new LLMRequestError({ message: `${where} was aborted`, retryable: false, attempts, cause: error });
  }
  if (error instanceof APIConnectionError) {
    const reason = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return new LLMRequestError({
      message: `${where} could not reach the server (${error.message}${reason})`,
      retryable: true,
      attempts,
      cause: error,
    });
  }
  if (error instanceof APIError) {
    const status = typeof error.status === 'number' ? error.status : undefined;
    const retryable = status !== undefined && (status === 429 || status === 408 || status >= 500);
    const message =
      status === undefined
        ? `${where} failed: the server sent an error event: ${serverMessage(error)}`
        : `${where} failed with status ${status}: ${serverMessage(error)}`;
    const wrapped = new LLMRequestError({ message, status, retryable, attempts, cause: error });
    facts.set(wrapped, { retryAfterMs: retryAfterMs(error.headers ?? undefined) });
    return wrapped;
  }
  if (error instanceof SyntaxError) {
    return new LLMRequestError({
      message: `${where} failed: the server sent malformed JSON (${error.message})`,
      retryable: false,
      attempts,
      cause: error,
    });
  }
  if (isNetworkFailure(error)) {
    return new LLMRequestError({
      message: `${where} lost its connection: ${(error as Error).message}`,
      retryable: true,
      attempts,
      cause: error,
    });
  }
  const message = errorMessage(error);
  return new LLMRequestError({
    message: `${where} failed: ${message}`,
    retryable: false,
    attempts,
    cause: error,
  });
}

function backoff(retriesConsumed: number, policy: RetryPolicy): number {
  return Math.min(policy.maxDelayMs, policy.minDelayMs * 2 ** retriesConsumed);
}

/**
 * Runs `attempt` with p-retry: every failure becomes an `LLMRequestError`; retryable ones are retried after an
 * exponential backoff, or after the server's `retry-after-ms` / `retry-after` when it sent one (at most
 * `maxRetryAfterMs`). The final error carries the number of attempts, and says when the server asked for a
 * longer wait than `maxRetryAfterMs`. An abort of `signal` stops the attempt and any backoff wait at once and
 * rejects with the signal's reason. The call's `onRetry` is told before each retry is sent (after the wait);
 * what it throws ends the request as it is (a budget refusing the attempt). `client` counts each retry sent.
 */
export async function withRetries<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  policy: RetryPolicy,
  where: string,
  signal: AbortSignal | undefined,
  call?: { onRetry?: ((next: RetryNotice) => void) | undefined } | undefined,
  client?: RetryCounting | undefined,
): Promise<T> {
  if (signal?.aborted) throw signal.reason;
  // The first attempt runs on its own: most calls succeed at once, and under load p-retry's set-up per call
  // costs more than the call's own work. A failure goes through p-retry exactly as before.
  let firstFailure: unknown;
  try {
    return await attempt(1);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    firstFailure = error;
  }
  return retryAfterFirstFailure(
    (attemptNumber) => (attemptNumber === 1 ? Promise.reject(firstFailure) : attempt(attemptNumber)),
    policy,
    where,
    signal,
    call?.onRetry,
    client,
  );
}

/** Told of a retry of the same model. */
const SAME_MODEL: RetryNotice = Object.freeze({});

/** p-retry over `attempt`, whose first call replays the first attempt's failure. */
async function retryAfterFirstFailure<T>(
  attempt: (attemptNumber: number) => Promise<T>,
  policy: RetryPolicy,
  where: string,
  signal: AbortSignal | undefined,
  onRetry: ((next: RetryNotice) => void) | undefined,
  client: RetryCounting | undefined,
): Promise<T> {
  let attempts = 0;
  let lastError: LLMRequestError | undefined;
  /** The longest `retry-after` the server asked for beyond the cap. */
  let overCap: number | undefined;
  try {
    return await pRetry(
      async (attemptNumber) => {
        if (attemptNumber > 1) {
          if (onRetry !== undefined) {
            try {
              onRetry(SAME_MODEL);
            } catch (refusal) {
              throw new AbortError(refusal instanceof Error ? refusal : new Error(String(refusal)));
            }
          }
          client?.[COUNT_RETRY]();
        }
        attempts = attemptNumber;
        try {
          return await attempt(attemptNumber);
        } catch (error) {
          if (signal?.aborted) throw signal.reason;
          lastError = toRequestError(error, where, attemptNumber);
          const asked = facts.get(lastError)?.retryAfterMs;
          if (lastError.retryable && asked !== undefined && asked > policy.maxRetryAfterMs) {
            overCap = Math.max(overCap ?? 0, asked);
          }
          throw lastError;
        }
      },
      {
        retries: policy.retries,
        minTimeout: 0, // the wait happens in shouldRetry, where the server's retry-after is known
        shouldRetry: async ({ error, retriesConsumed }) => {
          if (signal?.aborted || !(error instanceof LLMRequestError) || !error.retryable) return false;
          const asked = facts.get(error)?.retryAfterMs;
          const delay =
            asked !== undefined ? Math.min(asked, policy.maxRetryAfterMs) : backoff(retriesConsumed, policy);
          await sleep(delay, signal);
          return true;
        },
        signal,
      },
    );
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (error instanceof LLMRequestError && error === lastError && (attempts > 1 || overCap !== undefined)) {
      const notes: string[] = [];
      if (attempts > 1) notes.push(`gave up after ${attempts} attempts`);
      if (overCap !== undefined) {
        notes.push(
          `the server asked to wait ${Math.round(overCap)} ms before retrying, more than maxRetryAfter (${policy.maxRetryAfterMs} ms), so the client waited at most ${policy.maxRetryAfterMs} ms; raise maxRetryAfter to wait as long as the server asks`,
        );
      }
      throw new LLMRequestError({
        message: `${error.message} (${notes.join('; ')})`,
        status: error.status,
        retryable: error.retryable,
        attempts,
        cause: error.cause,
      });
    }
    throw error;
  }
}
