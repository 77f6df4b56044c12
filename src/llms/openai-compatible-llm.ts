import OpenAI, { APIError } from 'openai';
import { effectiveSignal } from '../core/call-context';
import { Deadline } from '../core/deadline';
import { ConfigurationError, LLMRequestError } from '../schema/errors';
import { MAX_TIMER_MS } from '../utils/timers';
import { type FilePathPolicy, hasFileParts, type LoadedParts, loadParts } from './content-inputs';
import { checkExtraBody } from './extra-body';
import { type LoadedImages, loadImages } from './image-inputs';
import { MeteredLLM } from './metered-llm';
import { postJSON } from './post-json';
import { ReasoningStream } from './reasoning-stream';
import { type RetryPolicy, withRetries } from './request-retry';
import {
  addResponsesToolFields,
  type ResponsesReply,
  readResponse,
  readResponsesEvent,
  responsesStreamState,
} from './responses-wire';
import { resolveTiming, type TimingOptions } from './timing';
import {
  addToolFields,
  needsWireMessages,
  prepareTools,
  type RequestTools,
  readToolCalls,
  type ToolCallAssembler,
  toAPIMessages,
  toolCallsError,
} from './tool-calls';
import type {
  ChatMessage,
  GenParams,
  LLMCallParams,
  ModelReply,
  ResolvedGenParams,
  StreamChunk,
} from './types';
import { type TokenUsage, usageFromAPI } from './usage';

/** Options shared by every client of an OpenAI-compatible server. */
export interface OpenAICompatibleOptions extends GenParams, TimingOptions {
  /** The model name the server knows; any name works. */
  model?: string | undefined;
  /** One key, or several used round-robin; a key the server rejects for quota is skipped from then on. */
  apiKey?: string | readonly string[] | undefined;
  /** The server's base URL, e.g. `http://127.0.0.1:8000/v1`. */
  baseURL?: string | undefined;
  /** OpenAI organization header. */
  organization?: string | undefined;
  /** The client's name in error messages. @default the class name (`GPTAPI` for the sync twin, not `AsyncGPTAPI`) */
  clientName?: string | undefined;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string> | undefined;
  /**
   * Extra body fields on every request, for parameters OpenAI lacks (e.g. `{ top_k: 20 }` for vLLM). They add
   * to the request, never replace what the client writes itself (`model`, `messages`, `prompt`, `tools`,
   * `tool_choice`, `parallel_tool_calls`, `stream`, `stream_options`): naming one is a `ConfigurationError`.
   */
  extraBody?: Record<string, unknown> | undefined;
  /** Ask streaming servers for token usage (`stream_options.include_usage`). @default true */
  streamUsage?: boolean | undefined;
  /**
   * Send the images of tool results (`ChatMessage.images`: an interpreter's figures, an MCP tool's images) as
   * `image_url` parts (base64 `data:` URLs) of a `user` message after the tool messages, since OpenAI's tool
   * messages carry text only. Set false for a model that takes no images: they stay the text that names them.
   * Files must be regular PNG, JPEG, GIF or WebP files of at most 3.75 MB; others are named in a note.
   * @default true
   */
  sendImages?: boolean | undefined;
  /**
   * Which local files an image or file part of a message may name (`{ type: 'image', image: '/path/a.png' }`):
   * `false` refuses every path (a message from a remote caller cannot make the server read its files), `true`
   * allows any absolute path, a list allows files inside those directories. URLs, `data:` URLs and bytes are
   * always accepted. @default false
   */
  allowFilePaths?: FilePathPolicy | undefined;
  /**
   * Send an assistant turn's reasoning back (`reasoning_content`) inside the current tool loop, as DeepSeek's
   * thinking mode with tools requires. Reasoning of earlier turns is never sent (DeepSeek R1 refuses it, OpenAI
   * does not know the field). @default false
   */
  reasoningInToolLoops?: boolean | undefined;
}

/** Per-call params of OpenAI-compatible clients. */
export interface OpenAICallParams extends LLMCallParams {
  /**
   * Extra body fields for this call, merged over the client's `extraBody`; like it, they cannot replace what the
   * client writes itself (a `ConfigurationError`, before anything is sent).
   */
  extraBody?: Record<string, unknown> | undefined;
  /** Ask for a JSON object reply (`response_format: { type: 'json_object' }`), chat endpoints only. */
  jsonMode?: boolean | undefined;
}

/** One HTTP request: which endpoint (`/chat/completions`, `/completions`, `/responses`) and the JSON body. */
export interface CompletionRequest {
  endpoint: 'chat' | 'completions' | 'responses';
  body: Record<string, unknown>;
}

/** What a request's messages carry besides text, read before the request is built. */
export interface RequestInputs {
  /** The loaded images of tool results (undefined when none, or when images are not sent). */
  images: LoadedImages;
  /** The loaded image and file parts of the messages (undefined when none). */
  parts: LoadedParts;
}

const PATHS: Record<CompletionRequest['endpoint'], string> = {
  chat: '/chat/completions',
  completions: '/completions',
  responses: '/responses',
};

/** Defaults a subclass gives the shared constructor. */
export interface OpenAICompatibleDefaults {
  model?: string | undefined;
  baseURL: string;
  /** Key used when none is given (local servers accept any). Undefined: a key is required. */
  apiKey?: string | undefined;
}

function isQuotaError(error: unknown): error is APIError {
  if (!(error instanceof APIError) || error.status !== 429) return false;
  const body = error.error as { code?: unknown; type?: unknown } | undefined;
  return (
    error.code === 'insufficient_quota' ||
    body?.code === 'insufficient_quota' ||
    body?.type === 'insufficient_quota'
  );
}

function snippet(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/**
 * The engine behind `AsyncGPTAPI`, `AsyncVllmModel` and `AsyncLMDeployServer`: non-streaming requests over
 * `node:http` (keep-alive), streams through an `openai` client (its own retries off), with key rotation, p-retry retries, timeouts, abortable requests, SSE streaming cut at stop
 * words, native function calling (`tools` in, typed tool calls out, streamed deltas assembled), and token
 * usage per call and per session. Subclasses only build the request body.
 */
export abstract class OpenAICompatibleLLM extends MeteredLLM {
  /** The model name sent with every request. */
  readonly model: string;
  /** The server's base URL. */
  readonly baseURL: string;
  /** Milliseconds per attempt (for streams: between events); `Infinity` for none. */
  readonly timeout: number;
  /** Retries after the first attempt. */
  readonly retry: number;
  /** The longest `retry-after` honoured, in ms. */
  readonly maxRetryAfter: number;
  /** The name errors use (the class name, or the sync twin's). */
  readonly clientName: string;
  /** Body fields added to every request. */
  readonly extraBody: Readonly<Record<string, unknown>>;
  readonly #keys: readonly string[];
  readonly #exhaustedKeys = new Set<string>();
  readonly #clients = new Map<string, OpenAI>();
  readonly #requestHeaders = new Map<string, Record<string, string>>();
  readonly #urls: Record<CompletionRequest['endpoint'], URL>;
  readonly #policy: RetryPolicy;
  readonly #organization: string | undefined;
  readonly #headers: Record<string, string> | undefined;
  readonly #streamUsage: boolean;
  readonly #sendImages: boolean;
  readonly #allowFilePaths: FilePathPolicy;
  readonly #reasoningInToolLoops: boolean;
  #cursor = 0;

  constructor(options: OpenAICompatibleOptions, defaults: OpenAICompatibleDefaults) {
    super(options);
    const name = options.clientName ?? new.target.name;
    this.clientName = name;
    const model = options.model ?? defaults.model;
    if (typeof model !== 'string' || model.length === 0) {
      throw new ConfigurationError({ message: `${name} needs a model name` });
    }
    this.model = model;
    this.baseURL = (options.baseURL ?? defaults.baseURL).replace(/\/+$/, '');
    try {
      this.#urls = {
        chat: new URL(`${this.baseURL}${PATHS.chat}`),
        completions: new URL(`${this.baseURL}${PATHS.completions}`),
        responses: new URL(`${this.baseURL}${PATHS.responses}`),
      };
    } catch {
      throw new ConfigurationError({ message: `${name}: baseURL is not a URL: ${this.baseURL}` });
    }
    const keys =
      options.apiKey === undefined
        ? []
        : typeof options.apiKey === 'string'
          ? [options.apiKey]
          : [...options.apiKey];
    if (keys.length === 0 && defaults.apiKey !== undefined) keys.push(defaults.apiKey);
    if (keys.length === 0 || keys.some((key) => typeof key !== 'string' || key.length === 0)) {
      throw new ConfigurationError({
        message: `${name} needs an API key: pass apiKey or set OPENAI_API_KEY (for a local server, set baseURL or OPENAI_BASE_URL)`,
      });
    }
    this.#keys = keys;
    const timing = resolveTiming(options, name);
    this.timeout = timing.timeout;
    this.retry = timing.retry;
    this.maxRetryAfter = timing.maxRetryAfter;
    this.#policy = timing.policy;
    this.#organization = options.organization;
    this.#headers = options.headers;
    checkExtraBody(name, options.extraBody);
    this.extraBody = { ...options.extraBody };
    this.#streamUsage = options.streamUsage ?? true;
    this.#sendImages = options.sendImages ?? true;
    this.#allowFilePaths = options.allowFilePaths ?? false;
    this.#reasoningInToolLoops = options.reasoningInToolLoops ?? false;
  }

  /**
   * Builds the request for one call; `params` are the resolved generation params, `inputs` the images and file
   * parts the messages carry, read.
   */
  protected abstract buildRequest(
    messages: ChatMessage[],
    params: ResolvedGenParams,
    call: OpenAICallParams,
    inputs: RequestInputs,
  ): CompletionRequest;

  /**
   * Replies to `messages` with text. Throws `LLMRequestError` when the request fails for good, the signal's
   * reason when aborted, and a `ModelOutputError` when the model answered with tool calls (use `generate()`).
   */
  async chat(messages: ChatMessage[], params?: OpenAICallParams): Promise<string> {
    const reply = await this.generate(messages, params);
    if (reply.toolCalls.length > 0) throw toolCallsError(this.clientName, reply.toolCalls);
    return reply.content;
  }

  /**
   * The whole reply: text (cut at stop words) and the tool calls the model asked for, with `params.tools`
   * sent as OpenAI's `tools` (`toolChoice` as `tool_choice`, `parallelToolCalls` as `parallel_tool_calls`).
   * A toolkit API `Name.api` is sent as `Name__api` and its calls come back named `Name.api`.
   */
  override async generate(messages: ChatMessage[], params?: OpenAICallParams): Promise<ModelReply> {
    const call = params ?? {};
    const resolved = this.resolveParams(call);
    const images = this.#sendImages ? await loadImages(messages) : undefined;
    const parts = await this.#loadParts(messages);
    const { request, tools } = this.#prepare(messages, resolved, call, images, parts);
    // A model called inside an agent's forward stops with that call even when not handed its signal.
    const signal = effectiveSignal(call.signal);
    const where = this.#where(request);
    const { text, toolCalls, finishReason, usage, reasoning, reasoningParts } = await withRetries(
      () =>
        this.#withKey((_client, key) =>
          Deadline.run(signal, this.timeout, async (attempt) =>
            this.#readCompletion(await this.#post(key, request, attempt), request.endpoint, where, tools),
          ),
        ),
      this.#policy,
      where,
      signal,
      call,
      this,
    );
    const reply = this.reply(text, toolCalls, finishReason, usage, resolved.stopWords, call);
    if (reasoning !== undefined) reply.reasoning = reasoning;
    if (reasoningParts !== undefined) reply.reasoningParts = reasoningParts;
    return reply;
  }

  /**
   * Streams the reply over SSE: `STREAM_ING` chunks with cumulative `content`, then one `END` chunk. Text from
   * the first stop word on is never yielded, even when the server ignores `stop`. Tool-call deltas are
   * assembled and the `END` chunk carries the complete `toolCalls`. Leaving the loop early aborts the request.
   * Retries cover opening the stream, not a stream that already started.
   */
  override async *streamChat(
    messages: ChatMessage[],
    params?: OpenAICallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const call = params ?? {};
    const resolved = this.resolveParams(call);
    const images = this.#sendImages ? await loadImages(messages) : undefined;
    const parts = await this.#loadParts(messages);
    const { request, tools } = this.#prepare(messages, resolved, call, images, parts);
    request.body.stream = true;
    // A response stream ends with the whole response, usage included.
    if (this.#streamUsage && request.endpoint !== 'responses') {
      request.body.stream_options = { include_usage: true };
    }
    // A model called inside an agent's forward stops with that call even when not handed its signal.
    const signal = effectiveSignal(call.signal);
    const where = this.#where(request);
    const { stream, attempt } = await withRetries(
      () =>
        this.#withKey((client) =>
          Deadline.open(
            signal,
            this.timeout,
            async (attemptSignal) => (await send(client, request, attemptSignal)) as AsyncIterable<unknown>,
          ),
        ),
      this.#policy,
      where,
      signal,
      call,
      this,
    );
    let usage: TokenUsage | undefined;
    const reasoning = new ReasoningStream();
    const responses = request.endpoint === 'responses' ? responsesStreamState() : undefined;
    yield* this.relayStream({
      stream,
      attempt,
      read: (event, assembler) => {
        if (responses !== undefined) return readResponsesEvent(event, assembler, reasoning, responses, where);
        usage = usageFromAPI((event as { usage?: unknown } | null)?.usage) ?? usage;
        return this.#deltaOf(event, request.endpoint, where, assembler, reasoning);
      },
      reasoning,
      usage: () => responses?.usage ?? usage,
      signal,
      stopWords: resolved.stopWords,
      tools,
      call,
      where,
    });
  }

  /** The image and file parts of the messages, read (undefined when there are none). */
  #loadParts(messages: ChatMessage[]): Promise<LoadedParts> {
    return hasFileParts(messages)
      ? loadParts(messages, this.#allowFilePaths, this.clientName)
      : Promise.resolve(undefined);
  }

  /**
   * The request for one call: the subclass's body, plus tools, tool turns, content parts and reasoning in the
   * wire's shape.
   */
  #prepare(
    messages: ChatMessage[],
    resolved: ResolvedGenParams,
    call: OpenAICallParams,
    images: LoadedImages,
    parts: LoadedParts,
  ): { request: CompletionRequest; tools: RequestTools | undefined } {
    const tools = prepareTools(call.tools, this.clientName);
    const request = this.buildRequest(messages, resolved, call, { images, parts });
    if (request.endpoint === 'responses') {
      addResponsesToolFields(request.body, tools, call.toolChoice, call.parallelToolCalls);
    } else if (request.endpoint === 'chat') {
      addToolFields(request.body, tools, call.toolChoice, call.parallelToolCalls);
      const wire = request.body.messages as ChatMessage[];
      if (needsWireMessages(wire)) {
        request.body.messages = toAPIMessages(wire, {
          images,
          parts,
          reasoningInToolLoops: this.#reasoningInToolLoops,
        });
      }
    } else if (tools !== undefined) {
      throw new ConfigurationError({
        message: `${this.clientName}: tools need the chat endpoint (/chat/completions), but this client renders the dialog into one raw prompt for /completions (it has a metaTemplate), which has no function calling. Drop metaTemplate so the server's chat template and tool parser handle tools, or use a text-protocol agent (ReAct, AgentForInternLM)`,
      });
    }
    return { request, tools };
  }

  #where(request: CompletionRequest): string {
    const path = PATHS[request.endpoint];
    return `${this.clientName} request to ${this.baseURL}${path} (model ${this.model})`;
  }

  #client(key: string): OpenAI {
    let client = this.#clients.get(key);
    if (client === undefined) {
      client = new OpenAI({
        apiKey: key,
        baseURL: this.baseURL,
        organization: this.#organization ?? null,
        // The attempt's own signal enforces `timeout`; the SDK's timer must not fire first (Node runs an
        // over-long or infinite one after 1 ms).
        timeout: Math.min(this.timeout, MAX_TIMER_MS),
        maxRetries: 0, // retries happen in one place: withRetries
        defaultHeaders: this.#headers,
        logLevel: 'off',
      });
      this.#clients.set(key, client);
    }
    return client;
  }

  /**
   * One non-streaming request, sent with `node:http` rather than through the SDK: the SDK's per-request work
   * (header merging, logging, response wrappers) and fetch's signal bookkeeping cost more CPU than the request
   * under load. Failures take the SDK's error classes, so retries and messages are those of the streaming path.
   */
  #post(key: string, request: CompletionRequest, signal: AbortSignal): Promise<unknown> {
    let headers = this.#requestHeaders.get(key);
    if (headers === undefined) {
      headers = {
        accept: 'application/json',
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        ...(this.#organization === undefined ? {} : { 'openai-organization': this.#organization }),
        ...this.#headers,
      };
      this.#requestHeaders.set(key, headers);
    }
    const url = this.#urls[request.endpoint];
    return postJSON(url, headers, JSON.stringify(request.body), signal);
  }

  /** Runs `send` with the next usable key, moving on to another key when one is rejected for quota. */
  async #withKey<T>(send: (client: OpenAI, key: string) => Promise<T>): Promise<T> {
    for (;;) {
      let key: string | undefined;
      for (let tried = 0; tried < this.#keys.length && key === undefined; tried++) {
        const candidate = this.#keys[this.#cursor++ % this.#keys.length];
        if (candidate !== undefined && !this.#exhaustedKeys.has(candidate)) key = candidate;
      }
      if (key === undefined) {
        throw new LLMRequestError({
          message: `${this.clientName}: every API key was rejected for insufficient quota`,
          status: 429,
        });
      }
      try {
        return await send(this.#client(key), key);
      } catch (error) {
        if (!isQuotaError(error)) throw error;
        this.#exhaustedKeys.add(key);
        if (this.#exhaustedKeys.size >= this.#keys.length) {
          throw new LLMRequestError({
            message: `${this.clientName}: every API key was rejected for insufficient quota (last: ${error.message})`,
            status: 429,
            cause: error,
          });
        }
      }
    }
  }

  #readCompletion(
    response: unknown,
    endpoint: CompletionRequest['endpoint'],
    where: string,
    tools: RequestTools | undefined,
  ): ResponsesReply {
    if (endpoint === 'responses') return readResponse(response, tools, where);
    const choice = (response as { choices?: unknown } | null)?.choices;
    const first = Array.isArray(choice) ? (choice[0] as Record<string, any> | undefined) : undefined;
    const text = endpoint === 'chat' ? first?.message?.content : first?.text;
    if (first === undefined || (typeof text !== 'string' && text !== null && text !== undefined)) {
      throw new LLMRequestError({
        message: `${where} failed: the server's reply is not a completion: ${snippet(response)}`,
      });
    }
    const finishReason: unknown = first.finish_reason;
    // DeepSeek, xAI and vLLM send `reasoning_content`; Groq, OpenRouter and newer vLLM `reasoning`.
    const reasoning: unknown =
      endpoint === 'chat' ? (first.message?.reasoning_content ?? first.message?.reasoning) : undefined;
    return {
      text: typeof text === 'string' ? text : '',
      toolCalls: endpoint === 'chat' ? readToolCalls(first.message?.tool_calls, tools, where) : [],
      finishReason: typeof finishReason === 'string' ? finishReason : undefined,
      usage: usageFromAPI((response as { usage?: unknown }).usage),
      reasoning: typeof reasoning === 'string' && reasoning !== '' ? reasoning : undefined,
      reasoningParts: undefined,
    };
  }

  #deltaOf(
    event: unknown,
    endpoint: CompletionRequest['endpoint'],
    where: string,
    assembler: ToolCallAssembler,
    reasoning: ReasoningStream,
  ): string {
    const choices = (event as { choices?: unknown } | null)?.choices;
    if (!Array.isArray(choices)) {
      if (event !== null && typeof event === 'object' && 'usage' in event) return '';
      throw new LLMRequestError({ message: `${where} failed: malformed stream event: ${snippet(event)}` });
    }
    const first = choices[0] as Record<string, any> | undefined;
    if (endpoint !== 'chat') return typeof first?.text === 'string' ? first.text : '';
    const delta = first?.delta;
    if (delta === undefined || delta === null) return '';
    if (delta.tool_calls !== undefined) assembler.push(delta.tool_calls);
    const thought = delta.reasoning_content ?? delta.reasoning;
    if (typeof thought === 'string') reasoning.add(thought);
    return typeof delta.content === 'string' ? delta.content : '';
  }
}

/** One request to the endpoint the request names (a stream when its body asks for one). */
function send(client: OpenAI, request: CompletionRequest, signal: AbortSignal): Promise<unknown> {
  const body = request.body as never;
  if (request.endpoint === 'responses') return client.responses.create(body, { signal });
  return request.endpoint === 'chat'
    ? client.chat.completions.create(body, { signal })
    : client.completions.create(body, { signal });
}
