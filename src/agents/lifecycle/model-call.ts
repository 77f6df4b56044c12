import { runChain, StreamHandover } from '../../core/interceptors';
import { driveAsync, driveSync, promiseNotAllowed, type Steps } from '../../core/steps';
import { AsyncBaseLLM, BaseLLM } from '../../llms/base-llm';
import type { ModelReply } from '../../llms/types';
import type { ChatMessage } from '../../schema/chat-message';
import { ConfigurationError } from '../../schema/errors';
import { isThenable } from '../../utils/is';
import { ModelContext } from '../interceptors/model-context';
import type { Turn } from './turn';

/*
 * A model call of a built-in forward, through the model-call hooks of its agent call (`turn.modelLinks`: the
 * concerns that apply — summaries, tracing, the durable journal, the budget — then users' interceptors). The
 * hooks get a `ModelContext`; what `next()` gives them is a `ModelReply` (a model answering text through `chat`
 * is given as a reply without tool calls). A streamed request's chain is driven by the streaming forward itself
 * (`StreamedRequest`): its end hands the model's stream out, the forward relays it, and gives the chain the
 * reply the stream made.
 */

/** What a built-in forward needs of a model, sync or async. */
interface ModelLike {
  chat(messages: ChatMessage[], params?: object): unknown;
  generate(messages: ChatMessage[], params?: object): unknown;
  streamChat?(messages: ChatMessage[], params?: object): unknown;
}

/** Whether a model's `generate` is its own rather than the base classes' (`chat` wrapped). */
export function generatesReplies(llm: unknown): boolean {
  const generate = (llm as ModelLike).generate;
  return generate !== BaseLLM.prototype.generate && generate !== AsyncBaseLLM.prototype.generate;
}

/** A model's answer as a reply: text (`chat`) becomes a reply without tool calls. */
export function toModelReply(answer: unknown): ModelReply {
  return typeof answer === 'string' ? { content: answer, toolCalls: [] } : (answer as ModelReply);
}

/**
 * Asks the model (`generate` when it has its own or tools are offered, else `chat`): its answer, or a promise
 * of it.
 */
export function askModel(llm: unknown, prompt: ChatMessage[], params: object): unknown {
  const model = llm as ModelLike;
  return (params as { tools?: unknown }).tools !== undefined || generatesReplies(model)
    ? model.generate(prompt, params)
    : model.chat(prompt, params);
}

/** The end of a model call's chain: the request itself, with the context's prompt and params. */
function* askSteps(context: ModelContext): Steps<ModelReply> {
  const answer = askModel(context.llm, context.messages, context.params);
  return toModelReply(isThenable(answer) ? yield answer : answer);
}

/**
 * A model call of `turn`'s built-in forward through its model-call hooks: the reply (sync agents) or a promise
 * of it. Without hooks, the model is asked directly.
 */
export function modelCall(
  turn: Turn,
  llm: unknown,
  prompt: ChatMessage[],
  params: object,
  sync: boolean,
): unknown {
  if (turn.modelLinks.length === 0) return askModel(llm, prompt, params);
  const context = new ModelContext(turn, llm, prompt, params as Record<string, unknown>, false);
  const steps = runChain(turn.modelLinks, 0, context, askSteps, sync ? 'sync' : 'async');
  return sync ? driveSync(steps) : driveAsync(steps);
}

/** The end of a streamed model call's chain: the model's stream, handed to the forward that drives the chain. */
function* streamSteps(context: ModelContext): Steps<ModelReply> {
  const model = context.llm as ModelLike;
  if (typeof model.streamChat !== 'function') {
    throw new ConfigurationError({
      message: `${context.agent.name}: its model cannot stream (no streamChat)`,
    });
  }
  return (yield new StreamHandover(model.streamChat(context.messages, context.params))) as ModelReply;
}

/**
 * A streamed model call of a built-in streaming forward, through its agent call's model-call hooks. Opened,
 * it has the model's `stream` to relay, or, when a hook answered without one (a replayed durable call, a cache),
 * the reply (`answered`). Once the stream has ended the forward gives the chain the reply it made (`finish`);
 * when it failed or was left, the error (`fail`, with the text it gave so far).
 */
export class StreamedRequest {
  stream: unknown = undefined;
  answered: ModelReply | undefined = undefined;
  readonly #chain: Steps<ModelReply> | undefined;
  readonly #context: ModelContext | undefined;

  constructor(turn: Turn | undefined, llm: unknown, prompt: ChatMessage[], params: object, sync: boolean) {
    if (turn === undefined || turn.modelLinks.length === 0) {
      this.#chain = undefined;
      this.#context = undefined;
      this.stream = (llm as ModelLike).streamChat!(prompt, params);
      return;
    }
    this.#context = new ModelContext(turn, llm, prompt, params as Record<string, unknown>, true);
    this.#chain = runChain(turn.modelLinks, 0, this.#context, streamSteps, sync ? 'sync' : 'async');
  }

  /** Runs the chain up to the stream (sync forwards: a hook's promise is refused). */
  openSync(): this {
    if (this.#chain !== undefined) this.#settle(this.#advanceSync(this.#chain.next()));
    return this;
  }

  /** Runs the chain up to the stream, awaiting its hooks' promises. */
  async open(): Promise<this> {
    if (this.#chain !== undefined) this.#settle(await this.#advance(this.#chain.next()));
    return this;
  }

  /** The stream ended with `reply`: the reply as the chain's hooks leave it. */
  finishSync(reply: ModelReply): ModelReply {
    if (this.#chain === undefined) return reply;
    return this.#done(this.#advanceSync(this.#chain.next(reply)));
  }

  async finish(reply: ModelReply): Promise<ModelReply> {
    if (this.#chain === undefined) return reply;
    return this.#done(await this.#advance(this.#chain.next(reply)));
  }

  /** The stream failed, or was left before its end, having given `partial`: the hooks hear it. */
  failSync(error: unknown, partial: string): void {
    if (this.#chain === undefined) return;
    this.#context!.partial = partial;
    try {
      this.#advanceSync(this.#chain.throw(error));
    } catch {
      // the forward throws the stream's own error
    }
  }

  async fail(error: unknown, partial: string): Promise<void> {
    if (this.#chain === undefined) return;
    this.#context!.partial = partial;
    try {
      await this.#advance(this.#chain.throw(error));
    } catch {
      // the forward throws the stream's own error
    }
  }

  #settle(step: IteratorResult<unknown, ModelReply>): void {
    if (step.done) this.answered = step.value;
    else this.stream = (step.value as StreamHandover).stream;
  }

  #done(step: IteratorResult<unknown, ModelReply>): ModelReply {
    if (!step.done) {
      throw new ConfigurationError({ message: 'a model-call hook asked for the stream twice' });
    }
    return step.value;
  }

  #advanceSync(step: IteratorResult<unknown, ModelReply>): IteratorResult<unknown, ModelReply> {
    const chain = this.#chain!;
    while (!step.done && isThenable(step.value)) step = chain.throw(promiseNotAllowed(step.value));
    return step;
  }

  async #advance(step: IteratorResult<unknown, ModelReply>): Promise<IteratorResult<unknown, ModelReply>> {
    const chain = this.#chain!;
    while (!step.done && isThenable(step.value)) {
      let value: unknown;
      try {
        value = await step.value;
      } catch (error) {
        step = chain.throw(error);
        continue;
      }
      step = chain.next(value);
    }
    return step;
  }
}
