import {
  APIConnectionError as OpenAIConnectionError,
  APIConnectionTimeoutError as OpenAIConnectionTimeoutError,
  APIError as OpenAIError,
  APIUserAbortError as OpenAIUserAbortError,
} from 'openai';
import { ConfigurationError, missingPeer } from '../schema/errors';

/** The `@anthropic-ai/sdk` module, as `import()` gives it. */
export type AnthropicSDK = typeof import('@anthropic-ai/sdk');

/** How the SDK is imported; tests pass a failing importer to see the message a missing package gives. */
export type AnthropicImporter = () => Promise<AnthropicSDK>;

const importSDK: AnthropicImporter = () => import('@anthropic-ai/sdk');

let loaded: Promise<AnthropicSDK> | undefined;

/**
 * Loads `@anthropic-ai/sdk` with a dynamic `import()` (never at import time: it is an optional peer). A missing
 * package is a {@link ConfigurationError} saying `install @anthropic-ai/sdk to use <feature>`.
 *
 * @param feature the class that needs the SDK, named in the message. @default 'ClaudeAPI'
 * @param importer how to import it. @default `() => import('@anthropic-ai/sdk')`
 */
export function loadAnthropicSDK(
  feature = 'ClaudeAPI',
  importer: AnthropicImporter = importSDK,
): Promise<AnthropicSDK> {
  const shared = importer === importSDK;
  let loading: Promise<AnthropicSDK>;
  if (shared) {
    loaded ??= importer();
    loading = loaded;
  } else loading = importer();
  return loading.catch((error: unknown) => {
    if (shared) loaded = undefined;
    throw missingPeer(['@anthropic-ai/sdk'], feature, error);
  });
}

/**
 * An Anthropic SDK error in the shape the shared retry machinery (`request-retry.ts`) reads: the `openai`
 * SDK's error classes, which it already classifies (429, 408 and 5xx retryable, `retry-after(-ms)` honoured,
 * connection failures and timeouts retryable, other 4xx not). Anthropic's error body `{ type: 'error', error:
 * { type, message } }` carries the server's message. The original error is the `cause`. Anything else is
 * returned as it is.
 */
export function toSharedError(error: unknown, sdk: AnthropicSDK): unknown {
  if (!(error instanceof sdk.APIError)) return error;
  let shared: Error;
  if (error instanceof sdk.APIUserAbortError) shared = new OpenAIUserAbortError({ message: error.message });
  else if (error instanceof sdk.APIConnectionTimeoutError) {
    shared = new OpenAIConnectionTimeoutError({ message: error.message });
  } else if (error instanceof sdk.APIConnectionError) {
    const cause = error.cause instanceof Error ? error.cause : undefined;
    shared = new OpenAIConnectionError({ message: error.message, cause });
  } else if (typeof error.status === 'number' && error.headers !== undefined) {
    shared = OpenAIError.generate(error.status, bodyOf(error), undefined, error.headers);
  } else {
    // An `error` event inside a stream: no status; the body names the error.
    const body = bodyOf(error);
    shared = new OpenAIError(undefined, body.error, undefined, error.headers);
  }
  if (shared.cause === undefined) {
    Object.defineProperty(shared, 'cause', { value: error, configurable: true, writable: true });
  }
  return shared;
}

/** Anthropic's error body, with a message even when the server sent none. */
function bodyOf(error: InstanceType<AnthropicSDK['APIError']>): {
  error: { type?: unknown; message: string };
} {
  const raw = error.error as { error?: { type?: unknown; message?: unknown } } | undefined;
  const inner = raw?.error;
  const message =
    typeof inner?.message === 'string' && inner.message.length > 0
      ? inner.message
      : (error.apiMessage ?? error.message);
  return { error: { type: inner?.type ?? error.type ?? undefined, message } };
}
