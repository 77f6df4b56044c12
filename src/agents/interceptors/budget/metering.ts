import { costOfUsage, type ModelPrice, modelPrice, worstInputRate } from '../../../llms/prices';
import { countTokens, type TokenCountInput } from '../../../llms/token-count';
import { prepareTools } from '../../../llms/tool-calls';
import type { RetryNotice, ToolSpec } from '../../../llms/types';
import type { TokenUsage } from '../../../llms/usage';
import type { ChatMessage, ToolCall } from '../../../schema/chat-message';
import { type BudgetKind, ConfigurationError, LLMRequestError } from '../../../schema/errors';
import { isThenable } from '../../../utils/is';
import type { Asker, Meter } from './meter';

/*
 * A model request of a built-in forward inside a budgeted call. Under a token or dollar limit its prompt is
 * counted (the messages and the tool definitions sent with them), its completion is capped at what is left
 * (`maxNewTokens`), and the request holds its worst case (prompt and capped completion, at the highest rates
 * it may be billed) until it settles: one that could pass a limit, counting what other requests in flight
 * hold, is not made. Every attempt counts: a retry of the client, or the next model of a fallback chain,
 * asks the meter again (`onRetry`) and the failed attempt is charged what it used (what the provider
 * reported, else its prompt). When the request settles its hold is released and what it used is added: the
 * usage the model client reports (`onUsage`: the API clients and model wrappers call it), else the client's
 * `countTokens` of the prompt and of the answer.
 */

/** What metering needs of a model client. */
interface MeteredModel {
  readonly model?: unknown;
  /** A fallback chain's models. */
  readonly models?: unknown;
  readonly genParams?: { readonly maxNewTokens?: unknown } | undefined;
  countTokens?(input: TokenCountInput): number;
}

/** A metered model request: its params (with `onUsage`, `onRetry` and the completion cap), and how it ends. */
export interface MeteredCall {
  params: Record<string, unknown>;
  /** Counts the answer (a value, or a promise of one, whose failure is counted too); returns what it was given. */
  end(answer: unknown): unknown;
  /**
   * Counts a request that failed, or a stream left early (`partial`: the text it gave): the hold is released
   * and the attempt is charged what it used.
   */
  fail(error?: unknown, partial?: string): void;
}

/** Begins a metered model request of `llm` with `prompt`: refuses it, or returns its params and its ends. */
export function beginModelCall(
  meter: Meter,
  owner: string,
  llm: unknown,
  prompt: ChatMessage[],
  params: object,
): MeteredCall {
  return new MeteredRequest(meter, owner, llm as MeteredModel, prompt, params);
}

/** A model request sent already, counted as it is. */
const ONE_REQUEST = Object.freeze({ modelCalls: 1 });

/** What a refusal is about: the first attempt, another one, or what the request used. */
const FIRST = 0;
const RETRY = 1;
const SETTLED = 2;

class MeteredRequest implements MeteredCall, Asker {
  readonly params: Record<string, unknown>;
  readonly #meter: Meter;
  readonly #llm: MeteredModel;
  readonly #prompt: ChatMessage[];
  /** The model asked now (a fallback chain moves on), and its price. */
  #name: string;
  #price: ModelPrice | undefined;
  /** The highest rates any model of the request may bill (the chain's), for its worst case. */
  readonly #worst: ModelPrice | undefined;
  /** Tokens of the prompt (messages and tool definitions) and of its tool definitions; -1 until counted. */
  #promptTokens = -1;
  #toolTokens = 0;
  /** The worst case each attempt holds. */
  #holdTokens = 0;
  #holdUsd = 0;
  #held = false;
  /** The usage the client reported for the attempt in flight. */
  #reported: TokenUsage | undefined = undefined;
  /** Attempts sent, and whether the last one has not been charged yet. */
  #attempts = 1;
  #pending = true;
  #phase = FIRST;
  readonly #checks: boolean;

  constructor(meter: Meter, owner: string, llm: MeteredModel, prompt: ChatMessage[], params: object) {
    this.#meter = meter;
    this.#llm = llm;
    this.#prompt = prompt;
    const names = modelNames(llm);
    this.#name = names[0] ?? 'unnamed model';
    this.#price = modelPrice(names[0]);
    const tokens = meter.isLimited('tokens');
    const usd = meter.isLimited('usd');
    this.#checks = tokens || usd;
    this.#worst = usd ? worstPrice(owner, names) : this.#price;
    const call = Object.assign({}, params) as Record<string, unknown>;
    call.onUsage = this.#onUsage;
    call.onRetry = this.#onRetry;
    this.params = call;
    if (!this.#checks) {
      this.#pending = false; // nothing is sent if the meter refuses
      meter.beginModel(0, 0, this);
      this.#pending = true;
      return;
    }
    const promptTokens = this.#countPrompt(call.tools as readonly ToolSpec[] | undefined, owner);
    const requested = call.maxNewTokens ?? llm.genParams?.maxNewTokens;
    const asked = typeof requested === 'number' && requested >= 0 ? requested : Number.POSITIVE_INFINITY;
    let cap = asked;
    if (tokens) cap = Math.min(cap, Math.floor(meter.left('tokens') - promptTokens));
    const worst = this.#worst;
    const promptUsd = worst === undefined ? 0 : (promptTokens * worstInputRate(worst)) / 1_000_000;
    if (usd && worst !== undefined) {
      const room = meter.left('usd') - promptUsd;
      if (worst.output > 0) cap = Math.min(cap, Math.floor((room * 1_000_000) / worst.output));
      else if (room < 0) cap = -1;
    }
    // No room for one completion token: the hold of one is refused, by the limit that has no room.
    const completion = cap >= 1 || asked < 1 ? Math.max(0, cap) : 1;
    const bounded = Number.isFinite(completion) ? completion : 0;
    this.#holdTokens = promptTokens + bounded;
    this.#holdUsd = worst === undefined ? 0 : promptUsd + (bounded * worst.output) / 1_000_000;
    this.#pending = false;
    meter.beginModel(this.#holdTokens, this.#holdUsd, this);
    this.#pending = true;
    this.#held = true;
    if (Number.isFinite(cap) && cap < asked) call.maxNewTokens = cap;
  }

  /** The usage the client reports for an attempt. */
  readonly #onUsage = (usage: TokenUsage): void => {
    this.#reported = usage;
  };

  /** Before another attempt: charges the failed one, then asks the meter for the next (a refusal stops it). */
  readonly #onRetry = (next?: RetryNotice): void => {
    if (!this.#pending) return;
    this.#release();
    this.#chargeAttempt(undefined);
    if (typeof next?.model === 'string') {
      this.#name = next.model;
      this.#price = modelPrice(next.model);
    }
    this.#phase = RETRY;
    this.#attempts++;
    if (next?.made === true) {
      // Sent already (a sync client's retry, made in its worker): counted, never refused, nothing to hold.
      this.#meter.add(ONE_REQUEST);
      this.#pending = true;
      return;
    }
    this.#meter.beginModel(this.#holdTokens, this.#holdUsd, this);
    this.#pending = true;
    this.#held = this.#checks;
  };

  end(answer: unknown): unknown {
    if (isThenable(answer)) {
      return answer.then(
        (value) => this.#finish(value),
        (error: unknown) => this.#failed(error),
      );
    }
    return this.#finish(answer);
  }

  #finish(answer: unknown): unknown {
    if (!this.#pending) return answer;
    this.#pending = false;
    this.#release();
    const usage = this.#reported ?? this.#estimate(answerText(answer));
    this.#reported = usage;
    this.#charge(usage);
    this.#phase = SETTLED;
    if (this.#checks || this.#attempts > 1) this.#meter.checkSpent(this);
    return answer;
  }

  #failed(error: unknown): never {
    this.fail(error);
    throw error;
  }

  fail(error?: unknown, partial?: string): void {
    if (!this.#pending) return;
    this.#release();
    this.#chargeAttempt(partial);
    // A client whose retries this request did not see (a sync client's, in its worker) says how many it made.
    const made = error instanceof LLMRequestError ? error.attempts : 0;
    for (; this.#attempts < made; this.#attempts++) {
      this.#meter.add(ONE_REQUEST);
      this.#chargeAttempt(undefined);
    }
  }

  describe(kind: BudgetKind): string {
    const what =
      this.#phase === RETRY ? `another attempt of a model request (${this.#name})` : 'a model request';
    if (kind === 'modelCalls')
      return this.#phase === SETTLED && this.#attempts > 1
        ? `the ${this.#attempts} attempts of a model request`
        : what;
    if (this.#phase === SETTLED) {
      const usage = this.#reported!;
      return `what ${what} used (${usage.promptTokens} prompt and ${usage.completionTokens} completion tokens, more than was held for it)`;
    }
    const tools = this.#toolTokens > 0 ? `, ${this.#toolTokens} of them tool definitions` : '';
    const worst = this.#worst;
    if (kind === 'tokens' || worst === undefined)
      return `${what} (a prompt of ${this.#promptTokens} tokens${tools}, and room for its completion)`;
    const prompt = (this.#promptTokens * worstInputRate(worst)) / 1_000_000;
    return `${what} (a prompt of ${this.#promptTokens} tokens${tools} costing up to $${prompt.toFixed(6)}, and room for its completion)`;
  }

  #release(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#meter.release(this.#holdTokens, this.#holdUsd, 0, 0);
  }

  /**
   * Charges the attempt in flight: what the client reported for it (a stream cut short reports what it knew,
   * which may lag the text it gave), else its prompt; and at least `partial`, the text it gave.
   */
  #chargeAttempt(partial: string | undefined): void {
    this.#pending = false;
    const text = partial === undefined || partial === '' ? undefined : partial;
    let usage = this.#reported ?? this.#estimate(text);
    this.#reported = undefined;
    if (text !== undefined && usage !== undefined) {
      const given = count(this.#llm, text);
      if (given > usage.completionTokens)
        usage = { ...usage, completionTokens: given, totalTokens: usage.promptTokens + given };
    }
    this.#charge(usage);
  }

  #charge(usage: TokenUsage): void {
    const price = this.#price;
    const usd = price === undefined ? undefined : costOfUsage(price, usage);
    this.#meter.endModel(usage.promptTokens, usage.completionTokens, usd, this.#name);
    if (usage.cachedPromptTokens || usage.cacheWriteTokens || usage.reasoningTokens)
      this.#meter.addDetails(usage);
  }

  /** The usage of an attempt the client did not report: the prompt counted here, and `answer` if any. */
  #estimate(answer: string | undefined): TokenUsage {
    const promptTokens = this.#promptTokens >= 0 ? this.#promptTokens : this.#countLate();
    const completionTokens = answer === undefined ? 0 : count(this.#llm, answer);
    return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  }

  /**
   * Counts the prompt after the request, when no limit needed it before: tool definitions the client refused
   * (the request's own error says why) count as none.
   */
  #countLate(): number {
    try {
      return this.#countPrompt(undefined, 'metering');
    } catch {
      this.#toolTokens = 0;
      this.#promptTokens = count(this.#llm, this.#prompt);
      return this.#promptTokens;
    }
  }

  /** Counts the prompt: its messages, and the tool definitions of `tools` (or of the params' own). */
  #countPrompt(tools: readonly ToolSpec[] | undefined, owner: string): number {
    const offered = tools ?? (this.params.tools as readonly ToolSpec[] | undefined);
    this.#toolTokens = offered === undefined ? 0 : toolTokens(this.#llm, offered, owner);
    this.#promptTokens = count(this.#llm, this.#prompt) + this.#toolTokens;
    return this.#promptTokens;
  }
}

/** The names of the models a request may reach: a fallback chain's, else the model's own. */
function modelNames(llm: MeteredModel): string[] {
  if (Array.isArray(llm.models)) return llm.models.map((model) => nameOf(model) ?? 'unnamed model');
  const name = nameOf(llm);
  return name === undefined ? [] : [name];
}

function nameOf(llm: unknown): string | undefined {
  const name = (llm as { model?: unknown } | null | undefined)?.model;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/** The highest rates of the models a request may reach; each needs a price under a usd budget. */
function worstPrice(owner: string, names: readonly string[]): ModelPrice {
  if (names.length === 0) throw unpriced(owner, undefined);
  const worst: ModelPrice = { input: 0, output: 0 };
  for (const name of names) {
    const price = modelPrice(name);
    if (price === undefined) throw unpriced(owner, name);
    worst.input = Math.max(worst.input, price.input);
    worst.output = Math.max(worst.output, price.output);
    worst.cacheWrite = Math.max(worst.cacheWrite ?? 0, price.cacheWrite ?? 0);
  }
  return worst;
}

function unpriced(owner: string, name: string | undefined): ConfigurationError {
  return new ConfigurationError({
    message: `${owner}: a usd budget needs the model's price, and ${name === undefined || name === 'unnamed model' ? 'the model has no name' : `${JSON.stringify(name)} has none`}: set it with setModelPrice(name, { input, output }) (US dollars per million tokens)`,
  });
}

/** The last tool definitions counted for each model, and their tokens (an agent offers the same ones each turn). */
const countedTools = new WeakMap<object, { tools: object; tokens: number }>();

/** The tokens of the tool definitions sent with a request: their JSON, as the model counts text. */
function toolTokens(llm: MeteredModel, tools: readonly ToolSpec[], owner: string): number {
  const prepared = prepareTools(tools, owner);
  if (prepared === undefined) return 0;
  const last = countedTools.get(llm);
  if (last !== undefined && last.tools === prepared.tools) return last.tokens;
  const tokens = count(llm, JSON.stringify(prepared.tools));
  countedTools.set(llm, { tools: prepared.tools, tokens });
  return tokens;
}

/** What a model answered, as text to count: its content and its tool calls. */
export function answerText(answer: unknown): string {
  if (typeof answer === 'string') return answer;
  const reply = answer as { content?: unknown; toolCalls?: ToolCall[] } | null | undefined;
  let text = typeof reply?.content === 'string' ? reply.content : '';
  if (reply?.toolCalls !== undefined && reply.toolCalls.length > 0) text += JSON.stringify(reply.toolCalls);
  return text;
}

function count(model: MeteredModel, input: TokenCountInput): number {
  if (typeof model.countTokens === 'function') {
    try {
      return model.countTokens(input);
    } catch {
      // a model whose counting fails is estimated like one without it
    }
  }
  return countTokens(input, { model: undefined });
}
