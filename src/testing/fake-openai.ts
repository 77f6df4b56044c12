import type { IncomingMessage, ServerResponse } from 'node:http';
import { dataURLType, IMAGE_TYPES, strictSchemaProblem } from './fake-checks';
import { answerEmbeddings, type FakeEmbeddingsOptions } from './fake-embeddings';
import {
  type ResponsesReply,
  responseEvents,
  responseObject,
  responsesMemory,
  responsesPromptTokens,
  responsesRequestProblem,
} from './fake-openai-responses';
import {
  countTokens,
  cutAtStop,
  type LoopbackServer,
  readBody,
  type Script,
  scriptedReply,
  serveOnLoopback,
} from './fake-server';

/** One scripted reply of {@link startFakeOpenAI}. A plain string is `{ content: string }`. */
export interface FakeReply {
  /** The assistant's text (`/chat/completions`) or the completion text (`/completions`). @default '' */
  content?: string | undefined;
  /** HTTP status; 400 and above sends an OpenAI-style error body. @default 200 */
  status?: number | undefined;
  /** The error object of an error reply. @default { message: 'fake error <status>', type: 'server_error' } */
  error?: { message?: string; type?: string; param?: string | null; code?: string | null } | undefined;
  /** Extra response headers, e.g. `{ 'retry-after-ms': '10' }`. */
  headers?: Record<string, string> | undefined;
  /** Wait this long before answering, in ms. @default 0 */
  delayMs?: number | undefined;
  /** Characters per streamed event. @default 4 */
  chunkSize?: number | undefined;
  /** Wait between streamed events, in ms. @default 0 */
  chunkDelayMs?: number | undefined;
  /** Ignore the request's `stop` (by default the reply is cut before the first stop word, as OpenAI does). */
  ignoreStop?: boolean | undefined;
  /** Send this raw body instead of a generated one (non-streaming), e.g. malformed JSON. */
  body?: string | undefined;
  /** Content type of `body`. @default 'application/json' */
  contentType?: string | undefined;
  /** Send these raw SSE `data:` payloads instead of generated ones (streaming), e.g. `['{not json']`. */
  events?: string[] | undefined;
  /** Stream the first events (or send nothing, non-streaming) and then never finish the response. */
  hang?: boolean | undefined;
  /** Close the connection without answering (a connection reset). */
  destroy?: boolean | undefined;
  /**
   * Token counts to report; by default about one token per 4 characters. `cached_tokens` and
   * `reasoning_tokens` go into `prompt_tokens_details` / `completion_tokens_details` (the Responses API's
   * `input_tokens_details` / `output_tokens_details`), `prompt_cache_hit_tokens` is DeepSeek's own count.
   */
  usage?:
    | {
        prompt_tokens: number;
        completion_tokens: number;
        cached_tokens?: number | undefined;
        reasoning_tokens?: number | undefined;
        prompt_cache_hit_tokens?: number | undefined;
      }
    | undefined;
  /**
   * What the model reasoned before answering: chat completions send it as `message.reasoning_content` (streamed
   * as `delta.reasoning_content` pieces before the text, as DeepSeek does; see `reasoningField`); the Responses
   * API as a `reasoning` item with a summary (and encrypted content when the request includes it).
   */
  reasoning?: string | undefined;
  /** The field chat completions carry `reasoning` in: DeepSeek's and xAI's, or Groq's. @default 'reasoning_content' */
  reasoningField?: 'reasoning_content' | 'reasoning' | undefined;
  /** @default 'tool_calls' with `toolCalls`, else 'stop' */
  finishReason?: string | undefined;
  /**
   * Tool calls to answer with (chat endpoint), after `content` if any: `message.tool_calls`, or streamed as
   * OpenAI does (a first delta per call with `index`, `id`, `type` and the name, then the arguments text in
   * `chunkSize` pieces). Object arguments are sent as JSON text, string arguments as they are. ids default to
   * `call_<n>`, numbered across the server's life.
   */
  toolCalls?: FakeToolCall[] | undefined;
  /** Streaming: alternate the deltas of several tool calls by index instead of sending each call whole. */
  interleaveToolCalls?: boolean | undefined;
}

/** One scripted tool call of a {@link FakeReply}. */
export interface FakeToolCall {
  id?: string | undefined;
  name: string;
  arguments: Record<string, unknown> | string;
}

/** A request the fake server received. */
export interface FakeRequest {
  method: string;
  /** The URL path, e.g. `/v1/chat/completions`. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The parsed JSON body (the raw text when it is not JSON). */
  body: any;
  endpoint: 'chat' | 'completions' | 'responses' | 'other';
  stream: boolean;
  /** Set when the client closed the connection before the reply was complete (e.g. an aborted request). */
  aborted?: boolean | undefined;
}

/**
 * What the fake server answers: one reply for every request, a list used in order (a request beyond the
 * list gets a 400 error saying so), or a function of the request and its index (0-based). The index counts
 * the completion requests received since the script was set.
 */
export type FakeScript = Script<FakeRequest, FakeReply>;

/** Options of {@link startFakeOpenAI}. */
export interface FakeOpenAIOptions {
  /** @default the last message's content, echoed back */
  script?: FakeScript | undefined;
  /** @default 0 (any free port) */
  port?: number | undefined;
  /**
   * Largest request body accepted, in bytes; a larger one gets a 413 error as soon as the excess is seen (the
   * body is never buffered whole) and its connection is closed. @default 33554432 (32 MB)
   */
  maxBodyBytes?: number | undefined;
  /**
   * The `/v1/embeddings` route: deterministic `HashEmbedder` vectors, or scripted answers. Its requests are
   * recorded in `requests` too (with `endpoint: 'other'`; tell them by `path`) and leave the chat script's
   * index alone.
   */
  embeddings?: FakeEmbeddingsOptions | undefined;
}

/** A running fake server. */
export interface FakeOpenAIServer {
  /** e.g. `http://127.0.0.1:34567` */
  readonly url: string;
  /** `url + '/v1'`: pass it as `baseURL`. */
  readonly baseURL: string;
  /** Every request received, in order. */
  readonly requests: FakeRequest[];
  /** Replaces the script and restarts its request index at 0 (`requests` keeps every request). */
  setScript(script: FakeScript): void;
  /** Stops the server and drops open connections. */
  close(): Promise<void>;
}

const echo: FakeScript = (request) => {
  const messages = request.body?.messages;
  if (Array.isArray(messages)) return String(messages.at(-1)?.content ?? '');
  const input = request.body?.input;
  if (typeof input === 'string') return input;
  if (Array.isArray(input)) {
    const content = input.at(-1)?.content;
    return typeof content === 'string' ? content : '';
  }
  return String(request.body?.prompt ?? '');
};

/** Message fields chat completions take (DeepSeek's `reasoning_content` included). */
const MESSAGE_FIELDS = new Set([
  'role',
  'content',
  'name',
  'tool_calls',
  'tool_call_id',
  'reasoning_content',
  'refusal',
  'audio',
]);

/** Why OpenAI would refuse this chat request (a 400 `invalid_request_error`), or undefined. */
function chatRequestProblem(body: any): string | undefined {
  const format = body?.response_format;
  if (format?.type === 'json_schema' && format.json_schema?.strict === true) {
    const problem = strictSchemaProblem(format.json_schema.schema);
    if (problem !== undefined) {
      return `Invalid schema for response_format '${format.json_schema.name}': ${problem}`;
    }
  }
  const messages = body?.messages;
  if (!Array.isArray(messages)) return undefined;
  for (const [index, message] of messages.entries()) {
    for (const key of Object.keys(message ?? {})) {
      if (!MESSAGE_FIELDS.has(key)) {
        return `Additional properties are not allowed ('${key}' was unexpected) - 'messages.${index}'`;
      }
    }
    if (!Array.isArray(message?.content)) continue;
    for (const [position, part] of message.content.entries()) {
      const at = `messages[${index}].content[${position}]`;
      if (part?.type === 'image_url') {
        const url = part.image_url?.url;
        const type = dataURLType(url);
        if (!(typeof url === 'string' && /^https?:\/\//.test(url)) && !(type && IMAGE_TYPES.has(type))) {
          return `Invalid '${at}.image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,...'), or an http(s) URL.`;
        }
      } else if (part?.type === 'file') {
        if (dataURLType(part.file?.file_data) === undefined && typeof part.file?.file_id !== 'string') {
          return `Invalid '${at}.file': expected file_data (a base64 data: URL) or file_id.`;
        }
        if (part.file?.file_data !== undefined && typeof part.file?.filename !== 'string') {
          return `Missing required parameter: '${at}.file.filename'.`;
        }
      } else if (part?.type !== 'text') {
        return `Invalid value: '${part?.type}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio' and 'file'.`;
      }
    }
  }
  return undefined;
}

function endpointOf(path: string): FakeRequest['endpoint'] {
  if (path.endsWith('/chat/completions')) return 'chat';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/completions')) return 'completions';
  return 'other';
}

/**
 * OpenAI's streamed tool-call deltas: per call, a first delta with `index`, `id`, `type`, the name and empty
 * arguments, then the arguments text `size` characters at a time; call after call, or alternating by index.
 */
function toolCallDeltas(
  calls: readonly { id: string; function: { name: string; arguments: string } }[],
  size: number,
  interleave: boolean,
): Record<string, unknown>[] {
  const perCall = calls.map((call, index) => {
    const deltas: Record<string, unknown>[] = [
      { index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } },
    ];
    const text = call.function.arguments;
    for (let start = 0; start < text.length; start += size) {
      deltas.push({ index, function: { arguments: text.slice(start, start + size) } });
    }
    return deltas;
  });
  if (!interleave) return perCall.flat();
  const result: Record<string, unknown>[] = [];
  const longest = Math.max(...perCall.map((deltas) => deltas.length));
  for (let step = 0; step < longest; step++) {
    for (const deltas of perCall) {
      const delta = deltas[step];
      if (delta !== undefined) result.push(delta);
    }
  }
  return result;
}

const DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024;

function errorBody(message: string, type: string, code: string | null = null, param: string | null = null) {
  return JSON.stringify({ error: { message, type, param, code } });
}

type ParsedBody = { ok: true; value: unknown } | { ok: false; reason: string };

function parseBody(text: string): ParsedBody {
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return { ok: false, reason: 'the body must be a JSON object' };
    }
    return { ok: true, value };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

/**
 * Starts an OpenAI-compatible server on 127.0.0.1 for integration tests: `/v1/chat/completions`,
 * `/v1/completions` and the Responses API's `/v1/responses`, streaming (SSE) and not, with scriptable replies,
 * reasoning (DeepSeek's `reasoning_content`, Responses reasoning items with encrypted content), cache and
 * reasoning token counts, errors, headers, latency, malformed bodies and dropped connections. Like OpenAI, it
 * refuses (400) a strict `json_schema` that breaks the strict rules, content parts it does not take, message
 * fields it does not know, and on `/responses` a function call sent back without its reasoning item or a
 * reasoning item whose encrypted content it did not issue. `/v1/embeddings` answers with deterministic vectors (see
 * `embeddings`). It records every request (headers and body) for assertions. Like OpenAI, it
 * answers a body that is not a JSON object with a 400 `invalid_request_error`, and one over `maxBodyBytes`
 * with a 413; neither uses up a scripted reply.
 *
 * A sync client (`GPTAPI`) blocks its thread while it waits, so run the server in another process or worker
 * when testing one (`startFakeOpenAIWorker()` does the latter); async clients can share the test's thread. The server
 * registers its port on its thread, so a sync client that times out against it says why.
 *
 * @example
 * const server = await startFakeOpenAI({ script: ['Hello!', { status: 429, headers: { 'retry-after-ms': '5' } }] });
 * const llm = new AsyncGPTAPI({ model: 'any', apiKey: 'sk-test', baseURL: server.baseURL });
 * await llm.chat([{ role: 'user', content: 'hi' }]); // 'Hello!'
 * server.requests[0].body.messages; // [{ role: 'user', content: 'hi' }]
 * await server.close();
 */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAIServer> {
  let script: FakeScript = options.script ?? echo;
  const requests: FakeRequest[] = [];
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!(maxBodyBytes > 0)) throw new RangeError(`maxBodyBytes must be positive, got ${maxBodyBytes}`);
  /** Completion requests since the script was set: the index the script sees. */
  let scriptIndex = 0;
  /** Completion requests ever: numbers the reply ids. */
  let served = 0;
  /** Tool calls ever sent: numbers their default ids. */
  let toolCallCount = 0;
  /** Embeddings requests received: the index their script sees. */
  let embeddingsIndex = 0;
  /** The reasoning items the Responses endpoint issued, and the calls they came with. */
  const memory = responsesMemory();

  const replyFor = (request: FakeRequest, index: number): Promise<FakeReply> =>
    scriptedReply(script, request, index, (length) => ({
      status: 400,
      error: {
        message: `fake OpenAI server: no scripted reply for request #${index + 1} (the script has ${length})`,
        type: 'invalid_request_error',
      },
    }));

  async function handle(
    incoming: IncomingMessage,
    response: ServerResponse,
    { wait }: LoopbackServer,
  ): Promise<void> {
    const text = await readBody(incoming, maxBodyBytes);
    if (text === undefined) {
      if (response.destroyed) return;
      response.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
      response.end(
        errorBody(
          `fake OpenAI server: the request body is larger than ${maxBodyBytes} bytes (maxBodyBytes)`,
          'invalid_request_error',
          'request_too_large',
        ),
      );
      // Stop reading the rest: close the connection once the answer is out.
      if (response.writableFinished) incoming.socket.destroySoon();
      else response.once('finish', () => incoming.socket.destroySoon());
      return;
    }
    const path = (incoming.url ?? '/').split('?')[0] ?? '/';
    const endpoint = endpointOf(path);
    const parsed = endpoint === 'other' ? undefined : parseBody(text);
    const body = parsed?.ok ? (parsed.value as any) : text;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const request: FakeRequest = {
      method: incoming.method ?? 'GET',
      path,
      headers,
      body,
      endpoint,
      stream: body?.stream === true,
    };
    if (parsed !== undefined && !parsed.ok) {
      requests.push(request);
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        errorBody(
          `fake OpenAI server: could not parse the JSON body of the request (${parsed.reason})`,
          'invalid_request_error',
        ),
      );
      return;
    }
    if (request.endpoint === 'other') {
      if (path.endsWith('/embeddings')) {
        requests.push(request);
        await answerEmbeddings(text, request, response, wait, options.embeddings ?? {}, embeddingsIndex++);
        return;
      }
      if (path.endsWith('/models')) {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ object: 'list', data: [{ id: 'fake-model', object: 'model' }] }));
        return;
      }
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({ error: { message: `fake OpenAI server: no route ${path}`, type: 'not_found' } }),
      );
      return;
    }
    const problem =
      request.endpoint === 'chat'
        ? chatRequestProblem(body)
        : request.endpoint === 'responses'
          ? responsesRequestProblem(body, memory)
          : undefined;
    if (problem !== undefined) {
      requests.push(request);
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(errorBody(problem, 'invalid_request_error'));
      return;
    }
    const index = scriptIndex++;
    const number = ++served;
    requests.push(request);
    response.once('close', () => {
      if (!response.writableFinished) request.aborted = true;
    });
    const reply = await replyFor(request, index);
    if (!(await wait(reply.delayMs ?? 0, response))) return;
    if (reply.destroy) {
      incoming.socket.destroy();
      return;
    }
    const status = reply.status ?? 200;
    if (status >= 400) {
      response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
      const error = {
        message: `fake error ${status}`,
        type: 'server_error',
        param: null,
        code: null,
        ...reply.error,
      };
      response.end(reply.body ?? JSON.stringify({ error }));
      return;
    }
    if (reply.body !== undefined) {
      response.writeHead(status, {
        'content-type': reply.contentType ?? 'application/json',
        ...reply.headers,
      });
      response.end(reply.body);
      return;
    }
    if (reply.hang && !request.stream) return; // never answer; close() drops the connection
    const content = reply.ignoreStop
      ? (reply.content ?? '')
      : cutAtStop(reply.content ?? '', body?.stop).text;
    const isChat = request.endpoint === 'chat';
    const toolCalls =
      (isChat || request.endpoint === 'responses') &&
      reply.toolCalls !== undefined &&
      reply.toolCalls.length > 0
        ? reply.toolCalls.map((call) => ({
            id: call.id ?? `call_${++toolCallCount}`,
            type: 'function' as const,
            function: {
              name: call.name,
              arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
            },
          }))
        : undefined;
    const reasoning = reply.reasoning;
    const usage = reply.usage ?? {
      prompt_tokens:
        request.endpoint === 'responses'
          ? responsesPromptTokens(body)
          : countTokens(body?.messages ?? body?.prompt),
      completion_tokens:
        countTokens(content) +
        (toolCalls ? countTokens(toolCalls) : 0) +
        (reasoning ? countTokens(reasoning) : 0),
    };
    const id = `fake-${number}`;
    if (request.endpoint === 'responses') {
      const scripted: ResponsesReply = {
        content,
        reasoning,
        toolCalls: (toolCalls ?? []).map((call) => ({
          id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        })),
        usage,
        chunkSize: reply.chunkSize ?? 4,
        incomplete: reply.finishReason === 'length',
      };
      const responseId = `resp_fake_${number}`;
      if (!request.stream) {
        response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
        response.end(JSON.stringify(responseObject(body, scripted, responseId, memory)));
        return;
      }
      response.writeHead(status, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        ...reply.headers,
      });
      const events =
        reply.events ??
        responseEvents(body, scripted, responseId, memory).map((event) => JSON.stringify(event));
      for (const [position, payload] of events.entries()) {
        if (position > 0 && !(await wait(reply.chunkDelayMs ?? 0, response))) return;
        if (response.destroyed) return;
        const type = (() => {
          try {
            return String(JSON.parse(payload).type);
          } catch {
            return 'message';
          }
        })();
        response.write(`event: ${type}\ndata: ${payload}\n\n`);
      }
      if (!reply.hang) response.end();
      return;
    }
    const fullUsage: Record<string, unknown> = {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
    };
    if (usage.cached_tokens !== undefined)
      fullUsage.prompt_tokens_details = { cached_tokens: usage.cached_tokens };
    if (usage.reasoning_tokens !== undefined) {
      fullUsage.completion_tokens_details = { reasoning_tokens: usage.reasoning_tokens };
    }
    if (usage.prompt_cache_hit_tokens !== undefined) {
      fullUsage.prompt_cache_hit_tokens = usage.prompt_cache_hit_tokens;
      fullUsage.prompt_cache_miss_tokens = usage.prompt_tokens - usage.prompt_cache_hit_tokens;
    }
    const reasoningField = reply.reasoningField ?? 'reasoning_content';
    const model = String(body?.model ?? 'fake-model');
    const created = Math.floor(Date.now() / 1000);
    const finishReason = reply.finishReason ?? (toolCalls ? 'tool_calls' : 'stop');

    if (!request.stream) {
      const message: Record<string, unknown> = toolCalls
        ? { role: 'assistant', content: content === '' ? null : content, tool_calls: toolCalls }
        : { role: 'assistant', content };
      if (reasoning !== undefined && isChat) message[reasoningField] = reasoning;
      const choice = isChat
        ? { index: 0, message, finish_reason: finishReason, logprobs: null }
        : { index: 0, text: content, finish_reason: finishReason, logprobs: null };
      response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
      response.end(
        JSON.stringify({
          id,
          object: isChat ? 'chat.completion' : 'text_completion',
          created,
          model,
          choices: [choice],
          usage: fullUsage,
        }),
      );
      return;
    }

    response.writeHead(status, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...reply.headers,
    });
    const object = isChat ? 'chat.completion.chunk' : 'text_completion';
    const event = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      JSON.stringify({ id, object, created, model, choices, ...extra });
    const payloads: string[] = [];
    if (reply.events !== undefined) payloads.push(...reply.events);
    else {
      if (isChat)
        payloads.push(event([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
      const size = Math.max(1, reply.chunkSize ?? 4);
      if (isChat && reasoning !== undefined) {
        for (let start = 0; start < reasoning.length; start += size) {
          const piece = reasoning.slice(start, start + size);
          payloads.push(
            event([{ index: 0, delta: { content: null, [reasoningField]: piece }, finish_reason: null }]),
          );
        }
      }
      for (let start = 0; start < content.length; start += size) {
        const piece = content.slice(start, start + size);
        payloads.push(
          event([
            isChat
              ? { index: 0, delta: { content: piece }, finish_reason: null }
              : { index: 0, text: piece, finish_reason: null },
          ]),
        );
      }
      if (toolCalls) {
        for (const delta of toolCallDeltas(toolCalls, size, reply.interleaveToolCalls === true)) {
          payloads.push(event([{ index: 0, delta: { tool_calls: [delta] }, finish_reason: null }]));
        }
      }
      payloads.push(
        event([
          isChat
            ? { index: 0, delta: {}, finish_reason: finishReason }
            : { index: 0, text: '', finish_reason: finishReason },
        ]),
      );
      if (body?.stream_options?.include_usage === true) payloads.push(event([], { usage: fullUsage }));
    }
    for (const [position, payload] of payloads.entries()) {
      if (position > 0 && !(await wait(reply.chunkDelayMs ?? 0, response))) return;
      if (response.destroyed) return;
      response.write(`data: ${payload}\n\n`);
    }
    if (reply.hang) return;
    if (reply.events === undefined) response.write('data: [DONE]\n\n');
    response.end();
  }

  const server = await serveOnLoopback(handle, options.port, 'startFakeOpenAI()', (error) =>
    JSON.stringify({ error: { message: `fake OpenAI server failed: ${String(error)}` } }),
  );
  return {
    url: server.url,
    baseURL: `${server.url}/v1`,
    requests,
    setScript(next: FakeScript) {
      script = next;
      scriptIndex = 0;
    },
    close: server.close,
  };
}
