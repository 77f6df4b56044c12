import type { IncomingMessage, ServerResponse } from 'node:http';
import { fakeSignature, IMAGE_TYPES, strictSchemaProblem } from './fake-checks';
import type { FakeToolCall } from './fake-openai';
import {
  countTokens,
  cutAtStop,
  type LoopbackServer,
  readBody,
  type Script,
  scriptedReply,
  serveOnLoopback,
} from './fake-server';

/** One scripted reply of {@link startFakeAnthropic}. A plain string is `{ content: string }`. */
export interface FakeAnthropicReply {
  /** The assistant's text (a `text` block; none when empty). @default '' */
  content?: string | undefined;
  /** HTTP status; 400 and above sends an Anthropic error body. @default 200 */
  status?: number | undefined;
  /**
   * The `error` object of an error reply.
   * @default { type: <the status's Anthropic type, e.g. 'rate_limit_error'>, message: 'fake error <status>' }
   */
  error?: { type?: string | undefined; message?: string | undefined } | undefined;
  /** Extra response headers, e.g. `{ 'retry-after': '0' }`. */
  headers?: Record<string, string> | undefined;
  /** Wait this long before answering, in ms. @default 0 */
  delayMs?: number | undefined;
  /** Characters per streamed `text_delta` and per `input_json_delta`. @default 4 */
  chunkSize?: number | undefined;
  /** Wait between streamed events, in ms. @default 0 */
  chunkDelayMs?: number | undefined;
  /** Ignore the request's `stop_sequences` (by default the text is cut before the first one, as Anthropic does). */
  ignoreStop?: boolean | undefined;
  /** Send this raw body instead of a generated one (non-streaming), e.g. malformed JSON. */
  body?: string | undefined;
  /** Send these raw SSE events instead of generated ones (streaming); `data` objects are sent as JSON. */
  events?: { event: string; data: unknown }[] | undefined;
  /** Stream the first events (or send nothing, non-streaming) and then never finish the response. */
  hang?: boolean | undefined;
  /** Close the connection without answering (a connection reset). */
  destroy?: boolean | undefined;
  /**
   * Token counts to report; by default about one token per 4 characters, and, for a request with `cache_control`
   * marks, the cache reads and writes the server's prompt cache makes (see {@link startFakeAnthropic}).
   */
  usage?:
    | {
        input_tokens: number;
        output_tokens: number;
        cache_read_input_tokens?: number | undefined;
        cache_creation_input_tokens?: number | undefined;
      }
    | undefined;
  /**
   * What the model thought, sent as a `thinking` block (with a signature the server checks when the block comes
   * back) before the text, streamed as `thinking_delta` and `signature_delta` events. Only when the request
   * turns thinking on (`thinking: { type: 'enabled' }`), as with the real API.
   */
  thinking?: string | undefined;
  /** Encrypted thinking: a `redacted_thinking` block with this data (thinking requests only). */
  redactedThinking?: string | undefined;
  /** @default 'tool_use' with `toolCalls`, 'stop_sequence' when cut at a stop sequence, else 'end_turn' */
  stopReason?: string | undefined;
  /**
   * Tool calls to answer with: `tool_use` blocks after the text, streamed as Anthropic does (a
   * `content_block_start` with the id, name and `input: {}`, then the input JSON in `chunkSize` pieces of
   * `input_json_delta`). String arguments are sent as that JSON text (streaming) or parsed (non-streaming).
   * ids default to `toolu_<n>`, numbered across the server's life.
   */
  toolCalls?: FakeToolCall[] | undefined;
}

/** A request the fake server received. */
export interface FakeAnthropicRequest {
  method: string;
  /** The URL path, e.g. `/v1/messages`. */
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The parsed JSON body (the raw text when it is not JSON). */
  body: any;
  stream: boolean;
  /** Set when the client closed the connection before the reply was complete (e.g. an aborted request). */
  aborted?: boolean | undefined;
}

/**
 * What the fake server answers: one reply for every request, a list used in order (a request beyond the list
 * gets a 400 error saying so), or a function of the request and its index (0-based, counting the message
 * requests since the script was set).
 */
export type FakeAnthropicScript = Script<FakeAnthropicRequest, FakeAnthropicReply>;

/** Options of {@link startFakeAnthropic}. */
export interface FakeAnthropicOptions {
  /** @default the text of the last message, echoed back */
  script?: FakeAnthropicScript | undefined;
  /** @default 0 (any free port) */
  port?: number | undefined;
  /**
   * The shortest prompt prefix the prompt cache keeps, in (estimated) tokens, as Anthropic's minimum for Sonnet
   * and Opus models. @default 1024
   */
  minCacheTokens?: number | undefined;
}

/** A running fake Anthropic server. */
export interface FakeAnthropicServer {
  /** e.g. `http://127.0.0.1:34567`: pass it as `baseURL` (the SDK adds `/v1/messages`). */
  readonly url: string;
  /** The same as `url`, the base URL Anthropic's SDK takes. */
  readonly baseURL: string;
  /** Every request received, in order. */
  readonly requests: FakeAnthropicRequest[];
  /** Replaces the script and restarts its request index at 0 (`requests` keeps every request). */
  setScript(script: FakeAnthropicScript): void;
  /** Stops the server and drops open connections. */
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: { type?: unknown; text?: unknown; content?: unknown }) =>
      block?.type === 'text'
        ? String(block.text ?? '')
        : block?.type === 'tool_result'
          ? textOf(block.content)
          : '',
    )
    .join('');
}

function isRecord(value: unknown): value is Record<string, any> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const BLOCK_TYPES = new Set([
  'text',
  'image',
  'document',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
]);

/** Why Anthropic would refuse this request (a 400 `invalid_request_error`), or undefined. */
function requestProblem(body: any, redacted: ReadonlySet<string>): string | undefined {
  const thinking = body?.thinking;
  const thinkingOn = thinking?.type === 'enabled';
  if (thinkingOn) {
    if (!(thinking.budget_tokens >= 1024))
      return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (!(body.max_tokens > thinking.budget_tokens)) {
      return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
    }
    if (body.temperature !== undefined && body.temperature !== 1) {
      return '`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility';
    }
    if (body.top_k !== undefined) return '`top_k` is not supported when thinking is enabled.';
  }
  const format = body?.output_config?.format;
  if (format !== undefined) {
    if (format.type !== 'json_schema') return `output_config.format.type: Input should be 'json_schema'`;
    const problem = strictSchemaProblem(format.schema, [], false);
    if (problem !== undefined) return `output_config.format.schema: ${problem}`;
  }
  let marks = 0;
  const count = (value: unknown) => {
    if (isRecord(value) && value.cache_control !== undefined) marks++;
  };
  for (const tool of Array.isArray(body?.tools) ? body.tools : []) count(tool);
  if (Array.isArray(body?.system)) for (const block of body.system) count(block);
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  for (const [index, message] of messages.entries()) {
    for (const key of Object.keys(message ?? {})) {
      if (key !== 'role' && key !== 'content')
        return `messages.${index}.${key}: Extra inputs are not permitted`;
    }
    if (!Array.isArray(message.content)) continue;
    for (const [position, block] of message.content.entries()) {
      const at = `messages.${index}.content.${position}`;
      count(block);
      if (!BLOCK_TYPES.has(block?.type))
        return `${at}.type: Input tag '${block?.type}' found using 'type' does not match any of the expected tags`;
      if (block.type === 'thinking') {
        if (block.signature !== fakeSignature('thinking', String(block.thinking ?? ''))) {
          return `${at}: Invalid \`signature\` in \`thinking\` block`;
        }
        if (block.cache_control !== undefined)
          return `${at}.thinking.cache_control: Extra inputs are not permitted`;
      }
      if (block.type === 'redacted_thinking' && !redacted.has(block.data)) {
        return `${at}: Invalid \`data\` in \`redacted_thinking\` block`;
      }
      if (
        block.type === 'image' &&
        block.source?.type === 'base64' &&
        !IMAGE_TYPES.has(block.source.media_type)
      ) {
        return `${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
      }
      if (block.type === 'document') {
        const source = block.source;
        if (source?.type === 'base64' && source.media_type !== 'application/pdf') {
          return `${at}.document.source.base64.media_type: Input should be 'application/pdf'`;
        }
        if (source?.type === 'text' && source.media_type !== 'text/plain') {
          return `${at}.document.source.text.media_type: Input should be 'text/plain'`;
        }
      }
    }
  }
  if (marks > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${marks}.`;
  // With thinking on, the assistant turn that called the tools being answered must start with its thinking.
  const last = messages.at(-1);
  const previous = messages.at(-2);
  if (
    thinkingOn &&
    last?.role === 'user' &&
    Array.isArray(last.content) &&
    last.content.some((block: any) => block?.type === 'tool_result') &&
    previous?.role === 'assistant'
  ) {
    const first = Array.isArray(previous.content) ? previous.content[0] : { type: 'text' };
    if (first?.type !== 'thinking' && first?.type !== 'redacted_thinking') {
      return `messages.${messages.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
    }
  }
  return undefined;
}

/** A value with its `cache_control` marks taken out (the cache keys on content, not on where marks are). */
function unmarked(value: unknown): unknown {
  if (!isRecord(value) || value.cache_control === undefined) return value;
  const { cache_control: _mark, ...rest } = value;
  return rest;
}

/**
 * The prompt cache's view of a request: its content as one sequence (tools, system blocks, message blocks), the
 * prefix ending at each block (`marked` when the block carries `cache_control`), and the whole prompt's tokens.
 */
function cachePrefixes(body: any): {
  prefixes: { key: string; tokens: number; marked: boolean }[];
  total: number;
} {
  const sequence: unknown[] = [String(body?.model ?? '')];
  const prefixes: { key: string; tokens: number; marked: boolean }[] = [];
  const add = (value: unknown) => {
    sequence.push(unmarked(value));
    const key = JSON.stringify(sequence);
    prefixes.push({
      key,
      tokens: countTokens(key),
      marked: isRecord(value) && value.cache_control !== undefined,
    });
  };
  for (const tool of Array.isArray(body?.tools) ? body.tools : []) add(tool);
  if (Array.isArray(body?.system)) for (const block of body.system) add(block);
  else if (typeof body?.system === 'string') add({ type: 'text', text: body.system });
  for (const message of Array.isArray(body?.messages) ? body.messages : []) {
    sequence.push(message.role);
    if (typeof message.content === 'string') add({ type: 'text', text: message.content });
    else for (const block of message.content ?? []) add(block);
  }
  return { prefixes, total: countTokens(JSON.stringify(sequence)) };
}

/** How many blocks before a breakpoint Anthropic looks back for a cached prefix. */
const LOOKBACK = 20;

const echo: FakeAnthropicScript = (request) => {
  const messages = request.body?.messages;
  return Array.isArray(messages) ? textOf(messages.at(-1)?.content) : '';
};

function errorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message } });
}

function parseInput(value: Record<string, unknown> | string): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

/**
 * Starts a server on 127.0.0.1 that speaks Anthropic's Messages API for integration tests: `POST
 * /v1/messages`, plain and streaming (SSE with Anthropic's event names: `message_start`,
 * `content_block_start` / `_delta` / `_stop` with `text_delta` and `input_json_delta`, `message_delta` with the
 * stop reason and usage, `message_stop`), with scriptable text and tool calls, errors (status and Anthropic's
 * error body), headers, latency, raw events and dropped connections. It records every request (headers and
 * body), so tests can check the `system` field, the tools and the `tool_result` blocks sent.
 *
 * Like the real API it speaks extended thinking (`thinking` blocks with signatures, `redacted_thinking`, only
 * when the request turns thinking on), keeps a prompt cache (a request's `cache_control` marks: the longest
 * marked prefix seen before is read, a new one of at least `minCacheTokens` written; usage reports both), and
 * refuses (400) what Anthropic refuses: a thinking block whose signature it did not issue, a tool loop whose
 * assistant turn does not start with its thinking while thinking is on, sampling params thinking does not allow,
 * more than 4 cache marks, an `output_config.format` schema with an open object, image and document types it
 * does not take, and message fields it does not know.
 *
 * A sync client (`ClaudeAPI`) blocks its thread while it waits: test one against `startFakeAnthropicWorker()`.
 *
 * @example
 * const server = await startFakeAnthropic({ script: ['Hello!', { status: 429, headers: { 'retry-after': '0' } }] });
 * const llm = new AsyncClaudeAPI({ apiKey: 'sk-test', baseURL: server.baseURL });
 * await llm.chat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }]); // 'Hello!'
 * server.requests[0].body.system; // 'Be brief.'
 * await server.close();
 */
export async function startFakeAnthropic(options: FakeAnthropicOptions = {}): Promise<FakeAnthropicServer> {
  let script: FakeAnthropicScript = options.script ?? echo;
  const requests: FakeAnthropicRequest[] = [];
  let scriptIndex = 0;
  let served = 0;
  let toolCallCount = 0;
  const minCacheTokens = options.minCacheTokens ?? 1024;
  /** The prompt cache: prefixes written so far, by content. */
  const cache = new Set<string>();
  /** Redacted thinking data handed out, which may come back. */
  const redacted = new Set<string>();

  const replyFor = (request: FakeAnthropicRequest, index: number): Promise<FakeAnthropicReply> =>
    scriptedReply(script, request, index, (length) => ({
      status: 400,
      error: {
        type: 'invalid_request_error',
        message: `fake Anthropic server: no scripted reply for request #${index + 1} (the script has ${length})`,
      },
    }));

  async function handle(
    incoming: IncomingMessage,
    response: ServerResponse,
    { wait }: LoopbackServer,
  ): Promise<void> {
    const text = (await readBody(incoming, Number.POSITIVE_INFINITY)) ?? '';
    const path = (incoming.url ?? '/').split('?')[0] ?? '/';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    if (incoming.method === 'POST' && path === '/v1/messages/count_tokens') {
      // The count endpoint: the same estimate the fake reports as a reply's input_tokens.
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      requests.push({ method: 'POST', path, headers, body: body ?? text, stream: false });
      if (typeof body?.model !== 'string' || !Array.isArray(body?.messages)) {
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(errorBody('invalid_request_error', 'model and messages: Field required'));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          input_tokens: countTokens({ system: body.system, messages: body.messages, tools: body.tools }),
        }),
      );
      return;
    }
    if (incoming.method !== 'POST' || path !== '/v1/messages') {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(
        errorBody('not_found_error', `fake Anthropic server: no route ${incoming.method} ${path}`),
      );
      return;
    }
    let body: any;
    try {
      body = JSON.parse(text);
    } catch (error) {
      requests.push({ method: 'POST', path, headers, body: text, stream: false });
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(
        errorBody(
          'invalid_request_error',
          `fake Anthropic server: the body is not JSON (${(error as Error).message})`,
        ),
      );
      return;
    }
    const request: FakeAnthropicRequest = {
      method: 'POST',
      path,
      headers,
      body,
      stream: body?.stream === true,
    };
    requests.push(request);
    const index = scriptIndex++;
    const number = ++served;
    response.once('close', () => {
      if (!response.writableFinished) request.aborted = true;
    });
    if (typeof body?.max_tokens !== 'number') {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(errorBody('invalid_request_error', 'max_tokens: Field required'));
      return;
    }
    const problem = requestProblem(body, redacted);
    if (problem !== undefined) {
      response.writeHead(400, { 'content-type': 'application/json' });
      response.end(errorBody('invalid_request_error', problem));
      return;
    }
    const reply = await replyFor(request, index);
    if (!(await wait(reply.delayMs ?? 0, response))) return;
    if (reply.destroy) {
      incoming.socket.destroy();
      return;
    }
    const status = reply.status ?? 200;
    if (status >= 400) {
      response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
      response.end(
        reply.body ??
          errorBody(
            reply.error?.type ??
              ERROR_TYPES[status] ??
              (status >= 500 ? 'api_error' : 'invalid_request_error'),
            reply.error?.message ?? `fake error ${status}`,
          ),
      );
      return;
    }
    if (reply.body !== undefined) {
      response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
      response.end(reply.body);
      return;
    }
    if (reply.hang && !request.stream) return; // never answer; close() drops the connection
    const cut = reply.ignoreStop
      ? { text: reply.content ?? '', sequence: null }
      : cutAtStop(reply.content ?? '', body?.stop_sequences);
    const content = cut.text;
    const toolCalls = (reply.toolCalls ?? []).map((call) => ({
      id: call.id ?? `toolu_${++toolCallCount}`,
      name: call.name,
      arguments: call.arguments,
    }));
    const thinkingOn = body?.thinking?.type === 'enabled';
    const thinking = thinkingOn ? reply.thinking : undefined;
    const redactedData =
      thinkingOn && reply.redactedThinking !== undefined
        ? `${reply.redactedThinking}.${fakeSignature('redacted', reply.redactedThinking)}`
        : undefined;
    if (redactedData !== undefined) redacted.add(redactedData);
    const usage: Record<string, number | undefined> = reply.usage
      ? { ...reply.usage }
      : {
          input_tokens: countTokens({ system: body?.system, messages: body?.messages }),
          output_tokens:
            countTokens(content) +
            (toolCalls.length > 0 ? countTokens(toolCalls) : 0) +
            (thinking ? countTokens(thinking) : 0),
        };
    const { prefixes, total } = cachePrefixes(body);
    const marks = prefixes.flatMap((prefix, index) => (prefix.marked ? [index] : []));
    if (marks.length > 0 && reply.usage === undefined) {
      // As Anthropic does: at each breakpoint, the longest cached prefix ending at a block boundary up to 20
      // blocks back is read; the prefix of the last breakpoint is written when it is new and long enough.
      let read = 0;
      for (const mark of marks) {
        for (let index = mark; index >= Math.max(0, mark - LOOKBACK); index--) {
          const prefix = prefixes[index]!;
          if (cache.has(prefix.key)) {
            if (prefix.tokens > read) read = prefix.tokens;
            break;
          }
        }
      }
      const last = prefixes[marks.at(-1)!]!;
      let written = 0;
      if (!cache.has(last.key) && last.tokens >= minCacheTokens) written = last.tokens - read;
      for (const mark of marks) {
        const prefix = prefixes[mark]!;
        if (prefix.tokens >= minCacheTokens) cache.add(prefix.key);
      }
      usage.cache_read_input_tokens = read;
      usage.cache_creation_input_tokens = written;
      usage.input_tokens = Math.max(0, total - read - written);
    }
    const stopReason =
      reply.stopReason ??
      (toolCalls.length > 0 ? 'tool_use' : cut.sequence !== null ? 'stop_sequence' : 'end_turn');
    const id = `msg_fake_${number}`;
    const model = String(body?.model ?? 'fake-model');

    if (!request.stream) {
      const blocks: Record<string, unknown>[] = [];
      if (thinking !== undefined) {
        blocks.push({ type: 'thinking', thinking, signature: fakeSignature('thinking', thinking) });
      }
      if (redactedData !== undefined) blocks.push({ type: 'redacted_thinking', data: redactedData });
      if (content.length > 0) blocks.push({ type: 'text', text: content });
      for (const call of toolCalls) {
        blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: parseInput(call.arguments) });
      }
      response.writeHead(status, { 'content-type': 'application/json', ...reply.headers });
      response.end(
        JSON.stringify({
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: blocks,
          stop_reason: stopReason,
          stop_sequence: cut.sequence,
          usage,
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
    const events: { event: string; data: unknown }[] = [];
    if (reply.events !== undefined) events.push(...reply.events);
    else {
      const size = Math.max(1, reply.chunkSize ?? 4);
      events.push({
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            id,
            type: 'message',
            role: 'assistant',
            model,
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { ...usage, output_tokens: 1 },
          },
        },
      });
      events.push({ event: 'ping', data: { type: 'ping' } });
      let blockIndex = 0;
      if (thinking !== undefined) {
        const index = blockIndex++;
        events.push({
          event: 'content_block_start',
          data: {
            type: 'content_block_start',
            index,
            content_block: { type: 'thinking', thinking: '', signature: '' },
          },
        });
        for (let start = 0; start < thinking.length; start += size) {
          events.push({
            event: 'content_block_delta',
            data: {
              type: 'content_block_delta',
              index,
              delta: { type: 'thinking_delta', thinking: thinking.slice(start, start + size) },
            },
          });
        }
        events.push({
          event: 'content_block_delta',
          data: {
            type: 'content_block_delta',
            index,
            delta: { type: 'signature_delta', signature: fakeSignature('thinking', thinking) },
          },
        });
        events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
      }
      if (redactedData !== undefined) {
        const index = blockIndex++;
        events.push({
          event: 'content_block_start',
          data: {
            type: 'content_block_start',
            index,
            content_block: { type: 'redacted_thinking', data: redactedData },
          },
        });
        events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
      }
      if (content.length > 0) {
        const index = blockIndex++;
        events.push({
          event: 'content_block_start',
          data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
        });
        for (let start = 0; start < content.length; start += size) {
          events.push({
            event: 'content_block_delta',
            data: {
              type: 'content_block_delta',
              index,
              delta: { type: 'text_delta', text: content.slice(start, start + size) },
            },
          });
        }
        events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
      }
      for (const call of toolCalls) {
        const index = blockIndex++;
        events.push({
          event: 'content_block_start',
          data: {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} },
          },
        });
        const json = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
        for (let start = 0; start < json.length; start += size) {
          events.push({
            event: 'content_block_delta',
            data: {
              type: 'content_block_delta',
              index,
              delta: { type: 'input_json_delta', partial_json: json.slice(start, start + size) },
            },
          });
        }
        events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
      }
      events.push({
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: { stop_reason: stopReason, stop_sequence: cut.sequence },
          usage: { output_tokens: usage.output_tokens },
        },
      });
      events.push({ event: 'message_stop', data: { type: 'message_stop' } });
    }
    for (const [position, event] of events.entries()) {
      if (position > 0 && !(await wait(reply.chunkDelayMs ?? 0, response))) return;
      if (response.destroyed) return;
      const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data);
      response.write(`event: ${event.event}\ndata: ${data}\n\n`);
    }
    if (reply.hang) return;
    response.end();
  }

  const server = await serveOnLoopback(handle, options.port, 'startFakeAnthropic()', (error) =>
    errorBody('api_error', `fake Anthropic server failed: ${String(error)}`),
  );
  return {
    url: server.url,
    baseURL: server.url,
    requests,
    setScript(next: FakeAnthropicScript) {
      script = next;
      scriptIndex = 0;
    },
    close: server.close,
  };
}
