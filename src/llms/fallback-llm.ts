import { ConfigurationError, LLMRequestError } from '../schema/errors';
import type { SessionId } from '../schema/session';
import { AsyncBaseLLM, BaseLLM } from './base-llm';
import { toRequestError } from './request-retry';
import type { ChatMessage, LLMCallParams, ModelReply, ResolvedGenParams, StreamChunk } from './types';
import type { TokenUsage } from './usage';
import { modelName, sumUsage, usageOf } from './wrapped-usage';

/** Which model of a fallback chain answered. */
export interface AnsweredBy {
  /** Its place in the chain (0: the first model). */
  index: number;
  /** Its `model` name when it has one, else its class name. */
  name: string;
}

/** A reply of `FallbackLLM.generate()`: the model's reply and which model gave it. */
export interface FallbackReply extends ModelReply {
  answeredBy: AnsweredBy;
}

/** What `onFallback` is told: the model that failed, the one tried next, and the failure. */
export interface FallbackEvent {
  from: AnsweredBy;
  to: AnsweredBy;
  error: LLMRequestError;
}

/** Options of {@link FallbackLLM} and {@link AsyncFallbackLLM}. */
export interface FallbackOptions {
  /** Told every time a model failed with a retryable error and the next one is tried (for logs and metrics). */
  onFallback?: ((event: FallbackEvent) => void) | undefined;
}

type AnyModel = BaseLLM | AsyncBaseLLM;

function nameOf(llm: AnyModel): string {
  return modelName(llm) ?? llm.constructor.name;
}

function checkModels(models: readonly unknown[], owner: string): void {
  if (!Array.isArray(models) || models.length === 0) {
    throw new ConfigurationError({ message: `${owner} needs a non-empty list of models` });
  }
  models.forEach((model, index) => {
    if (typeof (model as { chat?: unknown } | null)?.chat !== 'function') {
      throw new ConfigurationError({
        message: `${owner}: models[${index}] is not a model (it has no chat method)`,
      });
    }
  });
}

/**
 * What to do about a model's failure: `next` when it is retryable (429, 408, 5xx, a connection failure, a
 * timeout: the model's own retries are spent) and a later model exists; otherwise the error as it is.
 */
function failureOf(
  error: unknown,
  llm: AnyModel,
  signal: AbortSignal | undefined,
): LLMRequestError | undefined {
  if (signal?.aborted) return undefined;
  const failure = toRequestError(error, nameOf(llm), 1);
  return failure.retryable ? failure : undefined;
}

/** The error when every model failed: each model's failure, the last one's status, the last error as cause. */
function allFailed(
  chain: readonly AnyModel[],
  failures: readonly LLMRequestError[],
  last: unknown,
): LLMRequestError {
  const each = failures.map((failure, index) => `${index + 1}. ${nameOf(chain[index]!)}: ${failure.message}`);
  const final = failures.at(-1);
  return new LLMRequestError({
    message: `every model of the fallback chain failed: ${each.join('; ')}`,
    status: final?.status,
    retryable: true,
    attempts: failures.reduce((sum, failure) => sum + failure.attempts, 0),
    cause: last,
  });
}

/** Shared by the sync and async chains: the models, who answered last, usage summed over the models. */
interface Chain<M extends AnyModel> {
  readonly models: readonly M[];
  readonly options: FallbackOptions;
}

function answeredBy(chain: Chain<AnyModel>, index: number): AnsweredBy {
  return { index, name: nameOf(chain.models[index]!) };
}

/**
 * The next model after a retryable failure of model `index`, or the error to throw. The call's `onRetry` is
 * told which model is asked next (a budget counts it, or refuses it).
 */
function next(
  chain: Chain<AnyModel>,
  index: number,
  error: unknown,
  failures: LLMRequestError[],
  params: LLMCallParams | undefined,
): void {
  const failure = failureOf(error, chain.models[index]!, params?.signal);
  if (failure === undefined) throw error;
  failures.push(failure);
  if (index === chain.models.length - 1) throw allFailed(chain.models, failures, error);
  const to = answeredBy(chain, index + 1);
  chain.options.onFallback?.({ from: answeredBy(chain, index), to, error: failure });
  params?.onRetry?.({ model: to.name });
}

/**
 * A synchronous model that asks `models` in order: when one fails with a retryable error (after its own
 * retries), the next is asked. A non-retryable failure (a 400, a 401, a malformed reply) is thrown as it is.
 * When every model fails, an `LLMRequestError` lists each failure. A stream moves to the next model only when
 * the failure came before its first chunk.
 *
 * `lastModel` (and `answeredBy` on a `generate()` reply) says which model answered. `genParams` is the first
 * model's; per-call params go to every model, and `onRetry` is told before each model after the first (a
 * budget counts every model tried). Usage (`getUsage()`, ...) is summed over the models.
 */
export class FallbackLLM extends BaseLLM implements Chain<BaseLLM> {
  readonly models: readonly BaseLLM[];
  readonly options: FallbackOptions;
  /** Which model gave the latest answer (or first chunk); undefined before the first. */
  lastModel: AnsweredBy | undefined;

  constructor(models: readonly BaseLLM[], options: FallbackOptions = {}) {
    checkModels(models, 'FallbackLLM');
    super();
    this.models = [...models];
    this.options = options;
    (this as { genParams: ResolvedGenParams }).genParams = models[0]!.genParams;
  }

  #run<T>(params: LLMCallParams | undefined, call: (llm: BaseLLM) => T): [T, number] {
    const failures: LLMRequestError[] = [];
    for (let index = 0; ; index++) {
      try {
        const result = call(this.models[index]!);
        this.lastModel = answeredBy(this, index);
        return [result, index];
      } catch (error) {
        next(this, index, error, failures, params);
      }
    }
  }

  chat(messages: ChatMessage[], params?: LLMCallParams): string {
    return this.#run(params, (llm) => llm.chat(messages, params))[0];
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): FallbackReply {
    const [reply, index] = this.#run(params, (llm) => llm.generate(messages, params));
    return { ...reply, answeredBy: answeredBy(this, index) };
  }

  override *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): Generator<StreamChunk, void, undefined> {
    const [[iterator, first], index] = this.#run(params, (llm) => {
      const it = llm.streamChat(messages, params)[Symbol.iterator]();
      return [it, it.next()] as const;
    });
    void index;
    let step = first;
    try {
      while (!step.done) {
        yield step.value;
        step = iterator.next();
      }
    } finally {
      if (!step.done) iterator.return?.();
    }
  }

  /** Summed token usage of one session over the models that count tokens. */
  getUsage(sessionId: SessionId = 0): TokenUsage {
    return sumUsage(this.models, (usage) => usage.getUsage(sessionId));
  }

  /** Summed token usage of every session over the models that count tokens. */
  getTotalUsage(): TokenUsage {
    return sumUsage(this.models, (usage) => usage.getTotalUsage());
  }

  /** The latest call's usage, from the model that answered it. */
  getLastUsage(): TokenUsage | undefined {
    const last = this.lastModel && this.models[this.lastModel.index];
    return usageOf(last)?.getLastUsage();
  }

  /** Forgets one session's usage, or all of it, in every model. */
  resetUsage(sessionId?: SessionId): void {
    for (const model of this.models) usageOf(model)?.resetUsage(sessionId);
  }
}

/**
 * The async twin of {@link FallbackLLM}: asks `models` in order, moving on after a retryable failure. An abort
 * of the call's `signal` is never a reason to try the next model: it ends the call.
 */
export class AsyncFallbackLLM extends AsyncBaseLLM implements Chain<AsyncBaseLLM> {
  readonly models: readonly AsyncBaseLLM[];
  readonly options: FallbackOptions;
  /** Which model gave the latest answer (or first chunk); undefined before the first. */
  lastModel: AnsweredBy | undefined;

  constructor(models: readonly AsyncBaseLLM[], options: FallbackOptions = {}) {
    checkModels(models, 'AsyncFallbackLLM');
    super();
    this.models = [...models];
    this.options = options;
    (this as { genParams: ResolvedGenParams }).genParams = models[0]!.genParams;
  }

  async #run<T>(
    params: LLMCallParams | undefined,
    call: (llm: AsyncBaseLLM) => Promise<T>,
  ): Promise<[T, number]> {
    const failures: LLMRequestError[] = [];
    for (let index = 0; ; index++) {
      try {
        const result = await call(this.models[index]!);
        this.lastModel = answeredBy(this, index);
        return [result, index];
      } catch (error) {
        next(this, index, error, failures, params);
      }
    }
  }

  async chat(messages: ChatMessage[], params?: LLMCallParams): Promise<string> {
    return (await this.#run(params, (llm) => llm.chat(messages, params)))[0];
  }

  override async generate(messages: ChatMessage[], params?: LLMCallParams): Promise<FallbackReply> {
    const [reply, index] = await this.#run(params, (llm) => llm.generate(messages, params));
    return { ...reply, answeredBy: answeredBy(this, index) };
  }

  override async *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    const [[iterator, first]] = await this.#run(params, async (llm) => {
      const it = llm.streamChat(messages, params)[Symbol.asyncIterator]();
      try {
        return [it, await it.next()] as const;
      } catch (error) {
        await it.return?.();
        throw error;
      }
    });
    let step = first;
    try {
      while (!step.done) {
        yield step.value;
        step = await iterator.next();
      }
    } finally {
      if (!step.done) await iterator.return?.();
    }
  }

  /** Summed token usage of one session over the models that count tokens. */
  getUsage(sessionId: SessionId = 0): TokenUsage {
    return sumUsage(this.models, (usage) => usage.getUsage(sessionId));
  }

  /** Summed token usage of every session over the models that count tokens. */
  getTotalUsage(): TokenUsage {
    return sumUsage(this.models, (usage) => usage.getTotalUsage());
  }

  /** The latest call's usage, from the model that answered it. */
  getLastUsage(): TokenUsage | undefined {
    const last = this.lastModel && this.models[this.lastModel.index];
    return usageOf(last)?.getLastUsage();
  }

  /** Forgets one session's usage, or all of it, in every model. */
  resetUsage(sessionId?: SessionId): void {
    for (const model of this.models) usageOf(model)?.resetUsage(sessionId);
  }
}
