import type { ServerResponse } from 'node:http';
import { countTokens } from './fake-server';
import { HashEmbedder } from './hash-embedder';

/** One scripted answer of the fake server's `/v1/embeddings` route. */
export interface FakeEmbeddingsReply {
  /** HTTP status; 400 and above sends an OpenAI-style error body. @default 200 */
  status?: number | undefined;
  error?: { message?: string; type?: string; code?: string | null } | undefined;
  headers?: Record<string, string> | undefined;
  /** Wait this long before answering, in ms. @default 0 */
  delayMs?: number | undefined;
  /** Close the connection without answering. */
  destroy?: boolean | undefined;
  /** Send these vectors instead of the deterministic ones (e.g. of a wrong length). */
  vectors?: number[][] | undefined;
  /** Send this raw body instead. */
  body?: string | undefined;
}

/** Options of the embeddings route of `startFakeOpenAI`. */
export interface FakeEmbeddingsOptions {
  /** Length of the vectors when the request names no `dimensions`. @default 64 */
  dimensions?: number | undefined;
  /**
   * Answers per request (0-based index among embeddings requests); undefined (or no script) answers with
   * `HashEmbedder` vectors of the texts, so a test can compare them with `new HashEmbedder(...)`'s.
   */
  script?: ((body: any, index: number) => FakeEmbeddingsReply | undefined) | undefined;
}

function error(
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(
    JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } }),
  );
}

/**
 * Answers one `/v1/embeddings` request as OpenAI does: `input` a string or an array of strings (an empty one
 * is a 400), `dimensions` optional, `encoding_format` `float` or `base64`; `usage` counts about one token per
 * four characters.
 */
export async function answerEmbeddings(
  text: string,
  request: { body: unknown },
  response: ServerResponse,
  wait: (ms: number, response: ServerResponse) => Promise<boolean>,
  options: FakeEmbeddingsOptions,
  index: number,
): Promise<void> {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch (cause) {
    error(
      response,
      400,
      `fake OpenAI server: could not parse the JSON body of the request (${(cause as Error).message})`,
    );
    return;
  }
  request.body = body;
  const reply = options.script?.(body, index) ?? {};
  if (!(await wait(reply.delayMs ?? 0, response))) return;
  if (reply.destroy) {
    response.socket?.destroy();
    return;
  }
  const status = reply.status ?? 200;
  if (status >= 400) {
    response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
    response.end(
      reply.body ??
        JSON.stringify({
          error: {
            message: `fake error ${status}`,
            type: 'server_error',
            param: null,
            code: null,
            ...reply.error,
          },
        }),
    );
    return;
  }
  if (reply.body !== undefined) {
    response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
    response.end(reply.body);
    return;
  }
  const inputs: unknown[] =
    typeof body?.input === 'string' ? [body.input] : Array.isArray(body?.input) ? body.input : [];
  if (inputs.length === 0 || inputs.some((input) => typeof input !== 'string' || input === '')) {
    error(response, 400, "'$.input' is invalid: send a non-empty string or an array of non-empty strings");
    return;
  }
  const dimensions = typeof body.dimensions === 'number' ? body.dimensions : (options.dimensions ?? 64);
  const embedder = new HashEmbedder({ dimensions });
  const vectors = reply.vectors ?? (inputs as string[]).map((input) => embedder.vectorOf(input));
  const base64 = body.encoding_format === 'base64';
  const tokens = countTokens((inputs as string[]).join(''));
  response.writeHead(200, { 'content-type': 'application/json', ...reply.headers });
  response.end(
    JSON.stringify({
      object: 'list',
      model: String(body.model ?? 'fake-embedding-model'),
      data: vectors.map((vector, position) => ({
        object: 'embedding',
        index: position,
        embedding: base64 ? Buffer.from(Float32Array.from(vector).buffer).toString('base64') : vector,
      })),
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    }),
  );
  return;
}
