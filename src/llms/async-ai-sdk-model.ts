import { effectiveSignal } from '../core/call-context';
import { Deadline } from '../core/deadline';
import { ConfigurationError } from '../schema/errors';
import type { ReasoningOptions } from '../schema/reasoning';
import { strictJSONSchema } from '../schema/response-format';
import { toAISDKPrompt, toAISDKToolChoice, toAISDKTools } from './ai-sdk-prompt';
import {
  type AISDKStreamState,
  finishReasonOf,
  readContent,
  readStreamPart,
  toSharedAISDKError,
  usageOf,
} from './ai-sdk-results';
import type { AISDKCallOptions, AISDKGenerateResult, AISDKLanguageModel } from './ai-sdk-types';
import { type FilePathPolicy, hasFileParts, type LoadedParts, loadParts } from './content-inputs';
import { MeteredLLM } from './metered-llm';
import { ReasoningStream } from './reasoning-stream';
import { type RetryPolicy, withRetries } from './request-retry';
import { resolveTiming, type TimingOptions } from './timing';
import { prepareTools, type RequestTools, toolCallsError } from './tool-calls';
import type {
  ChatMessage,
  GenParams,
  LLMCallParams,
  ModelReply,
  ResolvedGenParams,
  StreamChunk,
} from './types';
import type { TokenUsage } from './usage';

/** Provider-specific options, keyed by provider (the AI SDK's `providerOptions`). */
export type AISDKProviderOptions = Record<string, Record<string, unknown>>;

/** Options of {@link AsyncAISDKModel}. */
export interface AISDKModelOptions extends GenParams, TimingOptions {
  /** The AI SDK language model, e.g. `openai('gpt-4o-mini')` or `anthropic('claude-sonnet-4-6')`. */
  model: AISDKLanguageModel;
  /** The client's name in error messages. @default the class name */
  clientName?: string | undefined;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string> | undefined;
  /** Provider-specific options on every request, e.g. `{ openai: { parallelToolCalls: false } }`. */
  providerOptions?: AISDKProviderOptions | undefined;
  /**
   * Which local files an image or file part of a message may name: `false` refuses every path, `true` allows
   * any absolute path, a list allows files inside those directories. @default false
   */
  allowFilePaths?: FilePathPolicy | undefined;
  /**
   * Count the tokens of streamed replies. A model of `@ai-sdk/openai-compatible` created without
   * `includeUsage: true` reports none while streaming; this adapter then asks for usage on the model's
   * requests (it sets the model's `includeUsage`). When a stream still reports none, a warning says so once and
   * the tokens are estimated (`countTokens`), so budgets and costs do not read 0. @default true
   */
  streamUsage?: boolean | undefined;
  /**
   * Prompt caching for Anthropic models (`@ai-sdk/anthropic`, Claude on Bedrock or Vertex): the last tool, the
   * system prompt and the newest message get Anthropic's `cacheControl`, as `AsyncClaudeAPI` marks them.
   * Other providers cache by themselves and get nothing. `false` marks nothing. @default true
   */
  cache?: boolean | undefined;
}

/** Per-call params of {@link AsyncAISDKModel}. */
export interface AISDKCallParams extends LLMCallParams {
  /** Provider-specific options for this call, merged (per provider) over the client's. */
  providerOptions?: AISDKProviderOptions | undefined;
}

/** Providers that cannot take a stop sequence of whitespace only (it is still cut on this side). */
const BLANK = /^\s*$/;

const VERSIONS = new Set(['v2', 'v3', 'v4']);

/**
 * Any AI SDK language model (`LanguageModelV2`, `V3` or `V4`: `@ai-sdk/openai`, `@ai-sdk/anthropic`,
 * `@ai-sdk/google`, `@ai-sdk/openai-compatible`, community providers such as Ollama's) as a lagent-ts model. The
 * provider package is the user's: lagent-ts calls the model object's `doGenerate` / `doStream` and imports
 * nothing of the AI SDK.
 *
 * Params map as `maxNewTokens -> maxOutputTokens`, `temperature`, `stopWords -> stopSequences` (text is also cut
 * on this side, streams included), and `topP`, `topK` only when set in the options or changed for a call.
 * `repetitionPenalty` is not sent. `generate()` offers `params.tools` as function tools (a toolkit API
 * `Name.api` is sent as `Name__api` and its calls come back as `Name.api`) and returns the model's tool calls;
 * the tool turns of the function-calling agents go back as `tool-call` / `tool-result` parts.
 *
 * Failed requests are retried by the same machinery as the other clients (the provider's 429, 408 and 5xx,
 * connection failures, timeouts; honouring `retry-after-ms` / `retry-after`), then throw `LLMRequestError` with
 * `status` and `attempts`; the AI SDK's own retries (in `generateText`) are not involved. `signal`, or the
 * signal of the agent call it runs in, aborts at once. Token usage is counted per call and per session.
 *
 * @example
 * import { createOpenAI } from '@ai-sdk/openai';
 * const llm = new AsyncAISDKModel({ model: createOpenAI()('gpt-4o-mini'), stopWords: ['</answer>'] });
 * const text = await llm.chat([{ role: 'user', content: 'hi' }]);
 * llm.getUsage(); // { promptTokens, completionTokens, totalTokens }
 */
export class AsyncAISDKModel extends MeteredLLM {
  /** The model id (`model.modelId`). */
  readonly model: string;
  /** The provider id (`model.provider`, e.g. `openai.chat`): AI SDK models do not expose their URL. */
  readonly baseURL: string;
  /** The wrapped AI SDK model. */
  readonly languageModel: AISDKLanguageModel;
  /** Milliseconds per attempt (for streams: between two parts); `Infinity` for none. */
  readonly timeout: number;
  /** Retries after the first attempt. */
  readonly retry: number;
  /** The name errors use. */
  readonly clientName: string;
  readonly #policy: RetryPolicy;
  readonly #headers: Record<string, string> | undefined;
  readonly #providerOptions: AISDKProviderOptions | undefined;
  readonly #sendTopP: boolean;
  readonly #sendTopK: boolean;
  readonly #where: string;
  readonly #allowFilePaths: FilePathPolicy;
  readonly #streamUsage: boolean;
  readonly #cache: boolean;
  #warnedUsage = false;

  constructor(options: AISDKModelOptions) {
    super(options);
    const name = options?.clientName ?? new.target.name;
    this.clientName = name;
    const model = options?.model as Partial<AISDKLanguageModel> | undefined;
    if (
      model === null ||
      typeof model !== 'object' ||
      typeof model.doGenerate !== 'function' ||
      typeof model.doStream !== 'function'
    ) {
      throw new ConfigurationError({
        message: `${name} needs an AI SDK language model as \`model\` (e.g. openai('gpt-4o-mini') from @ai-sdk/openai)`,
      });
    }
    if (!VERSIONS.has(String(model.specificationVersion))) {
      throw new ConfigurationError({
        message: `${name}: AI SDK language model specification ${String(model.specificationVersion)} is not supported (v2, v3 and v4 are); update the provider package`,
      });
    }
    this.languageModel = model as AISDKLanguageModel;
    this.model = String(model.modelId ?? '');
    this.baseURL = String(model.provider ?? '');
    const timing = resolveTiming(options, name);
    this.timeout = timing.timeout;
    this.retry = timing.retry;
    this.#policy = timing.policy;
    this.#headers = options.headers;
    this.#providerOptions = options.providerOptions;
    this.#sendTopP = options.topP !== undefined;
    this.#sendTopK = options.topK !== undefined;
    this.#where = `${name} request to ${this.baseURL} (model ${this.model})`;
    this.#allowFilePaths = options.allowFilePaths ?? false;
    this.#streamUsage = options.streamUsage ?? true;
    this.#cache = options.cache ?? true;
    if (this.#streamUsage) askForStreamUsage(this.languageModel);
  }

  /**
   * Replies to `messages` with text. Throws `LLMRequestError` when the request fails for good, the signal's
   * reason when aborted, and a `ModelOutputError` when the model answered with tool calls (use `generate()`).
   */
  chat(messages: ChatMessage[], params?: AISDKCallParams): Promise<string> {
    return this.generate(messages, params).then(this.#textOf);
  }

  /** A reply's text; tool calls cannot be returned as text. */
  readonly #textOf = (reply: ModelReply): string => {
    if (reply.toolCalls.length > 0) throw toolCallsError(this.clientName, reply.toolCalls);
    return reply.content;
  };

  /** The whole reply: text (cut at stop words) and the tool calls the model asked for. */
  override async generate(messages: ChatMessage[], params?: AISDKCallParams): Promise<ModelReply> {
    const call = params ?? {};
    const resolved = this.resolveParams(call);
    const tools = prepareTools(call.tools, this.clientName);
    const request = this.#request(messages, resolved, call, tools, await this.#loadParts(messages));
    // A model called inside an agent's forward stops with that call even when not handed its signal.
    const signal = effectiveSignal(call.signal);
    signal?.throwIfAborted();
    const result = await withRetries(
      () => this.#attempt(request, signal),
      this.#policy,
      this.#where,
      signal,
      call,
      this,
    );
    const { text, toolCalls, reasoning, reasoningParts } = readContent(
      result.content,
      tools,
      this.#where,
      this.baseURL,
    );
    const usage = usageOf(result.usage);
    const finishReason = finishReasonOf(result.finishReason);
    const reply = this.reply(text, toolCalls, finishReason, usage, resolved.stopWords, call);
    if (reasoning !== undefined) reply.reasoning = reasoning;
    if (reasoningParts !== undefined) reply.reasoningParts = reasoningParts;
    return reply;
  }

  /**
   * Streams the reply: `STREAM_ING` chunks with cumulative `content`, then one `END` chunk carrying the
   * `toolCalls`. Text from the first stop word on is never yielded. Leaving the loop early aborts the request.
   * Retries cover opening the stream, not a stream that already started.
   */
  override async *streamChat(
    messages: ChatMessage[],
    params?: AISDKCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const call = params ?? {};
    const resolved = this.resolveParams(call);
    const tools = prepareTools(call.tools, this.clientName);
    const request = this.#request(messages, resolved, call, tools, await this.#loadParts(messages));
    const signal = effectiveSignal(call.signal);
    signal?.throwIfAborted();
    const model = this.languageModel;
    const { stream, attempt } = await withRetries(
      () =>
        Deadline.open(
          signal,
          this.timeout,
          async (attemptSignal) => (await model.doStream({ ...request, abortSignal: attemptSignal })).stream,
          toSharedAISDKError,
        ),
      this.#policy,
      this.#where,
      signal,
      call,
      this,
    );
    const state: AISDKStreamState = {
      calls: 0,
      usage: undefined,
      finishReason: undefined,
      finished: false,
      provider: this.baseURL,
      reasoning: new ReasoningStream(),
      open: new Map(),
    };
    let text = '';
    yield* this.relayStream({
      stream: stream as unknown as AsyncIterable<unknown>,
      attempt,
      read: (part, assembler) => {
        const delta = readStreamPart(part as { type: string }, assembler, state);
        if (delta !== '' && state.usage === undefined) text += delta;
        return delta;
      },
      reasoning: state.reasoning,
      usage: () =>
        state.usage ?? (state.finished ? this.#estimateStreamUsage(messages, text, state) : undefined),
      signal,
      stopWords: resolved.stopWords,
      tools,
      call,
      where: this.#where,
      translate: toSharedAISDKError,
    });
  }

  /**
   * One `doGenerate` attempt under its own deadline (aborted when `signal` aborts or `timeout` passes). It is
   * `Deadline.run` written with one promise reaction instead of two async frames: the figure in the `llms`
   * benchmark (adapter overhead per call) depends on it.
   */
  #attempt(request: AISDKCallOptions, signal: AbortSignal | undefined): Promise<AISDKGenerateResult> {
    const attempt = new Deadline(signal, this.timeout);
    let pending: PromiseLike<AISDKGenerateResult>;
    try {
      pending = this.languageModel.doGenerate({ ...request, abortSignal: attempt.signal });
    } catch (error) {
      pending = Promise.reject(error);
    }
    return Promise.resolve(pending).then(
      (result) => {
        attempt.dispose();
        return result;
      },
      (error: unknown) => {
        attempt.dispose();
        throw attempt.timedOut ? attempt.signal.reason : toSharedAISDKError(error);
      },
    );
  }

  /**
   * The usage of a stream whose provider reported none: a warning, once, saying why, and the tokens estimated
   * (`countTokens` of the prompt and of the text and reasoning streamed).
   */
  #estimateStreamUsage(messages: ChatMessage[], text: string, state: AISDKStreamState): TokenUsage {
    if (!this.#warnedUsage) {
      this.#warnedUsage = true;
      process.emitWarning(
        `${this.clientName}: the model ${this.model} (${this.baseURL}) reported no token usage for a streamed reply, so its tokens are estimated; with @ai-sdk/openai-compatible, create the provider with includeUsage: true`,
        { code: 'LAGENT_STREAM_USAGE' },
      );
    }
    const promptTokens = this.countTokens(messages);
    const completionTokens = this.countTokens(text + state.reasoning.text);
    return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  }

  /** The image and file parts of the messages, read (undefined when there are none). */
  #loadParts(messages: ChatMessage[]): Promise<LoadedParts> {
    return hasFileParts(messages)
      ? loadParts(messages, this.#allowFilePaths, this.clientName)
      : Promise.resolve(undefined);
  }

  /** The call options of one request (the attempt's `abortSignal` is added per attempt). */
  #request(
    messages: ChatMessage[],
    params: ResolvedGenParams,
    call: AISDKCallParams,
    tools: RequestTools | undefined,
    parts: LoadedParts,
  ): AISDKCallOptions {
    const model = this.languageModel;
    const request: AISDKCallOptions = {
      prompt: toAISDKPrompt(messages, {
        provider: this.baseURL,
        version: model.specificationVersion,
        parts,
      }),
      maxOutputTokens: params.maxNewTokens,
      temperature: params.temperature,
    };
    if (this.#sendTopP || params.topP !== this.genParams.topP) request.topP = params.topP;
    if (this.#sendTopK || params.topK !== this.genParams.topK) request.topK = params.topK;
    const stops = params.stopWords.filter((word) => !BLANK.test(word));
    if (stops.length > 0) request.stopSequences = stops;
    if (tools !== undefined) {
      request.tools = toAISDKTools(tools);
      if (call.toolChoice !== undefined) request.toolChoice = toAISDKToolChoice(call.toolChoice);
    }
    if (this.#headers !== undefined) request.headers = this.#headers;
    const format = call.responseFormat;
    if (format !== undefined) {
      const strict = strictJSONSchema(format);
      const wire: NonNullable<AISDKCallOptions['responseFormat']> = { type: 'json' };
      if (strict !== undefined) {
        wire.schema = strict.schema;
        wire.name = strict.name;
        if (strict.description !== undefined) wire.description = strict.description;
      }
      request.responseFormat = wire;
    }
    let providerOptions = mergeProviderOptions(this.#providerOptions, call.providerOptions);
    const reasoning = params.reasoning;
    if (reasoning !== undefined) {
      if (model.specificationVersion === 'v4' && reasoning.effort !== undefined) {
        request.reasoning = reasoning.effort;
      }
      providerOptions = mergeProviderOptions(reasoningProviderOptions(model, reasoning), providerOptions);
    }
    if (providerOptions !== undefined) request.providerOptions = providerOptions;
    if ((call.cache ?? this.#cache) && ANTHROPIC.test(model.provider)) markAnthropicCache(request);
    return request;
  }
}

/** Providers of Claude models (`anthropic.messages`, `bedrock-anthropic...`, `vertex.anthropic...`). */
const ANTHROPIC = /anthropic/i;

const CACHE_CONTROL = { anthropic: { cacheControl: { type: 'ephemeral' } } };

/** Marks the stable prefix of a Claude request for Anthropic's prompt cache: last tool, system prompt, last message. */
function markAnthropicCache(request: AISDKCallOptions): void {
  const tools = request.tools;
  if (tools !== undefined && tools.length > 0) {
    tools[tools.length - 1] = { ...tools[tools.length - 1]!, providerOptions: CACHE_CONTROL };
  }
  const prompt = request.prompt;
  let system = -1;
  for (let index = 0; index < prompt.length && prompt[index]!.role === 'system'; index++) system = index;
  if (system >= 0) prompt[system] = { ...prompt[system]!, providerOptions: CACHE_CONTROL };
  const last = prompt.length - 1;
  if (last > system) prompt[last] = { ...prompt[last]!, providerOptions: CACHE_CONTROL };
}

/**
 * The provider options that turn reasoning on where the specification has no `reasoning` option (v2, v3) or
 * the caller gave a thinking budget: Anthropic's `thinking`, OpenAI's (and OpenAI-compatible providers')
 * `reasoningEffort`. The caller's own provider options win.
 */
function reasoningProviderOptions(
  model: AISDKLanguageModel,
  reasoning: ReasoningOptions,
): AISDKProviderOptions | undefined {
  const provider = String(model.provider ?? '').split('.')[0] ?? '';
  if (provider === 'anthropic' || provider === 'google.vertex.anthropic') {
    if (reasoning.budgetTokens === undefined && model.specificationVersion === 'v4') return undefined;
    const budgetTokens =
      reasoning.budgetTokens ?? { low: 2048, medium: 8192, high: 24_576 }[reasoning.effort ?? 'medium'];
    return { anthropic: { thinking: { type: 'enabled', budgetTokens } } };
  }
  if (reasoning.effort === undefined || model.specificationVersion === 'v4') return undefined;
  return { [provider === '' ? 'openai' : provider]: { reasoningEffort: reasoning.effort } };
}

/**
 * Asks an `@ai-sdk/openai-compatible` chat model for usage on streamed replies (its `includeUsage` setting,
 * which the provider reads from the model's config on each request). Models that always report it, or that
 * keep their config elsewhere, are left as they are.
 */
function askForStreamUsage(model: AISDKLanguageModel): void {
  const config = (model as unknown as { config?: unknown }).config;
  if (config === null || typeof config !== 'object' || !('includeUsage' in config)) return;
  const settings = config as { includeUsage?: unknown };
  if (settings.includeUsage !== true) settings.includeUsage = true;
}

/** The client's provider options with the call's merged over them, provider by provider. */
function mergeProviderOptions(
  base: AISDKProviderOptions | undefined,
  call: AISDKProviderOptions | undefined,
): AISDKProviderOptions | undefined {
  if (call === undefined) return base;
  if (base === undefined) return call;
  const merged: AISDKProviderOptions = { ...base };
  for (const [provider, options] of Object.entries(call))
    merged[provider] = { ...base[provider], ...options };
  return merged;
}
