import http from 'node:http';
import https from 'node:https';
import { Deadline } from '../../core/deadline';
import { sleep } from '../../utils/timers';
import { HTTPAgentError } from './errors';

/** One HTTP exchange's answer, read whole. */
export interface HTTPAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** How the client reaches its server: a keep-alive pool, deadlines, retries. */
export interface Transport {
  readonly base: URL;
  readonly agent: http.Agent;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeout: number;
  readonly retries: number;
  readonly retryDelay: number;
  /** Largest response body read whole, and largest stream event, in bytes. */
  readonly maxResponseBytes: number;
}

/** Socket errors on which a request never reached the server's agent, so sending it again is safe. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
/** Socket errors that, on a reused keep-alive socket and before any answer, mean the server had closed it. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);
/** Methods whose request may be sent twice without doing twice what it asks. */
const IDEMPOTENT = new Set(['GET', 'HEAD']);

class RetryableError extends Error {}

/**
 * Opens one request and resolves with the response (status and headers; the body still to read), or rejects
 * with a {@link RetryableError} when the request cannot have reached the server, an {@link HTTPAgentError}
 * for other connection failures, or the signal's reason.
 */
function open(
  transport: Transport,
  method: 'GET' | 'POST',
  path: string,
  body: string | undefined,
  signal: AbortSignal,
): Promise<{ response: http.IncomingMessage; request: http.ClientRequest }> {
  const url = new URL(path, transport.base);
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const headers: Record<string, string | number> = { ...transport.headers };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const module = url.protocol === 'https:' ? https : http;
    const request = module.request(url, { method, headers, agent: transport.agent });
    // The socket's byte count when this request got it: more at a failure means some of it went out.
    let before: number | undefined;
    request.once('socket', (socket) => {
      before = socket.bytesWritten;
    });
    let settled = false;
    const onAbort = () => {
      request.destroy();
      if (!settled) {
        settled = true;
        reject(signal.reason);
      }
    };
    signal.addEventListener('abort', onAbort, { once: true });
    request.on('response', (response) => {
      if (settled) return;
      settled = true;
      resolve({ response, request });
      // The caller reads the body; the abort listener stays until the exchange ends.
      const release = () => signal.removeEventListener('abort', onAbort);
      response.once('close', release);
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      signal.removeEventListener('abort', onAbort);
      if (settled) return;
      settled = true;
      const code = error.code ?? '';
      // A reused keep-alive socket the server had closed fails the same way as one the server cut after it
      // read the request: a request whose bytes went out may have been received, so only a request that is
      // safe to repeat, or one that never left, is sent again.
      const written = before === undefined || (request.socket?.bytesWritten ?? before) > before;
      const stale = request.reusedSocket && STALE_SOCKET.has(code);
      if (NEVER_SENT.has(code) || (stale && (IDEMPOTENT.has(method) || !written))) {
        reject(Object.assign(new RetryableError(error.message), { cause: error }));
        return;
      }
      const reason = stale
        ? `the connection was cut after the request was sent (${error.message}); the server may have received it, so it was not sent again`
        : error.message;
      reject(
        new HTTPAgentError({
          message: `${method} ${url.href} failed: ${reason}`,
          url: url.href,
          cause: error,
        }),
      );
    });
    request.end(body);
  });
}

/**
 * Sends one request with retries on connection failures that cannot have reached the agent (refused, or a
 * keep-alive socket the server had closed), waiting `retryDelay * 2^n` between attempts. `timeout` bounds the
 * whole exchange, retries included. `read` consumes the response.
 */
export async function exchange<T>(
  transport: Transport,
  method: 'GET' | 'POST',
  path: string,
  body: string | undefined,
  signal: AbortSignal | undefined,
  read: (response: http.IncomingMessage, signal: AbortSignal) => Promise<T>,
  timeout: number = transport.timeout,
): Promise<T> {
  const what = `${method} ${new URL(path, transport.base).href}`;
  const deadline = new Deadline(signal, timeout, what);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        const { response } = await open(transport, method, path, body, deadline.signal);
        if (response.statusCode === 503 && attempt < transport.retries) {
          // 503: the server did not start on the request (it is closing, or overloaded): safe to send again.
          response.resume();
          await sleep(transport.retryDelay * 2 ** attempt, deadline.signal);
          continue;
        }
        return await read(response, deadline.signal);
      } catch (error) {
        if (!(error instanceof RetryableError)) throw error;
        if (attempt >= transport.retries) {
          throw new HTTPAgentError({
            message: `${what} failed after ${attempt + 1} attempt(s): ${error.message}`,
            url: new URL(path, transport.base).href,
            cause: error.cause,
          });
        }
        await sleep(transport.retryDelay * 2 ** attempt, deadline.signal);
      }
    }
  } finally {
    deadline.dispose();
  }
}

/**
 * Reads a whole response body as text, at most `maxBytes` of it. A longer body (announced or sent), a connection
 * cut mid-body or a body that cannot be a string is an {@link HTTPAgentError}; the signal's abort rejects
 * with its reason.
 */
export function readText(
  response: http.IncomingMessage,
  signal: AbortSignal,
  maxBytes: number,
  url: string,
): Promise<string> {
  const tooLarge = () =>
    new HTTPAgentError({
      message: `the answer is larger than maxResponseBytes (${maxBytes} bytes)`,
      status: response.statusCode,
      url,
    });
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      reject(error);
      response.destroy();
    };
    const announced = Number(response.headers['content-length']);
    if (Number.isFinite(announced) && announced > maxBytes) {
      fail(tooLarge());
      return;
    }
    const parts: Buffer[] = [];
    let size = 0;
    response.on('data', (part: Buffer) => {
      size += part.length;
      if (size > maxBytes) fail(tooLarge());
      else parts.push(part);
    });
    response.once('end', () => {
      if (settled) return;
      try {
        const text = Buffer.concat(parts, size).toString('utf8');
        settled = true;
        resolve(text);
      } catch (error) {
        fail(
          new HTTPAgentError({
            message: `the answer cannot be read: ${(error as Error).message}`,
            url,
            cause: error,
          }),
        );
      }
    });
    response.once('close', () => {
      if (signal.aborted) fail(signal.reason);
      else if (!response.complete) {
        fail(
          new HTTPAgentError({
            message: 'the server closed the connection before the answer was complete',
            url,
          }),
        );
      }
    });
    response.once('error', (error) => {
      fail(
        signal.aborted
          ? signal.reason
          : new HTTPAgentError({ message: `the answer broke off: ${error.message}`, url, cause: error }),
      );
    });
  });
}

/** Parses an answer's JSON, turning an error status into an {@link HTTPAgentError} that carries the server's body. */
export function parseAnswer(answer: HTTPAnswer, url: string): unknown {
  let json: unknown;
  try {
    json = answer.text.length === 0 ? undefined : JSON.parse(answer.text);
  } catch {
    json = undefined;
  }
  if (answer.status < 200 || answer.status >= 300) {
    const detail =
      json !== null && typeof json === 'object' && typeof (json as { detail?: unknown }).detail === 'string'
        ? (json as { detail: string }).detail
        : answer.text.slice(0, 200);
    throw new HTTPAgentError({
      message: `${url} answered ${answer.status}: ${detail}`,
      status: answer.status,
      body: json ?? answer.text,
      url,
    });
  }
  if (json === undefined) {
    throw new HTTPAgentError({
      message: `${url} answered ${answer.status} without a JSON body`,
      status: answer.status,
      url,
    });
  }
  return json;
}
