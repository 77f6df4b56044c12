import { promiseNotAllowed, type Steps } from '../core/steps';
import { ConfigurationError } from '../schema/errors';
import { isThenable } from '../utils/is';
import type { RequestMode } from './llm-request';
import type { ChatMessage, LLMCallParams, ModelReply, StreamChunk } from './types';
import { type UsageReporting, usageOf } from './wrapped-usage';

/*
 * Model middleware: what a model wrapper does around the model's calls (a cache, a recorder, a fallback chain),
 * written once for sync and async models in the step protocol of `core/steps.ts`. A hook `yield`s only what
 * needs the caller's kind of execution — the promise of an async model — so the same generator serves
 * `BaseLLM.chat()` (driven by `driveSync`, which refuses a promise) and `AsyncBaseLLM.chat()` (driven by
 * `driveAsync`). A stream hook yields its chunks too, told apart from promises by having no `then`.
 */

/** What a wrapped model is asked: the call's messages and params, and whether it wants the text alone. */
export interface ModelRequest {
  /** `'text'` for `chat()` (only the reply's content reaches the caller), `'reply'` for `generate()` and `streamChat()`. */
  readonly mode: RequestMode;
  readonly messages: ChatMessage[];
  readonly params: LLMCallParams | undefined;
}

/**
 * A stream as a stream hook reads it, one chunk at a time: `const step = yield* source.next()`. The streams a
 * hook opened with `next` are closed when it ends (a reader that leaves early lets the model's request go);
 * `yield* source.close()` closes one sooner.
 */
export interface ChunkSource {
  next(): Steps<IteratorResult<StreamChunk, void>>;
  close(): Steps<void>;
}

/** A stream hook's steps: they `yield` the chunks the stream gives, and (inside `yield*`) a model's promises. */
export type ChunkSteps = Generator<unknown, void, unknown>;

/** `next` of a whole-reply hook: the rest of the chain's answer to `request` (this one by default). */
export type NextReply = (request?: ModelRequest) => Steps<ModelReply>;

/** `next` of a stream hook: the rest of the chain's stream for `request` (this one by default). */
export type NextStream = (request?: ModelRequest) => ChunkSource;

/**
 * A concern around a model's calls, written once for sync and async models as steps (see `core/steps.ts`):
 * `call` for whole replies (`chat()`, `generate()`), `stream` for `streamChat()`. A hook gets the request and
 * `next`; it may call `next` (with a changed request), call it again, or answer itself. A model with
 * middleware is made with {@link wrapModel}. Hooks it lacks pass the call straight on.
 *
 * @example
 * const shout: ModelMiddleware = {
 *   name: 'shout',
 *   *call(request, next) {
 *     const reply = yield* next();
 *     return { ...reply, content: reply.content.toUpperCase() };
 *   },
 * };
 * const llm = wrapModel(new AsyncGPTAPI({ model: 'gpt-4o' }), shout); // an AsyncBaseLLM
 */
export interface ModelMiddleware {
  /** For error messages. */
  readonly name: string;
  /** A whole reply: `chat()` (mode `'text'`) and `generate()` (mode `'reply'`). */
  call?(request: ModelRequest, next: (request?: ModelRequest) => Steps<ModelReply>): Steps<ModelReply>;
  /**
   * A stream: `yield` each chunk to give it to the reader, `yield* source.next()` to read the stream `next`
   * opened. A reader that leaves early ends the hook through its `finally` blocks.
   */
  stream?(
    request: ModelRequest,
    next: (request?: ModelRequest) => ChunkSource,
  ): Generator<unknown, void, unknown>;
}

/**
 * A middleware that answers in the model's place or counts usage itself (the replay, the fallback chain): the
 * wrapped model's usage methods (`getUsage()`, ...) read its `usage`, that of the outermost one that has it.
 */
export interface CountingMiddleware extends ModelMiddleware {
  readonly usage: UsageReporting;
}

/** Any model, sync or async: what the chain asks at its end (a model's methods give values or promises). */
interface AnyModel {
  chat(messages: ChatMessage[], params?: LLMCallParams): unknown;
  generate(messages: ChatMessage[], params?: LLMCallParams): unknown;
  streamChat(messages: ChatMessage[], params?: LLMCallParams): unknown;
}

/** The value of a step that may give a promise: `const value = yield* awaited(store.get(key))`. */
export function* awaited<T>(value: T | PromiseLike<T>): Steps<T> {
  return (isThenable(value) ? yield value : value) as T;
}

/** The whole reply of `llm` to `request`: its `generate()`, or for `'text'` its `chat()`'s text as a reply. */
export function* askModel(llm: unknown, request: ModelRequest): Steps<ModelReply> {
  // The thenable checks are written out (not `awaited`): this runs on every call of every wrapper.
  const model = llm as AnyModel;
  if (request.mode === 'text') {
    const text = model.chat(request.messages, request.params);
    return { content: (isThenable(text) ? yield text : text) as string, toolCalls: [] };
  }
  const reply = model.generate(request.messages, request.params);
  return (isThenable(reply) ? yield reply : reply) as ModelReply;
}

/** The stream of `llm` for `request`, read one chunk at a time (a sync model's steps never yield). */
export function streamOf(llm: unknown, request: ModelRequest): ChunkSource {
  const stream = (llm as AnyModel).streamChat(request.messages, request.params) as
    | AsyncIterable<StreamChunk>
    | Iterable<StreamChunk>;
  const iterator =
    Symbol.asyncIterator in stream ? stream[Symbol.asyncIterator]() : stream[Symbol.iterator]();
  return new IteratorSource(iterator);
}

class IteratorSource implements ChunkSource {
  readonly #iterator: Iterator<StreamChunk, void> | AsyncIterator<StreamChunk, void>;
  /** Ended, failed or closed: closing again lets nothing go. */
  #finished = false;

  constructor(iterator: Iterator<StreamChunk, void> | AsyncIterator<StreamChunk, void>) {
    this.#iterator = iterator;
  }

  *next(): Steps<IteratorResult<StreamChunk, void>> {
    try {
      let step = this.#iterator.next();
      if (isThenable(step)) step = (yield step) as IteratorResult<StreamChunk, void>;
      if (step.done) this.#finished = true;
      return step;
    } catch (error) {
      this.#finished = true;
      throw error;
    }
  }

  *close(): Steps<void> {
    if (this.#finished) return;
    this.#finished = true;
    yield* awaited(this.#iterator.return?.());
  }
}

/** The chunks of a stream hook's steps, read one at a time; what else they yield is passed up to the driver. */
class StepsSource implements ChunkSource {
  readonly #steps: ChunkSteps;

  constructor(steps: ChunkSteps) {
    this.#steps = steps;
  }

  next(): Steps<IteratorResult<StreamChunk, void>> {
    return untilChunk(this.#steps, this.#steps.next());
  }

  *close(): Steps<void> {
    yield* untilChunk(this.#steps, this.#steps.return(undefined));
  }
}

/**
 * Runs `steps` from `step` until they give a chunk (or end): their promises are yielded to the driver and
 * what it answers goes back in.
 */
function* untilChunk(
  steps: ChunkSteps,
  step: IteratorResult<unknown, void>,
): Steps<IteratorResult<StreamChunk, void>> {
  while (!step.done && isThenable(step.value)) {
    let value: unknown;
    try {
      value = yield step.value;
    } catch (error) {
      step = steps.throw(error);
      continue;
    }
    step = steps.next(value);
  }
  return step as IteratorResult<StreamChunk, void>;
}

/** Steps that fail with `error` when they are run. */
// biome-ignore lint/correctness/useYield: they fail before they could yield
function* thrown(error: unknown): Generator<never, never, unknown> {
  throw error;
}

/** The end of a chain that has no model: its middleware answers every call. */
function noModel(name: string): never {
  throw new ConfigurationError({
    message: `${name}: the middleware passed a call on, but no model is wrapped`,
  });
}

/** A model (or none) and its middleware, outermost first: what a wrapped model's calls run through. */
export class ModelChain {
  readonly #llm: unknown;
  readonly #name: string;
  readonly #calls: readonly ModelMiddleware[];
  readonly #streams: readonly ModelMiddleware[];
  /** The outermost counting middleware's usage, else the model's (see {@link CountingMiddleware}). */
  readonly usage: UsageReporting | undefined;

  /** @param name the wrapper's class name, for error messages */
  constructor(llm: unknown, middleware: readonly ModelMiddleware[], name: string) {
    for (const [index, each] of middleware.entries()) {
      if (
        each === null ||
        typeof each !== 'object' ||
        (each.call === undefined && each.stream === undefined)
      ) {
        throw new ConfigurationError({
          message: `${name}: middleware[${index}] is not model middleware (an object with call or stream steps)`,
        });
      }
    }
    this.#llm = llm;
    this.#name = name;
    this.#calls = middleware.filter((each) => each.call !== undefined);
    this.#streams = middleware.filter((each) => each.stream !== undefined);
    const counting = middleware.find((each) => (each as Partial<CountingMiddleware>).usage !== undefined);
    this.usage = (counting as CountingMiddleware | undefined)?.usage ?? usageOf(llm);
  }

  /** The chain's whole reply to `request`, as steps. */
  reply(request: ModelRequest): Steps<ModelReply> {
    try {
      return this.#replyAt(0, request);
    } catch (error) {
      // A hook that throws before it gives its steps fails the call as its steps would (an async call rejects).
      return thrown(error);
    }
  }

  #replyAt(index: number, request: ModelRequest): Steps<ModelReply> {
    const calls = this.#calls;
    if (index === calls.length)
      return this.#llm === undefined ? noModel(this.#name) : askModel(this.#llm, request);
    return calls[index]!.call!(request, (next) => this.#replyAt(index + 1, next ?? request));
  }

  /** The chain's stream for `request`: steps that yield its chunks (and the model's promises). */
  stream(request: ModelRequest): ChunkSteps {
    try {
      return this.#streamAt(0, request);
    } catch (error) {
      return thrown(error);
    }
  }

  #streamAt(index: number, request: ModelRequest): ChunkSteps {
    const streams = this.#streams;
    if (index < streams.length) return this.#hook(streams[index]!, index, request);
    return relayChunks(this.#sourceAt(index, request));
  }

  /** A stream hook's steps; the streams it opened with `next` are closed when it ends, however it ends. */
  *#hook(middleware: ModelMiddleware, index: number, request: ModelRequest): ChunkSteps {
    let opened: ChunkSource[] | undefined;
    try {
      yield* middleware.stream!(request, (next) => {
        const source = this.#sourceAt(index + 1, next ?? request);
        if (opened === undefined) opened = [source];
        else opened.push(source);
        return source;
      });
    } finally {
      if (opened !== undefined) for (const source of opened) yield* source.close();
    }
  }

  #sourceAt(index: number, request: ModelRequest): ChunkSource {
    if (index < this.#streams.length) return new StepsSource(this.#streamAt(index, request));
    if (this.#llm === undefined) return noModel(this.#name);
    return streamOf(this.#llm, request);
  }
}

/**
 * Gives `source`'s chunks on, each first shown to `seen` (whose steps, when it returns any, run before the chunk
 * is given). A reader that leaves early closes the source.
 */
export function* relayChunks(
  source: ChunkSource,
  seen?: (chunk: StreamChunk) => Steps<unknown> | undefined,
): ChunkSteps {
  try {
    for (;;) {
      const step = yield* source.next();
      if (step.done) return;
      const steps = seen?.(step.value);
      if (steps !== undefined) yield* steps;
      yield step.value;
    }
  } finally {
    yield* source.close();
  }
}

/** The chunks of a chain's stream, read synchronously: a promise is refused as `driveSync` refuses it. */
export function* chunksSync(steps: ChunkSteps): Generator<StreamChunk, void, undefined> {
  let step = steps.next();
  try {
    while (!step.done) {
      if (isThenable(step.value)) step = steps.throw(promiseNotAllowed(step.value));
      else {
        yield step.value as StreamChunk;
        step = steps.next();
      }
    }
  } finally {
    // A reader that left early: the hooks' `finally` blocks run (their promises refused likewise).
    if (!step.done) {
      let closing = steps.return(undefined);
      while (!closing.done)
        closing = isThenable(closing.value) ? steps.throw(promiseNotAllowed(closing.value)) : steps.next();
    }
  }
}

/** The chunks of a chain's stream, its promises awaited. */
export async function* chunksAsync(steps: ChunkSteps): AsyncGenerator<StreamChunk, void, undefined> {
  let step = steps.next();
  try {
    while (!step.done) {
      if (isThenable(step.value)) step = await settle(steps, step.value);
      else {
        yield step.value as StreamChunk;
        step = steps.next();
      }
    }
  } finally {
    if (!step.done) {
      let closing = steps.return(undefined);
      while (!closing.done)
        closing = isThenable(closing.value) ? await settle(steps, closing.value) : steps.next();
    }
  }
}

/** Sends what `promise` settles to into `steps`: its value, or its failure thrown. */
async function settle(
  steps: ChunkSteps,
  promise: PromiseLike<unknown>,
): Promise<IteratorResult<unknown, void>> {
  let value: unknown;
  try {
    value = await promise;
  } catch (error) {
    return steps.throw(error);
  }
  return steps.next(value);
}
