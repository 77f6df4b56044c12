import { driveAsync, driveSync } from '../core/steps';
import { ConfigurationError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { AsyncBaseLLM, BaseLLM } from './base-llm';
import { chunksAsync, chunksSync, ModelChain, type ModelMiddleware } from './model-middleware';
import type {
  ChatMessage,
  GenParams,
  LLMCallParams,
  ModelReply,
  ResolvedGenParams,
  StreamChunk,
} from './types';
import { emptyUsage, type TokenUsage } from './usage';
import { modelName } from './wrapped-usage';

/*
 * The two thin classes a model with middleware is (a model is sync or async by its class: agents check
 * `instanceof`), each method one driver over the chain's steps. The wrappers (`CachedLLM`, `RecordingLLM`,
 * `ReplayLLM`, `FallbackLLM` and their async twins) extend them with their middleware.
 */

/** Gives `wrapper` the `genParams` of `llm` (its own object, so changing them changes the calls of both). */
export function adoptParams(wrapper: BaseLLM | AsyncBaseLLM, llm: BaseLLM | AsyncBaseLLM | undefined): void {
  if (llm !== undefined) (wrapper as { genParams: ResolvedGenParams }).genParams = llm.genParams;
}

function checkModel(llm: unknown, name: string): void {
  if (llm !== undefined && typeof (llm as { chat?: unknown } | null)?.chat !== 'function')
    throw new ConfigurationError({ message: `${name} needs a model to wrap` });
}

function contentOf(reply: ModelReply): string {
  return reply.content;
}

/**
 * A synchronous model whose calls run through model middleware around `llm` (see {@link wrapModel}).
 * `genParams` is the wrapped model's own object; `model` its name; usage is the middleware's when one counts
 * it, else the wrapped model's.
 */
export class WrappedLLM extends BaseLLM {
  readonly #chain: ModelChain;
  readonly #llm: BaseLLM | undefined;

  /**
   * @param llm the model the middleware passes calls on to; none for middleware that answers every call
   * @param genParams the defaults when there is no `llm` (else its own are used)
   */
  constructor(llm: BaseLLM | undefined, middleware: readonly ModelMiddleware[], genParams?: GenParams) {
    checkModel(llm, new.target.name);
    super(genParams);
    this.#llm = llm;
    this.#chain = new ModelChain(llm, middleware, new.target.name);
    adoptParams(this, llm);
  }

  /** The wrapped model's name (`llm.model`), when it has one: what logs, traces and prices use. */
  get model(): string | undefined {
    return modelName(this.#llm);
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): string {
    return driveSync(this.#chain.reply({ mode: 'text', messages, params })).content;
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): ModelReply {
    return driveSync(this.#chain.reply({ mode: 'reply', messages, params }));
  }

  override streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): Generator<StreamChunk, void, undefined> {
    return chunksSync(this.#chain.stream({ mode: 'reply', messages, params }));
  }

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return this.#chain.usage?.getUsage(sessionId) ?? emptyUsage();
  }

  getTotalUsage(): TokenUsage {
    return this.#chain.usage?.getTotalUsage() ?? emptyUsage();
  }

  getLastUsage(): TokenUsage | undefined {
    return this.#chain.usage?.getLastUsage();
  }

  resetUsage(sessionId?: SessionId): void {
    this.#chain.usage?.resetUsage(sessionId);
  }
}

/** The async twin of {@link WrappedLLM}. */
export class AsyncWrappedLLM extends AsyncBaseLLM {
  readonly #chain: ModelChain;
  readonly #llm: AsyncBaseLLM | undefined;

  /**
   * @param llm the model the middleware passes calls on to; none for middleware that answers every call
   * @param genParams the defaults when there is no `llm` (else its own are used)
   */
  constructor(llm: AsyncBaseLLM | undefined, middleware: readonly ModelMiddleware[], genParams?: GenParams) {
    checkModel(llm, new.target.name);
    super(genParams);
    this.#llm = llm;
    this.#chain = new ModelChain(llm, middleware, new.target.name);
    adoptParams(this, llm);
  }

  /** The wrapped model's name (`llm.model`), when it has one: what logs, traces and prices use. */
  get model(): string | undefined {
    return modelName(this.#llm);
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    return driveAsync(this.#chain.reply({ mode: 'text', messages, params })).then(contentOf);
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): Promise<ModelReply> {
    return driveAsync(this.#chain.reply({ mode: 'reply', messages, params }));
  }

  override streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    return chunksAsync(this.#chain.stream({ mode: 'reply', messages, params }));
  }

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return this.#chain.usage?.getUsage(sessionId) ?? emptyUsage();
  }

  getTotalUsage(): TokenUsage {
    return this.#chain.usage?.getTotalUsage() ?? emptyUsage();
  }

  getLastUsage(): TokenUsage | undefined {
    return this.#chain.usage?.getLastUsage();
  }

  resetUsage(sessionId?: SessionId): void {
    this.#chain.usage?.resetUsage(sessionId);
  }
}

/**
 * `llm` with `middleware` around its calls, outermost first: a sync model for a `BaseLLM`, an async one for an
 * `AsyncBaseLLM`. Each middleware is written once as steps and serves both.
 *
 * @example
 * const llm = wrapModel(new AsyncGPTAPI({ model: 'gpt-4o' }), redactEmails, logCalls);
 * await new AsyncAgent({ llm }).call('hi');
 */
export function wrapModel(llm: AsyncBaseLLM, ...middleware: ModelMiddleware[]): AsyncWrappedLLM;
export function wrapModel(llm: BaseLLM, ...middleware: ModelMiddleware[]): WrappedLLM;
export function wrapModel(
  llm: BaseLLM | AsyncBaseLLM,
  ...middleware: ModelMiddleware[]
): WrappedLLM | AsyncWrappedLLM {
  if (llm instanceof AsyncBaseLLM) return new AsyncWrappedLLM(llm, middleware);
  if (llm instanceof BaseLLM) return new WrappedLLM(llm, middleware);
  throw new ConfigurationError({ message: 'wrapModel needs a BaseLLM or an AsyncBaseLLM to wrap' });
}
