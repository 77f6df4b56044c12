import http from 'node:http';
import https from 'node:https';
import { APIConnectionError, APIError } from 'openai';

function toHeaders(raw: http.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else headers.append(name, value);
  }
  return headers;
}

/**
 * POSTs a JSON body and resolves to the parsed JSON reply (the text when it is not JSON), with `node:http`
 * over Node's keep-alive global agents. Under load this costs the calling thread less than `fetch` with an
 * `AbortSignal` (undici registers each signal with a `FinalizationRegistry`) and much less than the SDK.
 * Failures take the `openai` SDK's classes, so retries and messages match the streaming path: an HTTP error is
 * an `APIError` (with `status`, `headers`, `code`), a failure before the reply an `APIConnectionError`, a
 * connection lost mid-reply the socket's error; an abort of `signal` rejects with its reason and closes the
 * connection.
 */
export function postJSON(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: string,
  signal: AbortSignal,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      outcome();
    };
    const onAbort = () => {
      settle(() => reject(signal.reason));
      request.destroy();
    };
    const transport = url.protocol === 'https:' ? https : http;
    const requestHeaders: Record<string, string | number> = Object.assign({}, headers);
    requestHeaders['content-length'] = Buffer.byteLength(body);
    const request = transport.request(url, { method: 'POST', headers: requestHeaders }, (response) => {
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('error', (error) => settle(() => reject(error)));
      response.on('end', () => {
        if (!response.complete) return; // the 'error' / 'close' of a cut connection says why
        const text = Buffer.concat(parts).toString('utf8');
        const status = response.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          let json: object | undefined;
          try {
            json = JSON.parse(text) as object;
          } catch {
            json = undefined;
          }
          const error = APIError.generate(
            status,
            json,
            json === undefined ? text : undefined,
            toHeaders(response.headers),
          );
          settle(() => reject(error));
          return;
        }
        if (!(response.headers['content-type'] ?? '').includes('json')) {
          settle(() => resolve(text));
          return;
        }
        try {
          const value: unknown = JSON.parse(text);
          settle(() => resolve(value));
        } catch (error) {
          settle(() => reject(error));
        }
      });
      response.on('close', () => {
        if (!response.complete) {
          const error = Object.assign(new Error('the connection closed before the reply was complete'), {
            code: 'ECONNRESET',
          });
          settle(() => reject(error));
        }
      });
    });
    request.on('error', (error) => {
      settle(() => reject(new APIConnectionError({ cause: error })));
    });
    signal.addEventListener('abort', onAbort, { once: true });
    request.end(body);
  });
}
