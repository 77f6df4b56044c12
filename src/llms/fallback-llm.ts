import type { Steps } from '../core/steps';
import { ConfigurationError, LLMRequestError } from '../schema/errors';
import { type SessionId, type SessionKey, sessionKey } from '../schema/session';
import type { AsyncBaseLLM, BaseLLM } from './base-llm';
import { CircuitBreaker } from './circuit-breaker';
import {
  askModel,
  type ChunkSource,
  type ChunkSteps,
  type CountingMiddleware,
  type ModelRequest,
  streamOf,
} from './model-middleware';
import { toRequestError } from './request-retry';
import type { ChatMessage, LLMCallParams, ModelReply, StreamChunk } from './types';
import type { TokenUsage } from './usage';
import { AsyncWrappedLLM, adoptParams, WrappedLLM } from './wrapped-llm';
import { modelName, sumUsage, type UsageReporting, usageOf } from './wrapped-usage';

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
  /**
   * Milliseconds a model that failed with a retryable error is skipped (a circuit breaker): calls go straight
   * to the next model until then, and afterwards one call tries it again (it stays skipped if it fails
   * again). When every model is being skipped, the one whose cool-down ends first is asked. 0 asks every
   * model in order on every call. @default 30000
   */
  coolDownMs?: number | undefined;
  /** The clock of the cool-down, in ms (tests pass their own). @default Date.now */
  now?: (() => number) | undefined;
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

/**
 * The error when every model asked failed: each failure (and the models skipped while cooling down), the
 * last one's status, the last error as cause.
 */
function allFailed(
  chain: readonly AnyModel[],
  failures: readonly { index: number; failure: LLMRequestError }[],
  skipped: readonly number[],
  last: unknown,
): LLMRequestError {
  const each = failures.map(
    ({ index, failure }, position) => `${position + 1}. ${nameOf(chain[index]!)}: ${failure.message}`,
  );
  const final = failures.at(-1)?.failure;
  const cooling =
    skipped.length === 0
      ? ''
      : ` (skipped, as they failed within their cool-down: ${skipped.map((index) => nameOf(chain[index]!)).join(', ')})`;
  return new LLMRequestError({
    message: `every model of the fallback chain failed: ${each.join('; ')}${cooling}`,
    status: final?.status,
    retryable: true,
    attempts: failures.reduce((sum, { failure }) => sum + failure.attempts, 0),
    cause: last,
  });
}

/** Sessions whose latest answering model a chain remembers (for `lastModelOf`); the oldest go first. */
const REMEMBERED_SESSIONS = 1024;

function answeredBy(chain: FallbackChain, index: number): AnsweredBy {
  return { index, name: nameOf(chain.models[index]!) };
}

/**
 * One call's way down a chain: the models the breaker lets it ask, in order, and the failures so far. The
 * call asks `index`, then reports the outcome: {@link answered}, or {@link failed}, which moves on to the next
 * model or throws. The call's `onRetry` is told which model is asked next (a budget counts it, or refuses it).
 */
class ChainCall {
  readonly #chain: FallbackChain;
  readonly #params: LLMCallParams | undefined;
  readonly #order: number[];
  #position = 0;
  readonly #failures: { index: number; failure: LLMRequestError }[] = [];

  constructor(chain: FallbackChain, params: LLMCallParams | undefined) {
    this.#chain = chain;
    this.#params = params;
    this.#order = chain.breaker.plan();
  }

  /** The model to ask now. */
  get index(): number {
    return this.#order[this.#position]!;
  }

  /** The model asked now answered: remembered as the one that did, for the call's session too. */
  answered(): AnsweredBy {
    const chain = this.#chain;
    const index = this.index;
    chain.breaker.succeeded(index);
    this.#releaseFrom(this.#position + 1);
    const by = answeredBy(chain, index);
    chain.lastModel = by;
    const key = sessionKey(this.#params?.sessionId ?? 0);
    const answers = chain.answers;
    answers.delete(key);
    if (answers.size >= REMEMBERED_SESSIONS) answers.delete(answers.keys().next().value!);
    answers.set(key, by);
    return by;
  }

  /**
   * The model asked now failed with `error`. A retryable failure opens its circuit and moves on to the next
   * model (told to `onFallback` and `onRetry`); anything else, or a failure of the last model, is thrown.
   */
  failed(error: unknown): void {
    const chain = this.#chain;
    const index = this.index;
    const failure = failureOf(error, chain.models[index]!, this.#params?.signal);
    if (failure === undefined) {
      // An abort or a failure of the request itself (a 400, a 401): it says nothing about the model being down.
      this.#releaseFrom(this.#position);
      throw error;
    }
    chain.breaker.failed(index);
    this.#failures.push({ index, failure });
    if (this.#position === this.#order.length - 1) {
      const skipped = chain.models.map((_, i) => i).filter((i) => !this.#order.includes(i));
      throw allFailed(chain.models, this.#failures, skipped, error);
    }
    this.#position++;
    const to = answeredBy(chain, this.index);
    chain.options.onFallback?.({ from: answeredBy(chain, index), to, error: failure });
    try {
      this.#params?.onRetry?.({ model: to.name });
    } catch (refused) {
      this.#releaseFrom(this.#position);
      throw refused;
    }
  }

  /** Models the call planned from `position` on but will not ask: a trial it took is handed back. */
  #releaseFrom(position: number): void {
    for (let i = position; i < this.#order.length; i++) this.#chain.breaker.released(this.#order[i]!);
  }
}

/**
 * The fallback chain as model middleware: it answers every call itself, from the first of its models that
 * does (see {@link FallbackLLM}). Its usage is the models' summed.
 */
class FallbackChain implements CountingMiddleware, UsageReporting {
  readonly name = 'fallback';
  readonly models: readonly AnyModel[];
  readonly options: FallbackOptions;
  readonly breaker: CircuitBreaker;
  lastModel: AnsweredBy | undefined;
  readonly answers = new Map<SessionKey, AnsweredBy>();
  readonly usage: UsageReporting = this;

  constructor(models: readonly AnyModel[], options: FallbackOptions, owner: string) {
    checkModels(models, owner);
    this.models = [...models];
    this.options = options;
    this.breaker = new CircuitBreaker(models.length, { coolDownMs: options.coolDownMs, now: options.now });
  }

  *call(request: ModelRequest): Steps<ModelReply> {
    const attempt = new ChainCall(this, request.params);
    for (;;) {
      let reply: ModelReply;
      try {
        reply = yield* askModel(this.models[attempt.index], request);
      } catch (error) {
        attempt.failed(error);
        continue;
      }
      const by = attempt.answered();
      if (request.mode === 'text') return reply;
      const answered: FallbackReply = { ...reply, answeredBy: { ...by } };
      return answered;
    }
  }

  /** A stream moves on to the next model only when the failure came before its first chunk. */
  *stream(request: ModelRequest): ChunkSteps {
    const attempt = new ChainCall(this, request.params);
    let source: ChunkSource | undefined;
    let step: IteratorResult<StreamChunk, void>;
    for (;;) {
      source = undefined;
      try {
        source = streamOf(this.models[attempt.index], request);
        step = yield* source.next();
        break;
      } catch (error) {
        if (source !== undefined) yield* source.close();
        attempt.failed(error);
      }
    }
    attempt.answered();
    try {
      while (!step.done) {
        yield step.value;
        step = yield* source.next();
      }
    } finally {
      if (!step.done) yield* source.close();
    }
  }

  /** Which model gave the latest answer on a session (of the last 1,024 sessions asked). */
  lastModelOf(sessionId: SessionId): AnsweredBy | undefined {
    return this.answers.get(sessionKey(sessionId));
  }

  getUsage(sessionId: SessionId = 0): TokenUsage {
    return sumUsage(this.models, (usage) => usage.getUsage(sessionId));
  }

  getTotalUsage(): TokenUsage {
    return sumUsage(this.models, (usage) => usage.getTotalUsage());
  }

  /** The latest call's usage, from the model that answered it. */
  getLastUsage(): TokenUsage | undefined {
    const last = this.lastModel && this.models[this.lastModel.index];
    return usageOf(last)?.getLastUsage();
  }

  resetUsage(sessionId?: SessionId): void {
    for (const model of this.models) usageOf(model)?.resetUsage(sessionId);
  }
}

/**
 * A synchronous model that asks `models` in order: when one fails with a retryable error (after its own
 * retries), the next is asked. A non-retryable failure (a 400, a 401, a malformed reply) is thrown as it is.
 * When every model fails, an `LLMRequestError` lists each failure. A stream moves to the next model only when
 * the failure came before its first chunk.
 *
 * A model that failed so is skipped for `coolDownMs` (30 s by default): calls go straight to the next one
 * instead of paying for its retries again, and afterwards one call tries it again (see `FallbackOptions`).
 *
 * `lastModel` (and `answeredBy` on a `generate()` reply, `lastModelOf(sessionId)` per session) says which
 * model answered; agents report it as `model` on their `llmEnd` events. `genParams` is the first model's;
 * per-call params go to every model, and `onRetry` is told before each model after the first (a budget
 * counts every model tried). Usage (`getUsage()`, ...) is summed over the models.
 */
export class FallbackLLM extends WrappedLLM {
  readonly models: readonly BaseLLM[];
  readonly options: FallbackOptions;
  /** Which models are skipped while they cool down after a failure. */
  readonly breaker: CircuitBreaker;
  readonly #chain: FallbackChain;

  constructor(models: readonly BaseLLM[], options: FallbackOptions = {}) {
    const chain = new FallbackChain(models, options, 'FallbackLLM');
    super(undefined, [chain]);
    adoptParams(this, models[0]);
    this.models = chain.models as readonly BaseLLM[];
    this.options = options;
    this.breaker = chain.breaker;
    this.#chain = chain;
  }

  /** Which model gave the latest answer (or first chunk); undefined before the first. */
  get lastModel(): AnsweredBy | undefined {
    return this.#chain.lastModel;
  }

  /** Which model gave the latest answer on a session (of the last 1,024 sessions asked). */
  lastModelOf(sessionId: SessionId = 0): AnsweredBy | undefined {
    return this.#chain.lastModelOf(sessionId);
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): FallbackReply {
    return super.generate(messages, params) as FallbackReply;
  }
}

/**
 * The async twin of {@link FallbackLLM}: asks `models` in order, moving on after a retryable failure and
 * skipping a model that failed so within `coolDownMs`. An abort of the call's `signal` is never a reason to
 * try the next model: it ends the call.
 */
export class AsyncFallbackLLM extends AsyncWrappedLLM {
  readonly models: readonly AsyncBaseLLM[];
  readonly options: FallbackOptions;
  /** Which models are skipped while they cool down after a failure (shared by the calls at once). */
  readonly breaker: CircuitBreaker;
  readonly #chain: FallbackChain;

  constructor(models: readonly AsyncBaseLLM[], options: FallbackOptions = {}) {
    const chain = new FallbackChain(models, options, 'AsyncFallbackLLM');
    super(undefined, [chain]);
    adoptParams(this, models[0]);
    this.models = chain.models as readonly AsyncBaseLLM[];
    this.options = options;
    this.breaker = chain.breaker;
    this.#chain = chain;
  }

  /** Which model gave the latest answer (or first chunk); undefined before the first. */
  get lastModel(): AnsweredBy | undefined {
    return this.#chain.lastModel;
  }

  /** Which model gave the latest answer on a session (of the last 1,024 sessions asked). */
  lastModelOf(sessionId: SessionId = 0): AnsweredBy | undefined {
    return this.#chain.lastModelOf(sessionId);
  }

  override generate(messages: ChatMessage[], params?: LLMCallParams): Promise<FallbackReply> {
    return super.generate(messages, params) as Promise<FallbackReply>;
  }
}
