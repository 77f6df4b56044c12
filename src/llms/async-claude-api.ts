import type Anthropic from '@anthropic-ai/sdk';
import { effectiveSignal } from '../core/call-context';
import { Deadline } from '../core/deadline';
import { ConfigurationError } from '../schema/errors';
import { strictJSONSchema } from '../schema/response-format';
import { MAX_TIMER_MS } from '../utils/timers';
import {
  type ClaudeInputs,
  markCachePrefix,
  readClaudeMessage,
  toClaudeMessages,
  toClaudeToolChoice,
  toClaudeTools,
  usageFromClaude,
} from './claude-messages';
import { type AnthropicSDK, loadAnthropicSDK, toSharedError } from './claude-sdk';
import { type FilePathPolicy, hasFileParts, loadParts } from './content-inputs';
import { addExtraBody, checkExtraBody } from './extra-body';
import { loadImages } from './image-inputs';
import { MeteredLLM } from './metered-llm';
import { ReasoningStream } from './reasoning-stream';
import { type RetryPolicy, withRetries } from './request-retry';
import { resolveTiming, type TimingOptions } from './timing';
import type { TokenCountInput } from './token-count';
import { prepareTools, type RequestTools, type ToolCallAssembler, toolCallsError } from './tool-calls';
import type {
  ChatMessage,
  GenParams,
  LLMCallParams,
  ModelReply,
  ResolvedGenParams,
  StreamChunk,
} from './types';

/** Options of {@link AsyncClaudeAPI} and `ClaudeAPI`. */
export interface ClaudeAPIOptions extends GenParams, TimingOptions {
  /** The Claude model. @default 'claude-sonnet-4-6' */
  model?: string | undefined;
  /** @default process.env.ANTHROPIC_API_KEY (any placeholder when a custom baseURL is set) */
  apiKey?: string | undefined;
  /** The API's base URL, without `/v1`. @default process.env.ANTHROPIC_BASE_URL, else 'https://api.anthropic.com' */
  baseURL?: string | undefined;
  /**
   * Tokens the reply may take (`max_tokens`, which Anthropic requires). @default 4096
   */
  maxNewTokens?: number | undefined;
  /** The client's name in error messages. @default the class name (`ClaudeAPI` for the sync twin) */
  clientName?: string | undefined;
  /** Extra HTTP headers on every request (e.g. `anthropic-beta`). */
  headers?: Record<string, string> | undefined;
  /** Extra body fields on every request (e.g. `{ metadata: { user_id: 'u1' } }`). */
  extraBody?: Record<string, unknown> | undefined;
  /**
   * Send the images of tool results (`ChatMessage.images`: an interpreter's figures, an MCP tool's images) as
   * image blocks inside their `tool_result`; false leaves them as the text that names them. Files must be
   * regular PNG, JPEG, GIF or WebP files of at most 3.75 MB; others are named in a note. @default true
   */
  sendImages?: boolean | undefined;
  /**
   * Which local files an image or file part of a message may name: `false` refuses every path, `true` allows
   * any absolute path, a list allows files inside those directories. @default false
   */
  allowFilePaths?: FilePathPolicy | undefined;
  /**
   * Prompt caching: mark the stable prefix (the tools, the system prompt, the history up to the newest message)
   * with `cache_control`, so each request of a loop reads it from Anthropic's cache (at a tenth of the input
   * price) instead of paying for it again. `false` sends no marks. @default true
   */
  cache?: boolean | undefined;
}

/** Per-call params of {@link AsyncClaudeAPI}. */
export interface ClaudeCallParams extends LLMCallParams {
  /**
   * Extra body fields for this call, merged over the client's `extraBody`; neither may replace what the client
   * writes itself (`model`, `messages`, `system`, `tools`, `tool_choice`, `stream`): a `ConfigurationError`.
   */
  extraBody?: Record<string, unknown> | undefined;
}

/** Anthropic's `max_tokens` is required; Lagent's general default (512) is short for tool-calling replies. */
export const DEFAULT_CLAUDE_MAX_TOKENS = 4096;

const DEFAULT_MODEL = 'claude-sonnet-4-6';

/** Anthropic refuses stop sequences that are only whitespace; they are still cut on this side. */
const BLANK = /^\s*$/;

type ClaudeClient = InstanceType<AnthropicSDK['default']>;

/**
 * A client of Anthropic's Messages API (`POST /v1/messages`) on `@anthropic-ai/sdk`, an optional peer loaded on
 * the first call (a missing package is a `ConfigurationError` saying to install it).
 *
 * Params map as `maxNewTokens -> max_tokens` (default 4096), `temperature` (clamped to Anthropic's 0..1),
 * `stopWords -> stop_sequences` (text is also cut on this side, streams included), and `topP -> top_p`,
 * `topK -> top_k` only when set in the options or changed for a call (recent Claude models refuse `top_p` next
 * to `temperature`). `repetitionPenalty` has no Anthropic counterpart and is not sent. The leading system
 * messages become the `system` field; see `toClaudeMessages` for the rest of the dialog.
 *
 * `generate()` offers `params.tools` as Anthropic tools (`input_schema`; a toolkit API `Name.api` is sent as
 * `Name__api` and its calls come back as `Name.api`) and returns `tool_use` blocks as `toolCalls`; the
 * OpenAI-shaped tool turns of the function-calling agents go back as `tool_use` / `tool_result` blocks.
 *
 * Failed requests are retried by the same machinery as the OpenAI clients (429, 408, 5xx and 529,
 * connections, timeouts; honouring `retry-after-ms` / `retry-after`), then throw `LLMRequestError` with
 * `status` and `attempts`. `signal`, or the signal of the agent call it runs in, aborts at once. Token usage
 * is counted per call and per session (input tokens include cache reads and writes).
 *
 * @example
 * const llm = new AsyncClaudeAPI({ model: 'claude-sonnet-4-6', stopWords: ['</answer>'] });
 * const text = await llm.chat([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }]);
 * for await (const chunk of llm.streamChat([{ role: 'user', content: 'hi' }])) process.stdout.write(chunk.delta);
 * llm.getUsage(); // { promptTokens, completionTokens, totalTokens }
 */
export class AsyncClaudeAPI extends MeteredLLM {
  /** The model name sent with every request. */
  readonly model: string;
  /** The API's base URL (requests go to `${baseURL}/v1/messages`). */
  readonly baseURL: string;
  /** Milliseconds per attempt (for streams: between events); `Infinity` for none. */
  readonly timeout: number;
  /** Retries after the first attempt. */
  readonly retry: number;
  /** The longest `retry-after` honoured, in ms. */
  readonly maxRetryAfter: number;
  /** The name errors use. */
  readonly clientName: string;
  /** Body fields added to every request. */
  readonly extraBody: Readonly<Record<string, unknown>>;
  readonly #apiKey: string;
  readonly #headers: Record<string, string> | undefined;
  readonly #policy: RetryPolicy;
  readonly #sendTopP: boolean;
  readonly #sendTopK: boolean;
  readonly #where: string;
  readonly #sendImages: boolean;
  readonly #allowFilePaths: FilePathPolicy;
  readonly #cache: boolean;
  #client: Promise<{ client: ClaudeClient; sdk: AnthropicSDK }> | undefined;

  constructor(options: ClaudeAPIOptions = {}) {
    super({ ...options, maxNewTokens: options.maxNewTokens ?? DEFAULT_CLAUDE_MAX_TOKENS });
    const name = options.clientName ?? new.target.name;
    this.clientName = name;
    const model = options.model ?? DEFAULT_MODEL;
    if (typeof model !== 'string' || model.length === 0) {
      throw new ConfigurationError({ message: `${name} needs a model name` });
    }
    this.model = model;
    const baseURL = options.baseURL ?? process.env.ANTHROPIC_BASE_URL;
    this.baseURL = (baseURL ?? 'https://api.anthropic.com').replace(/\/+$/, '');
    try {
      new URL(this.baseURL);
    } catch {
      throw new ConfigurationError({ message: `${name}: baseURL is not a URL: ${this.baseURL}` });
    }
    // Local proxies and fakes usually take any key.
    const apiKey =
      options.apiKey ?? (process.env.ANTHROPIC_API_KEY || (baseURL !== undefined ? 'EMPTY' : ''));
    if (typeof apiKey !== 'string' || apiKey.length === 0) {
      throw new ConfigurationError({
        message: `${name} needs an API key: pass apiKey or set ANTHROPIC_API_KEY`,
      });
    }
    this.#apiKey = apiKey;
    const timing = resolveTiming(options, name);
    this.timeout = timing.timeout;
    this.retry = timing.retry;
    this.maxRetryAfter = timing.maxRetryAfter;
    this.#policy = timing.policy;
    this.#headers = options.headers;
    checkExtraBody(name, options.extraBody);
    this.extraBody = { ...options.extraBody };
    this.#sendTopP = options.topP !== undefined;
    this.#sendTopK = options.topK !== undefined;
    this.#where = `${name} request to ${this.baseURL}/v1/messages (model ${model})`;
    this.#sendImages = options.sendImages ?? true;
    this.#allowFilePaths = options.allowFilePaths ?? false;
    this.#cache = options.cache ?? true;
  }

  /**
   * Replies to `messages` with text. Throws `LLMRequestError` when the request fails for good, the signal's
   * reason when aborted, and a `ModelOutputError` when the model answered with tool calls (use `generate()`).
   */
  async chat(messages: ChatMessage[], params?: ClaudeCallParams): Promise<string> {
    const reply = await this.generate(messages, params);
    if (reply.toolCalls.length > 0) throw toolCallsError(this.clientName, reply.toolCalls);
    return reply.content;
  }

  /** The whole reply: text (cut at stop words) and the tool calls the model asked for (`tool_use` blocks). */
  override async generate(messages: ChatMessage[], params?: ClaudeCallParams): Promise<ModelReply> {
    const call = params ?? {};
    const resolved = this.resolveParams(call);
    const tools = prepareTools(call.tools, this.clientName);
    const body = this.#body(messages, resolved, call, tools, await this.#inputs(messages));
    // A model called inside an agent's forward stops with that call even when not handed its signal.
    const signal = effectiveSignal(call.signal);
    signal?.throwIfAborted();
    const { client, sdk } = await this.#connect();
    const translate = (error: unknown) => toSharedError(error, sdk);
    const response = await withRetries(
      () =>
        Deadline.run(
          signal,
          this.timeout,
          (attempt) => client.messages.create(body as never, { signal: attempt }),
          translate,
        ),
      this.#policy,
      this.#where,
      signal,
      call,
      this,
    );
    const { text, toolCalls, finishReason, usage, reasoning, reasoningParts } = readClaudeMessage(
      response,
      tools,
      this.#where,
    );
    const reply = this.reply(text, toolCalls, finishReason, usage, resolved.stopWords, call);
    if (reasoning !== undefined) reply.reasoning = reasoning;
    if (reasoningParts !== undefined) reply.reasoningParts = reasoningParts;
    return reply;
  }

  /**
   * Streams the reply over SSE: `STREAM_ING` chunks with cumulative `content`, then one `END` chunk carrying
   * the `toolCalls` assembled from `input_json_delta` pieces. Text from the first stop word on is never
   * yielded. Leaving the loop early aborts the request. Retries cover opening the stream, not a stream that
   * already started.
   */
  override async *streamChat(
    messages: ChatMessage[],
    params?: ClaudeCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const call = params ?? {};
    const resolved = this.resolveParams(call);
    const tools = prepareTools(call.tools, this.clientName);
    const body = this.#body(messages, resolved, call, tools, await this.#inputs(messages));
    body.stream = true;
    const signal = effectiveSignal(call.signal);
    signal?.throwIfAborted();
    const { client, sdk } = await this.#connect();
    const translate = (error: unknown) => toSharedError(error, sdk);
    const { stream, attempt } = await withRetries(
      () =>
        Deadline.open(
          signal,
          this.timeout,
          async (attemptSignal) =>
            (await client.messages.create(body as never, {
              signal: attemptSignal,
            })) as unknown as AsyncIterable<unknown>,
          translate,
        ),
      this.#policy,
      this.#where,
      signal,
      call,
      this,
    );
    let rawUsage: Record<string, unknown> | undefined;
    const reasoning = new ReasoningStream();
    const thinking = new Map<number, ThinkingBlock>();
    const toolBlocks = new Set<number>();
    yield* this.relayStream({
      stream,
      attempt,
      read: (event, assembler) => {
        const { text, usage } = readEvent(event, assembler, reasoning, thinking, toolBlocks);
        if (usage !== undefined) rawUsage = { ...rawUsage, ...usage };
        return text;
      },
      reasoning,
      usage: () => usageFromClaude(rawUsage),
      signal,
      stopWords: resolved.stopWords,
      tools,
      call,
      where: this.#where,
      translate,
    });
  }

  /**
   * The prompt's tokens as the API counts them (`POST /v1/messages/count_tokens`, no tokens spent): exact for
   * Claude models, at the cost of a request, where `countTokens` is a local estimate. `tools` (the call's
   * tools) count too when given.
   */
  async countTokensExact(
    input: TokenCountInput,
    params: Pick<ClaudeCallParams, 'tools' | 'signal'> = {},
  ): Promise<number> {
    const messages: ChatMessage[] =
      typeof input === 'string' ? [{ role: 'user', content: input }] : [...input];
    const tools = prepareTools(params.tools, this.clientName);
    const dialog = toClaudeMessages(messages, await this.#inputs(messages), this.clientName);
    const body: Record<string, unknown> = { model: this.model, messages: dialog.messages };
    if (dialog.system !== undefined) body.system = dialog.system;
    if (tools !== undefined) body.tools = toClaudeTools(tools);
    const signal = effectiveSignal(params.signal);
    signal?.throwIfAborted();
    const { client, sdk } = await this.#connect();
    const counted = await withRetries(
      () =>
        Deadline.run(
          signal,
          this.timeout,
          (attempt) => client.messages.countTokens(body as never, { signal: attempt }),
          (error: unknown) => toSharedError(error, sdk),
        ),
      this.#policy,
      `${this.#where} (count_tokens)`,
      signal,
    );
    return (counted as { input_tokens: number }).input_tokens;
  }

  /** The SDK client, made on first use (the SDK is imported then). */
  #connect(): Promise<{ client: ClaudeClient; sdk: AnthropicSDK }> {
    this.#client ??= loadAnthropicSDK(this.clientName).then((sdk) => ({
      sdk,
      client: new sdk.default({
        apiKey: this.#apiKey,
        baseURL: this.baseURL,
        // The attempt's own signal enforces `timeout`; the SDK's timer must not fire first.
        timeout: Math.min(this.timeout, MAX_TIMER_MS),
        maxRetries: 0, // retries happen in one place: withRetries
        defaultHeaders: this.#headers,
        logLevel: 'off',
        // Spans belong to lagent-ts's own tracing, not one per SDK request.
        openTelemetry: false,
      }),
    }));
    return this.#client.catch((error: unknown) => {
      this.#client = undefined;
      throw error;
    });
  }

  /** The tool-result images and the image and file parts of the messages, read. */
  async #inputs(messages: ChatMessage[]): Promise<ClaudeInputs> {
    const images = this.#sendImages ? await loadImages(messages) : undefined;
    const parts = hasFileParts(messages)
      ? await loadParts(messages, this.#allowFilePaths, this.clientName)
      : undefined;
    return { images, parts };
  }

  /** The Messages API body of one call. */
  #body(
    messages: ChatMessage[],
    params: ResolvedGenParams,
    call: ClaudeCallParams,
    tools: RequestTools | undefined,
    inputs: ClaudeInputs,
  ): Record<string, unknown> {
    const dialog = toClaudeMessages(messages, inputs, this.clientName);
    const body: Record<string, unknown> = {
      model: this.model,
      max_tokens: params.maxNewTokens,
      messages: dialog.messages,
    };
    if (dialog.system !== undefined) body.system = dialog.system;
    const budget = thinkingBudget(params.reasoning);
    if (budget !== undefined) {
      // Extended thinking: the budget counts within max_tokens, and sampling params other than top_p >= 0.95
      // are refused while thinking.
      body.thinking = { type: 'enabled', budget_tokens: budget };
      if (params.maxNewTokens <= budget) body.max_tokens = budget + params.maxNewTokens;
      if (params.topP !== this.genParams.topP && params.topP >= 0.95) body.top_p = params.topP;
    } else {
      body.temperature = Math.max(0, Math.min(1, params.temperature));
      if (this.#sendTopP || params.topP !== this.genParams.topP) body.top_p = params.topP;
      if (this.#sendTopK || params.topK !== this.genParams.topK) body.top_k = params.topK;
    }
    const stops = params.stopWords.filter((word) => !BLANK.test(word));
    if (stops.length > 0) body.stop_sequences = stops;
    if (tools !== undefined) {
      body.tools = toClaudeTools(tools);
      const choice = toClaudeToolChoice(call.toolChoice, call.parallelToolCalls);
      if (choice !== undefined) body.tool_choice = choice;
    }
    const format = call.responseFormat === undefined ? undefined : strictJSONSchema(call.responseFormat);
    if (format !== undefined) body.output_config = { format: { type: 'json_schema', schema: format.schema } };
    if (call.cache ?? this.#cache) markCachePrefix(body);
    addExtraBody(this.clientName, body, this.extraBody, call.extraBody);
    return body;
  }
}

/** A thinking block being streamed: its text so far and its signature. */
interface ThinkingBlock {
  thinking: string;
  signature: string;
}

/** Thinking budgets for `reasoning.effort` when no `budgetTokens` is given. */
const EFFORT_BUDGETS = { low: 2048, medium: 8192, high: 24_576 } as const;

/** The `thinking.budget_tokens` a `reasoning` parameter asks for; undefined: no extended thinking. */
function thinkingBudget(reasoning: ResolvedGenParams['reasoning']): number | undefined {
  if (reasoning === undefined) return undefined;
  if (reasoning.budgetTokens !== undefined) return reasoning.budgetTokens;
  return EFFORT_BUDGETS[reasoning.effort ?? 'medium'];
}

/**
 * What one stream event adds: text (`text_delta`), tool-call pieces of the caller's tools (fed to `assembler`
 * in OpenAI's delta shape, keyed by the block index; `tools` holds those blocks), thinking (`thinking_delta` text to `reasoning`; each thinking block, with the
 * signature its `signature_delta` brings, kept as a part once it stops; a redacted block as it starts), and usage
 * (`message_start`, `message_delta`).
 */
function readEvent(
  event: unknown,
  assembler: ToolCallAssembler,
  reasoning: ReasoningStream,
  thinking: Map<number, ThinkingBlock>,
  tools: Set<number>,
): { text: string; usage: Record<string, unknown> | undefined } {
  const data = event as Anthropic.Messages.RawMessageStreamEvent | null;
  let text = '';
  let usage: Record<string, unknown> | undefined;
  switch (data?.type) {
    case 'message_start':
      usage = definedFields(data.message?.usage);
      break;
    case 'message_delta':
      usage = definedFields(data.usage);
      break;
    case 'content_block_start': {
      const block = data.content_block;
      if (block?.type === 'tool_use') {
        tools.add(data.index);
        const input = block.input as Record<string, unknown> | undefined;
        const initial = input !== undefined && input !== null && Object.keys(input).length > 0;
        assembler.push([
          {
            index: data.index,
            id: block.id,
            function: { name: block.name, arguments: initial ? JSON.stringify(input) : '' },
          },
        ]);
      } else if (block?.type === 'text' && typeof block.text === 'string') text = block.text;
      else if (block?.type === 'thinking') {
        const start = typeof block.thinking === 'string' ? block.thinking : '';
        // Several thinking blocks read as one text, a blank line apart (as a reply's `reasoning` joins them).
        if (reasoning.text !== '') reasoning.add('\n\n');
        thinking.set(data.index, { thinking: start, signature: block.signature ?? '' });
        reasoning.add(start);
      } else if (block?.type === 'redacted_thinking') {
        reasoning.addPart({ type: 'anthropic.redacted_thinking', data: block.data });
      }
      break;
    }
    case 'content_block_delta': {
      const delta = data.delta;
      if (delta?.type === 'text_delta') text = delta.text;
      else if (delta?.type === 'input_json_delta') {
        // Only the caller's tools: a server tool's input (web search, code execution) is not a call to run.
        if (tools.has(data.index)) {
          assembler.push([{ index: data.index, function: { arguments: delta.partial_json } }]);
        }
      } else if (delta?.type === 'thinking_delta') {
        const block = thinking.get(data.index);
        if (block !== undefined) block.thinking += delta.thinking;
        reasoning.add(delta.thinking);
      } else if (delta?.type === 'signature_delta') {
        const block = thinking.get(data.index);
        if (block !== undefined) block.signature += delta.signature;
      }
      break;
    }
    case 'content_block_stop': {
      const block = thinking.get(data.index);
      if (block !== undefined) {
        thinking.delete(data.index);
        reasoning.addPart({
          type: 'anthropic.thinking',
          thinking: block.thinking,
          signature: block.signature,
        });
      }
      break;
    }
    default:
      break;
  }
  return { text, usage };
}

/** The fields of a usage object that are set (a `message_delta` leaves earlier counts as `null`). */
function definedFields(value: unknown): Record<string, unknown> | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const result: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value))
    if (item !== null && item !== undefined) result[key] = item;
  return result;
}
