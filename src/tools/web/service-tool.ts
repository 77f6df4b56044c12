import type { ActionReturn } from '../../schema/action-return';
import { HttpClient, HttpFailure, type HttpFailureKind } from './http';

/** Options every search-service tool takes (GoogleSearch, GoogleScholar, BINGMap). */
export interface ServiceToolOptions {
  /** The service's API key; defaults to the tool's usual environment variable. */
  apiKey?: string | undefined;
  /** The service's API root, e.g. for a self-hosted mirror or a test double. */
  baseURL?: string | undefined;
  /** Milliseconds one attempt may take. @default 20000 */
  timeout?: number | undefined;
  /** Retries of 429, 5xx and broken connections, after the first attempt. @default 2 */
  retries?: number | undefined;
  /** @default the tool's Lagent name */
  name?: string | undefined;
  /** @default a sentence saying what the tool does */
  description?: string | undefined;
}

/** What a service tool's constructor decides from its options. */
export interface ServiceSetup {
  service: string;
  defaultBaseURL: string;
  environmentVariable: string;
}

const DEFAULT_TIMEOUT = 20_000;
const DEFAULT_RETRIES = 2;
/** The longest `Retry-After` the shared client waits for (its default). */
const LONGEST_RETRY_AFTER = 10_000;

/** The shared HTTP client of a service tool, with the key taken from the environment when none is given. */
export function serviceClient(options: ServiceToolOptions, setup: ServiceSetup): HttpClient {
  return new HttpClient({
    service: options.name ?? setup.service,
    baseURL: options.baseURL ?? setup.defaultBaseURL,
    apiKey: options.apiKey ?? process.env[setup.environmentVariable],
    requireKey: true,
    keyHint: `set ${setup.environmentVariable} or pass apiKey`,
    timeout: options.timeout ?? DEFAULT_TIMEOUT,
    retries: options.retries ?? DEFAULT_RETRIES,
  });
}

/**
 * The options a sync twin sends to its async class: the key is resolved here, because the bridge's
 * worker thread does not see environment changes made after it started.
 */
export function bridgedOptions(
  options: ServiceToolOptions,
  environmentVariable: string,
): Record<string, unknown> {
  const apiKey = options.apiKey ?? process.env[environmentVariable];
  return { ...options, ...(apiKey === undefined ? {} : { apiKey }) };
}

/**
 * How long a sync twin's call may block: every attempt at its timeout, the longest waits between them, and a
 * margin; `requests` for APIs that make several requests in a row.
 */
export function bridgedCallTimeout(options: ServiceToolOptions, requests = 1): number {
  const retries = options.retries ?? DEFAULT_RETRIES;
  const perRequest = (options.timeout ?? DEFAULT_TIMEOUT) * (retries + 1) + LONGEST_RETRY_AFTER * retries;
  return perRequest * requests + 5_000;
}

/** A failure that is the service's answer rather than the exchange: `API_ERROR` with the sentence. */
export function answerFailure(
  kind: Extract<HttpFailureKind, 'malformed' | 'service-error'>,
  message: string,
): ActionReturn {
  return new HttpFailure({ kind, message }).toActionReturn();
}

/** `value` when it is a string, else `undefined`. */
export function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** `value` when it is an array, else an empty one. */
export function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
