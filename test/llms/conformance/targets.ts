import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { GenParams, MeteredLLM } from 'lagent-ts';
import { AsyncAISDKModel, AsyncClaudeAPI, AsyncGPTAPI, AsyncOpenAIResponsesAPI } from 'lagent-ts';
import {
  type FakeAnthropicReply,
  type FakeAnthropicServer,
  type FakeOpenAIServer,
  type FakeReply,
  startFakeAnthropic,
  startFakeOpenAI,
} from 'lagent-ts/testing';
import type { TimingOptions } from '#src/llms/timing';

/** One scripted reply, in terms both fake servers understand. */
export interface Reply {
  content?: string;
  toolCalls?: { id?: string; name: string; arguments: Record<string, unknown> }[];
  status?: number;
  error?: string;
  headers?: Record<string, string>;
  chunkSize?: number;
  chunkDelayMs?: number;
  /** Ignore the request's stop words (the client must still cut). */
  ignoreStop?: boolean;
  usage?: { input: number; output: number; cached?: number };
  /** A body (`'body'`, for a request that does not stream) or a stream event (`'event'`) that is not JSON. */
  malformed?: 'body' | 'event';
  /** What the model reasoned (DeepSeek's reasoning_content, a Responses reasoning item, Claude's thinking). */
  reasoning?: string;
}

/** What a request carried, read the same way from both servers. */
export interface SeenRequest {
  stream: boolean;
  aborted: boolean;
  stopWords: string[];
  toolNames: string[];
  /** The text of every user message part, in order. */
  userTexts: string[];
  /** The tool results sent back: call id and text. */
  toolResults: { id: string; content: string }[];
  /** The assistant's tool calls sent back: id, name as sent, and arguments. */
  toolCalls: { id: string; name: string; arguments: unknown }[];
  /** Image parts (or blocks) in user messages. */
  images: number;
  /** File parts (documents) in user messages. */
  files: number;
  /** The JSON schema asked for as native structured output, when one was. */
  schema: Record<string, unknown> | undefined;
  /** `cache_control` marks in the request. */
  cacheMarks: number;
}

/** A model client under test with its fake server. */
export interface Harness {
  llm: MeteredLLM;
  script(replies: Reply | Reply[]): void;
  requests(): SeenRequest[];
  close(): Promise<void>;
}

export type ClientOptions = GenParams & TimingOptions;

/** A client of the suite: how to start its fake server and build the client on it. */
export interface ConformanceTarget {
  name: string;
  start(options?: ClientOptions): Promise<Harness>;
  /** Whether the API takes stop sequences (the Responses API has none: they are only cut on this side). */
  sendsStopWords: boolean;
  /** Whether the client marks its prompt for Anthropic's cache. */
  marksCache: boolean;
  /** Whether the API takes PDF files in user messages. */
  takesFiles: boolean;
}

const FAST = { retryMinDelayMs: 1, retryMaxDelayMs: 5, timeout: 5_000 } satisfies TimingOptions;

function toOpenAIReply(reply: Reply): FakeReply {
  const fake: FakeReply = {};
  if (reply.content !== undefined) fake.content = reply.content;
  if (reply.toolCalls !== undefined) fake.toolCalls = reply.toolCalls;
  if (reply.status !== undefined) fake.status = reply.status;
  if (reply.error !== undefined) fake.error = { message: reply.error };
  if (reply.headers !== undefined) fake.headers = reply.headers;
  if (reply.chunkSize !== undefined) fake.chunkSize = reply.chunkSize;
  if (reply.chunkDelayMs !== undefined) fake.chunkDelayMs = reply.chunkDelayMs;
  if (reply.ignoreStop !== undefined) fake.ignoreStop = reply.ignoreStop;
  if (reply.usage !== undefined) {
    fake.usage = { prompt_tokens: reply.usage.input, completion_tokens: reply.usage.output };
    if (reply.usage.cached !== undefined) fake.usage.cached_tokens = reply.usage.cached;
  }
  if (reply.reasoning !== undefined) fake.reasoning = reply.reasoning;
  if (reply.malformed === 'body') fake.body = '{"choices": [ not json';
  if (reply.malformed === 'event') fake.events = ['{"choices":[{"delta":{"content":"ok"}}]}', '{not json'];
  return fake;
}

function toAnthropicReply(reply: Reply): FakeAnthropicReply {
  const fake: FakeAnthropicReply = {};
  if (reply.content !== undefined) fake.content = reply.content;
  if (reply.toolCalls !== undefined) fake.toolCalls = reply.toolCalls;
  if (reply.status !== undefined) fake.status = reply.status;
  if (reply.error !== undefined) fake.error = { message: reply.error };
  if (reply.headers !== undefined) fake.headers = reply.headers;
  if (reply.chunkSize !== undefined) fake.chunkSize = reply.chunkSize;
  if (reply.chunkDelayMs !== undefined) fake.chunkDelayMs = reply.chunkDelayMs;
  if (reply.ignoreStop !== undefined) fake.ignoreStop = reply.ignoreStop;
  if (reply.usage !== undefined) {
    fake.usage = { input_tokens: reply.usage.input, output_tokens: reply.usage.output };
    if (reply.usage.cached !== undefined) {
      // Anthropic's input_tokens leave out what was read from the cache.
      fake.usage.input_tokens = reply.usage.input - reply.usage.cached;
      fake.usage.cache_read_input_tokens = reply.usage.cached;
      fake.usage.cache_creation_input_tokens = 0;
    }
  }
  if (reply.reasoning !== undefined) fake.thinking = reply.reasoning;
  if (reply.malformed === 'body') fake.body = '{"content": [ not json';
  if (reply.malformed === 'event') fake.events = [{ event: 'message_start', data: '{not json' }];
  return fake;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  }
  return '';
}

function parseMaybe(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

function marksIn(value: unknown): number {
  return (JSON.stringify(value ?? null).match(/"cache_control"/g) ?? []).length;
}

function partsOf(messages: any[], role: string): any[] {
  return messages
    .filter((m) => (m.role ?? 'user') === role && Array.isArray(m.content))
    .flatMap((m) => m.content);
}

function seenOpenAI(request: FakeOpenAIServer['requests'][number]): SeenRequest {
  if (request.endpoint === 'responses') return seenResponses(request);
  const body = request.body ?? {};
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  const stop = body.stop;
  const userParts = partsOf(messages, 'user');
  return {
    images: userParts.filter((part) => part?.type === 'image_url').length,
    files: userParts.filter((part) => part?.type === 'file').length,
    schema: body.response_format?.json_schema?.schema,
    cacheMarks: marksIn(body),
    stream: request.stream,
    aborted: request.aborted === true,
    stopWords: stop === undefined ? [] : Array.isArray(stop) ? stop : [stop],
    toolNames: (body.tools ?? []).map((tool: any) => tool.function?.name),
    userTexts: messages.filter((m) => m.role === 'user').map((m) => textOf(m.content)),
    toolResults: messages
      .filter((m) => m.role === 'tool')
      .map((m) => ({ id: m.tool_call_id, content: textOf(m.content) })),
    toolCalls: messages.flatMap((m) =>
      (m.tool_calls ?? []).map((call: any) => ({
        id: call.id,
        name: call.function.name,
        arguments: parseMaybe(call.function.arguments),
      })),
    ),
  };
}

/** A Responses API request read as the suite reads the others. */
function seenResponses(request: FakeOpenAIServer['requests'][number]): SeenRequest {
  const body = request.body ?? {};
  const input: any[] = Array.isArray(body.input) ? body.input : [];
  const userParts = partsOf(input, 'user');
  return {
    stream: request.stream,
    aborted: request.aborted === true,
    stopWords: [],
    toolNames: (body.tools ?? []).map((tool: any) => tool.name),
    userTexts: input
      .filter((item) => item.role === 'user')
      .map((item) =>
        typeof item.content === 'string'
          ? item.content
          : item.content
              .filter((part: any) => part.type === 'input_text')
              .map((part: any) => part.text)
              .join(''),
      ),
    toolResults: input
      .filter((item) => item.type === 'function_call_output')
      .map((item) => ({ id: item.call_id, content: item.output })),
    toolCalls: input
      .filter((item) => item.type === 'function_call')
      .map((item) => ({ id: item.call_id, name: item.name, arguments: parseMaybe(item.arguments) })),
    images: userParts.filter((part) => part?.type === 'input_image').length,
    files: userParts.filter((part) => part?.type === 'input_file').length,
    schema: body.text?.format?.schema,
    cacheMarks: marksIn(body),
  };
}

function seenAnthropic(request: FakeAnthropicServer['requests'][number]): SeenRequest {
  const body = request.body ?? {};
  const messages: any[] = Array.isArray(body.messages) ? body.messages : [];
  const blocks = (role: string) =>
    messages
      .filter((m) => m.role === role)
      .flatMap((m) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content));
  return {
    images: blocks('user').filter((block: any) => block.type === 'image').length,
    files: blocks('user').filter((block: any) => block.type === 'document').length,
    schema: body.output_config?.format?.schema,
    cacheMarks: marksIn(body),
    stream: request.stream,
    aborted: request.aborted === true,
    stopWords: body.stop_sequences ?? [],
    toolNames: (body.tools ?? []).map((tool: any) => tool.name),
    userTexts: blocks('user')
      .filter((block: any) => block.type === 'text')
      .map((block: any) => block.text),
    toolResults: blocks('user')
      .filter((block: any) => block.type === 'tool_result')
      .map((block: any) => ({ id: block.tool_use_id, content: textOf(block.content) })),
    toolCalls: blocks('assistant')
      .filter((block: any) => block.type === 'tool_use')
      .map((block: any) => ({ id: block.id, name: block.name, arguments: block.input })),
  };
}

async function openAIHarness(make: (server: FakeOpenAIServer) => MeteredLLM): Promise<Harness> {
  const server = await startFakeOpenAI();
  return {
    llm: make(server),
    script: (replies) =>
      server.setScript(Array.isArray(replies) ? replies.map(toOpenAIReply) : toOpenAIReply(replies)),
    requests: () =>
      server.requests
        .filter((request) => request.endpoint === 'chat' || request.endpoint === 'responses')
        .map(seenOpenAI),
    close: () => server.close(),
  };
}

async function anthropicHarness(make: (server: FakeAnthropicServer) => MeteredLLM): Promise<Harness> {
  const server = await startFakeAnthropic();
  return {
    llm: make(server),
    script: (replies) =>
      server.setScript(Array.isArray(replies) ? replies.map(toAnthropicReply) : toAnthropicReply(replies)),
    requests: () => server.requests.map(seenAnthropic),
    close: () => server.close(),
  };
}

/** Every client the suite runs against. */
export const targets: ConformanceTarget[] = [
  {
    name: 'AsyncGPTAPI (fake OpenAI)',
    sendsStopWords: true,
    marksCache: false,
    takesFiles: true,
    start: (options) =>
      openAIHarness(
        (server) =>
          new AsyncGPTAPI({ model: 'm', apiKey: 'sk-test', baseURL: server.baseURL, ...FAST, ...options }),
      ),
  },
  {
    name: 'AsyncOpenAIResponsesAPI (fake OpenAI, /v1/responses)',
    sendsStopWords: false,
    marksCache: false,
    takesFiles: true,
    start: (options) =>
      openAIHarness(
        (server) =>
          new AsyncOpenAIResponsesAPI({
            model: 'm',
            apiKey: 'sk-test',
            baseURL: server.baseURL,
            ...FAST,
            ...options,
          }),
      ),
  },
  {
    name: 'AsyncClaudeAPI (fake Anthropic)',
    sendsStopWords: true,
    marksCache: true,
    takesFiles: true,
    start: (options) =>
      anthropicHarness(
        (server) =>
          new AsyncClaudeAPI({ model: 'm', apiKey: 'sk-test', baseURL: server.url, ...FAST, ...options }),
      ),
  },
  {
    name: 'AsyncAISDKModel over @ai-sdk/openai-compatible (fake OpenAI)',
    sendsStopWords: true,
    marksCache: false,
    takesFiles: false,
    start: (options) =>
      openAIHarness((server) => {
        const provider = createOpenAICompatible({
          name: 'fake',
          baseURL: server.baseURL,
          apiKey: 'sk-test',
          supportsStructuredOutputs: true,
        });
        return new AsyncAISDKModel({ model: provider.chatModel('m'), ...FAST, ...options });
      }),
  },
  {
    name: 'AsyncAISDKModel over @ai-sdk/anthropic (fake Anthropic)',
    sendsStopWords: true,
    marksCache: true,
    takesFiles: true,
    start: (options) =>
      anthropicHarness((server) => {
        const provider = createAnthropic({ baseURL: `${server.url}/v1`, apiKey: 'sk-test' });
        return new AsyncAISDKModel({ model: provider('claude-sonnet-4-6'), ...FAST, ...options });
      }),
  },
];
