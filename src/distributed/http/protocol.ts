import { AgentMessage } from '../../schema/agent-message';
import { ValidationError } from '../../schema/errors';
import type { SessionId } from '../../schema/session';
import { isPlainObject } from '../../utils/is';
import { type CallerOptions, camelKey } from '../caller-options';

/**
 * Lagent's HTTP protocol, the parts both ends share: snake_case on the wire, `message` a list of strings
 * and `AgentMessage.model_dump()`s, `session_id`, and every other key a keyword argument of the call, of
 * which the server takes only what its {@link CallerOptions} allow.
 */

/** Body keys that are not keyword arguments of the call. */
const RESERVED = new Set(['message', 'session_id']);
/**
 * Call options that never cross the wire: they belong to the calling process (a signal, a deadline, the
 * store of its durable calls).
 */
const LOCAL_OPTIONS = new Set(['sessionId', 'signal', 'timeout', 'idleTimeout', 'durable']);

/**
 * The longest session id, in characters, that both `POST /chat_completion` and `GET /memory/{session_id}`
 * accept: one limit, so every session a call can make can also be read back.
 */
export const MAX_SESSION_ID_LENGTH = 1_024;

/** `maxNewTokens` -> `max_new_tokens`. */
export function snakeKey(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

export { camelKey };

/**
 * What the server makes of a request body: the messages, the session, the call's options (what the server's
 * {@link CallerOptions} took) and the keys it ignored, as they were sent.
 */
export interface ChatRequest {
  messages: AgentMessage[];
  sessionId: SessionId;
  options: Record<string, unknown>;
  ignored: string[];
}

/**
 * Reads a `/chat_completion` body. `message` is a list of strings and message dumps (a single string or
 * dump is taken as a list of one); `session_id` a string or an integer (default 0); the other keys go through
 * `callers` (snake_case or camelCase). Throws a {@link ValidationError} naming the field when the body does not
 * fit (answered 400, or 422 for a value the server's policy refuses: see `isUnprocessable`).
 */
export function readChatRequest(body: unknown, callers: CallerOptions): ChatRequest {
  if (!isPlainObject(body)) {
    throw new ValidationError({ field: '(root)', message: 'the body must be a JSON object' });
  }
  if (!Object.hasOwn(body, 'message') || body.message === undefined || body.message === null) {
    throw new ValidationError({ field: 'message', message: '"message" is required' });
  }
  const raw = Array.isArray(body.message) ? body.message : [body.message];
  const messages = raw.map((item: unknown, index: number) => {
    if (typeof item === 'string') return new AgentMessage({ content: item });
    try {
      return AgentMessage.from(item);
    } catch (error) {
      const field = error instanceof ValidationError ? error.field : '(root)';
      throw new ValidationError({
        field: `message.${index}.${field}`,
        message: `"message"[${index}] is not a message: ${(error as Error).message}`,
        cause: error,
      });
    }
  });
  const sessionId = body.session_id ?? 0;
  if (!(typeof sessionId === 'string' || (typeof sessionId === 'number' && Number.isFinite(sessionId)))) {
    throw new ValidationError({ field: 'session_id', message: '"session_id" must be a string or a number' });
  }
  checkSessionId(sessionId);
  const kwargs: Record<string, unknown> = {};
  for (const key of Object.keys(body)) {
    if (!RESERVED.has(key)) Object.defineProperty(kwargs, key, { value: body[key], enumerable: true });
  }
  const { options, ignored } = callers.read(kwargs);
  return { messages, sessionId, options, ignored };
}

/** Throws a {@link ValidationError} for a session id longer than {@link MAX_SESSION_ID_LENGTH}. */
export function checkSessionId(sessionId: SessionId): void {
  if (typeof sessionId === 'string' && sessionId.length > MAX_SESSION_ID_LENGTH) {
    throw new ValidationError({
      field: 'session_id',
      message: `"session_id" is ${sessionId.length} characters long; the limit is ${MAX_SESSION_ID_LENGTH}`,
    });
  }
}

/**
 * The request body a client sends: Lagent's shape, call options in snake_case. A client called inside an
 * agent call (`insideCall`) leaves out `callId`: the options it was handed are the enclosing call's, and that
 * id names the enclosing call, not this remote one.
 */
export function chatRequestBody(
  messages: readonly unknown[],
  sessionId: SessionId,
  options: Readonly<Record<string, unknown>>,
  insideCall = false,
): Record<string, unknown> {
  const body: Record<string, unknown> = { message: messages, session_id: sessionId };
  for (const key of Object.keys(options)) {
    if (LOCAL_OPTIONS.has(key) || options[key] === undefined) continue;
    if (insideCall && key === 'callId') continue;
    const name = snakeKey(key);
    if (RESERVED.has(name)) continue;
    body[name] = options[key];
  }
  return body;
}

/** A message in its wire form, `AgentMessage.model_dump()`'s shape. */
export function messageToWire(message: unknown): unknown {
  if (typeof message === 'string') return message;
  if (message instanceof AgentMessage) return message.toJSON({ format: 'lagent' });
  return AgentMessage.from(message).toJSON({ format: 'lagent' });
}

/** Server-sent event names of `/chat_completion/stream`. */
export const SSE_EVENTS = {
  /** A streamed chunk (a message with `stream_state` 1) whose `content` is the whole text so far. */
  chunk: 'chunk',
  /**
   * A streamed chunk whose `content` is only the text added since the previous chunk or delta: the reader
   * appends it to that chunk's content. Its other fields are the chunk's own.
   */
  delta: 'delta',
  /** The final message, sent once, last. */
  message: 'message',
  /** The call failed after the stream began: `{ detail, error }`; nothing follows. */
  error: 'error',
} as const;
