import { AgentBase } from '../agents/agent-base';
import { type Budget, checkBudget } from '../agents/interceptors/budget/meter';
import { DURABLE } from '../agents/interceptors/durable/journal';
import { ConfigurationError, ValidationError } from '../schema/errors';
import { isPlainObject } from '../utils/is';

/*
 * What remote callers may set on the calls a server runs (HTTPAgentServer's request bodies, QueueAgentWorker's
 * jobs). The server decides, never the body: a caller may name its call (`call_id`), limit what it spends
 * (`budget`, within the server's ceiling) and set the generation parameters the operator allows (within the
 * bounds the operator sets). Everything else a body carries — `model`, `messages`, `tools`, `tool_choice`,
 * `extra_body`, `n`, `logit_bias`, unknown keys — is ignored: the model request stays the operator's.
 */

/** The range a numeric generation parameter is kept in; a missing end is the parameter's default one. */
export interface NumberBounds {
  min?: number | undefined;
  max?: number | undefined;
}

/** How many stop words a caller may give, and how long each may be. */
export interface StopWordBounds {
  /** @default 16 */
  maxCount?: number | undefined;
  /** In characters. @default 256 */
  maxLength?: number | undefined;
}

/**
 * The generation parameters callers may set, each `true` (within its default bounds) or its own bounds. A
 * parameter not listed is ignored when a caller sends it. Default bounds: `maxNewTokens` 1 to 4,096,
 * `temperature` 0 to 2, `topP` 0 to 1, `topK` 1 to 1,000, `repetitionPenalty` 0.5 to 2, `stopWords` at most 16
 * of at most 256 characters.
 */
export interface GenerationBounds {
  maxNewTokens?: boolean | NumberBounds | undefined;
  temperature?: boolean | NumberBounds | undefined;
  topP?: boolean | NumberBounds | undefined;
  topK?: boolean | NumberBounds | undefined;
  repetitionPenalty?: boolean | NumberBounds | undefined;
  stopWords?: boolean | StopWordBounds | undefined;
}

/**
 * What remote callers may set on a call (`callerOptions` of `HTTPAgentServer`, `QueueAgentWorker` and
 * `UIServer`). Whatever the policy, callers always may choose the session, name the call (`call_id`, or the
 * `Idempotency-Key` header over HTTP), limit what it spends (`budget`, within `maxBudget`) and ask it to stop
 * before each tool call for their own tool guardrails (`ask_before_tools`); they never set
 * the model, the messages sent to it, tools, `extra_body` or anything not allowed here: such keys are ignored
 * (the HTTP answer names them in a `Lagent-Ignored-Options` header).
 *
 * @example
 * new HTTPAgentServer({
 *   agent,
 *   callerOptions: { generation: { maxNewTokens: { max: 2_048 }, temperature: true }, maxBudget: { tokens: 50_000 } },
 * });
 */
export interface CallerOptionsPolicy {
  /** Generation parameters callers may set, with their bounds. @default none */
  generation?: GenerationBounds | undefined;
  /**
   * A numeric parameter outside its bounds is kept at the nearest bound (`'clamp'`) or refused (`'refuse'`:
   * HTTP 422, a failed job). Stop words past their bounds are always refused.
   * @default 'clamp'
   */
  outOfBounds?: 'clamp' | 'refuse' | undefined;
  /**
   * The most one call may spend. Every call runs within it, a caller's `budget` included: each of its limits
   * is kept at or under this one.
   * @default no ceiling (a caller's own budget applies as it is)
   */
  maxBudget?: Budget | undefined;
  /**
   * Names (camelCase) of other call options callers may set, passed to the agent as they come (JSON values):
   * options a `forward` of yours reads. The model's own options (`model`, `messages`, `tools`, `toolChoice`,
   * `extraBody`, ...) and the local ones (`signal`, `durable`, ...) cannot be listed.
   * @default none
   */
  passThrough?: readonly string[] | undefined;
}

type NumericName = 'maxNewTokens' | 'temperature' | 'topP' | 'topK' | 'repetitionPenalty';

interface NumericRule {
  readonly name: NumericName;
  readonly min: number;
  readonly max: number;
  readonly integer: boolean;
}

const NUMERIC_DEFAULTS: Readonly<Record<NumericName, { min: number; max: number; integer: boolean }>> = {
  maxNewTokens: { min: 1, max: 4_096, integer: true },
  temperature: { min: 0, max: 2, integer: false },
  topP: { min: 0, max: 1, integer: false },
  topK: { min: 1, max: 1_000, integer: true },
  repetitionPenalty: { min: 0.5, max: 2, integer: false },
};
const NUMERIC_NAMES = Object.keys(NUMERIC_DEFAULTS) as NumericName[];
const STOP_WORD_DEFAULTS = { maxCount: 16, maxLength: 256 };

/** The longest `call_id` / `Idempotency-Key`, in characters. */
export const MAX_CALL_ID_LENGTH = 256;

/**
 * Options a caller can never be allowed to set: the model's identity, input and tools (the operator's), and
 * what belongs to the serving process. `passThrough` refuses them.
 */
const NEVER_PASSED = new Set([
  'model',
  'messages',
  'prompt',
  'system',
  'template',
  'tools',
  'toolChoice',
  'parallelToolCalls',
  'extraBody',
  'n',
  'logitBias',
  'stream',
  'llm',
  'signal',
  'timeout',
  'idleTimeout',
  'sessionId',
  // Whose memory a call reads (semantic recall, working memory): the server's `resourceId` option sets it.
  'resourceId',
  'callId',
  'budget',
  'askBeforeTools',
  'clientTools',
  'durable',
  'onUsage',
  'memory',
  'hooks',
  'interceptors',
  'constructor',
  'prototype',
  ...NUMERIC_NAMES,
  'stopWords',
]);

/** Errors of a caller's options that are well-formed but not accepted: answered 422 rather than 400. */
const UNPROCESSABLE = new WeakSet<object>();

/** Whether a {@link ValidationError} of {@link CallerOptions.read} refuses a value (422) rather than its form (400). */
export function isUnprocessable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && UNPROCESSABLE.has(error);
}

function unprocessable(field: string, message: string): ValidationError {
  const error = new ValidationError({ field, message });
  UNPROCESSABLE.add(error);
  return error;
}

/** `max_new_tokens` -> `maxNewTokens` (a key without underscores stays as it is). */
export function camelKey(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
}

/** What a caller's options came to: the options the call gets, and the keys that were ignored (as sent). */
export interface ReadOptions {
  options: Record<string, unknown>;
  ignored: string[];
}

/** A {@link CallerOptionsPolicy}, checked once, applied to each request or job. */
export class CallerOptions {
  readonly #numeric: readonly NumericRule[];
  readonly #stopWords: { maxCount: number; maxLength: number } | undefined;
  readonly #clamp: boolean;
  readonly #maxBudget: Budget | undefined;
  readonly #passThrough: ReadonlySet<string>;

  constructor(owner: string, policy: CallerOptionsPolicy | undefined) {
    const where = `${owner}: callerOptions`;
    if (policy !== undefined && !isPlainObject(policy)) {
      throw new ConfigurationError({
        message: `${where} must be an object { generation?, outOfBounds?, maxBudget?, passThrough? }`,
      });
    }
    const given = policy ?? {};
    for (const key of Object.keys(given)) {
      if (!['generation', 'outOfBounds', 'maxBudget', 'passThrough'].includes(key)) {
        throw new ConfigurationError({
          message: `${where} has an unknown key ${JSON.stringify(key)} (known: generation, outOfBounds, maxBudget, passThrough)`,
        });
      }
    }
    const generation = given.generation ?? {};
    if (!isPlainObject(generation)) {
      throw new ConfigurationError({ message: `${where}.generation must be an object of parameters` });
    }
    const numeric: NumericRule[] = [];
    let stopWords: { maxCount: number; maxLength: number } | undefined;
    for (const [name, rule] of Object.entries(generation)) {
      if (rule === undefined || rule === false) continue;
      if (name === 'stopWords') {
        stopWords = stopWordRule(`${where}.generation.stopWords`, rule);
        continue;
      }
      if (!Object.hasOwn(NUMERIC_DEFAULTS, name)) {
        throw new ConfigurationError({
          message: `${where}.generation has an unknown parameter ${JSON.stringify(name)} (known: ${[...NUMERIC_NAMES, 'stopWords'].join(', ')})`,
        });
      }
      numeric.push(numericRule(`${where}.generation.${name}`, name as NumericName, rule));
    }
    const outOfBounds = given.outOfBounds ?? 'clamp';
    if (outOfBounds !== 'clamp' && outOfBounds !== 'refuse') {
      throw new ConfigurationError({
        message: `${where}.outOfBounds must be 'clamp' or 'refuse', got ${String(outOfBounds)}`,
      });
    }
    const passThrough = given.passThrough ?? [];
    if (!Array.isArray(passThrough)) {
      throw new ConfigurationError({ message: `${where}.passThrough must be an array of option names` });
    }
    for (const name of passThrough) {
      if (typeof name !== 'string' || !/^[A-Za-z][A-Za-z0-9]*$/.test(name)) {
        throw new ConfigurationError({
          message: `${where}.passThrough names options in camelCase, got ${JSON.stringify(name)}`,
        });
      }
      if (NEVER_PASSED.has(name)) {
        throw new ConfigurationError({
          message: `${where}.passThrough cannot include ${JSON.stringify(name)}: ${
            NUMERIC_NAMES.includes(name as NumericName) || name === 'stopWords'
              ? 'allow it in generation, with bounds'
              : name === 'budget' || name === 'callId' || name === 'askBeforeTools'
                ? 'callers always may set it (the budget within maxBudget)'
                : 'it is the operator’s (or the serving process’s) alone'
          }`,
        });
      }
    }
    this.#numeric = numeric;
    this.#stopWords = stopWords;
    this.#clamp = outOfBounds === 'clamp';
    this.#maxBudget = given.maxBudget === undefined ? undefined : { ...checkBudget(where, given.maxBudget) };
    this.#passThrough = new Set(passThrough);
  }

  /**
   * The call options of a caller's `kwargs` (a request body without `message` and `session_id`, or a job's
   * kwargs; keys in snake_case or camelCase). Throws a {@link ValidationError}: for a value of the wrong type
   * or form (HTTP 400), or, marked {@link isUnprocessable}, for a value the policy refuses (HTTP 422).
   */
  read(kwargs: Readonly<Record<string, unknown>>): ReadOptions {
    const options: Record<string, unknown> = {};
    const ignored: string[] = [];
    const seen = new Map<string, string>();
    for (const key of Object.keys(kwargs)) {
      const value = kwargs[key];
      const name = camelKey(key);
      const earlier = seen.get(name);
      if (earlier !== undefined) {
        throw new ValidationError({
          field: key,
          message: `"${earlier}" and "${key}" are the same option; give it once`,
        });
      }
      seen.set(name, key);
      if (value === undefined || value === null) continue;
      if (name === 'callId') options.callId = checkCallId(key, value);
      else if (name === 'askBeforeTools') {
        // A caller with tool guardrails asks the call to stop before each tool call: it only restricts.
        if (typeof value !== 'boolean')
          throw new ValidationError({ field: key, message: `"${key}" must be true or false` });
        if (value) options.askBeforeTools = true;
      } else if (name === 'budget') options.budget = readBudget(key, value);
      else if (Object.hasOwn(NUMERIC_DEFAULTS, name)) {
        const number = checkNumber(key, name as NumericName, value);
        const rule = this.#numeric.find((candidate) => candidate.name === name);
        if (rule === undefined) ignored.push(key);
        else options[name] = this.#bound(key, rule, number);
      } else if (name === 'stopWords') {
        const words = checkStopWords(key, value);
        if (this.#stopWords === undefined) ignored.push(key);
        else options.stopWords = boundStopWords(key, this.#stopWords, words);
      } else if (this.#passThrough.has(name)) options[name] = value;
      else ignored.push(key);
    }
    if (this.#maxBudget !== undefined) {
      options.budget = withinCeiling(options.budget as Budget | undefined, this.#maxBudget);
    }
    return { options, ignored };
  }

  #bound(key: string, rule: NumericRule, value: number): number {
    if (value >= rule.min && value <= rule.max) return value;
    if (!this.#clamp) {
      throw unprocessable(key, `"${key}" is ${value}; this server takes ${rule.min} to ${rule.max}`);
    }
    return Math.min(rule.max, Math.max(rule.min, value));
  }
}

function numericRule(where: string, name: NumericName, rule: unknown): NumericRule {
  const defaults = NUMERIC_DEFAULTS[name];
  if (rule === true) return { name, ...defaults };
  if (!isPlainObject(rule)) {
    throw new ConfigurationError({ message: `${where} must be true or { min?, max? }` });
  }
  const min = rule.min ?? defaults.min;
  const max = rule.max ?? defaults.max;
  for (const [end, value] of [
    ['min', min],
    ['max', max],
  ] as const) {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new ConfigurationError({
        message: `${where}.${end} must be a finite number, got ${String(value)}`,
      });
    }
  }
  if ((min as number) > (max as number)) {
    throw new ConfigurationError({ message: `${where}: min (${min}) is above max (${max})` });
  }
  return { name, min: min as number, max: max as number, integer: defaults.integer };
}

function stopWordRule(where: string, rule: unknown): { maxCount: number; maxLength: number } {
  if (rule === true) return { ...STOP_WORD_DEFAULTS };
  if (!isPlainObject(rule)) {
    throw new ConfigurationError({ message: `${where} must be true or { maxCount?, maxLength? }` });
  }
  const bounds = {
    maxCount: rule.maxCount ?? STOP_WORD_DEFAULTS.maxCount,
    maxLength: rule.maxLength ?? STOP_WORD_DEFAULTS.maxLength,
  };
  for (const [key, value] of Object.entries(bounds)) {
    if (!Number.isSafeInteger(value) || (value as number) < 1) {
      throw new ConfigurationError({
        message: `${where}.${key} must be a positive whole number, got ${String(value)}`,
      });
    }
  }
  return bounds as { maxCount: number; maxLength: number };
}

function checkNumber(key: string, name: NumericName, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ValidationError({ field: key, message: `"${key}" must be a number` });
  }
  if (NUMERIC_DEFAULTS[name].integer && !Number.isInteger(value)) {
    throw new ValidationError({ field: key, message: `"${key}" must be a whole number` });
  }
  return value;
}

function checkStopWords(key: string, value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((word) => typeof word === 'string')) return value as string[];
  throw new ValidationError({ field: key, message: `"${key}" must be a string or an array of strings` });
}

function boundStopWords(
  key: string,
  bounds: { maxCount: number; maxLength: number },
  words: string[],
): string[] {
  if (words.length > bounds.maxCount) {
    throw unprocessable(
      key,
      `"${key}" has ${words.length} words; this server takes at most ${bounds.maxCount}`,
    );
  }
  if (words.some((word) => word.length > bounds.maxLength)) {
    throw unprocessable(
      key,
      `"${key}" has a word over ${bounds.maxLength} characters, the most this server takes`,
    );
  }
  return [...words];
}

/**
 * Checks a call id given by a caller (`call_id`, `Idempotency-Key`): a string of 1 to {@link MAX_CALL_ID_LENGTH}
 * characters, none of them a control character. Throws a {@link ValidationError} naming `field` otherwise.
 */
export function checkCallId(field: string, value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_CALL_ID_LENGTH ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
    /[\u0000-\u001f\u007f]/.test(value)
  ) {
    throw new ValidationError({
      field,
      message: `"${field}" must be a string of 1 to ${MAX_CALL_ID_LENGTH} characters without control characters`,
    });
  }
  return value;
}

/** A caller's budget: camelCase or snake_case limits, checked as the `budget` call option is. */
function readBudget(key: string, value: unknown): Budget {
  if (!isPlainObject(value)) {
    throw new ValidationError({
      field: key,
      message: `"${key}" must be an object { tokens?, usd?, model_calls?, tool_calls? }`,
    });
  }
  const budget: Record<string, unknown> = {};
  for (const limit of Object.keys(value)) {
    const name = camelKey(limit);
    if (Object.hasOwn(budget, name)) {
      throw new ValidationError({ field: `${key}.${limit}`, message: `"${key}" gives ${name} twice` });
    }
    if (value[limit] !== undefined && value[limit] !== null) budget[name] = value[limit];
  }
  try {
    checkBudget('the request', budget);
  } catch (error) {
    throw new ValidationError({ field: key, message: (error as Error).message, cause: error });
  }
  return budget as Budget;
}

/** Each limit of the caller's budget kept at or under the ceiling's; the ceiling's own limits always apply. */
function withinCeiling(budget: Budget | undefined, ceiling: Budget): Budget {
  const result: Record<string, number> = { ...ceiling } as Record<string, number>;
  if (budget === undefined) return result as Budget;
  for (const [kind, limit] of Object.entries(budget)) {
    if (typeof limit !== 'number') continue;
    const most = result[kind];
    result[kind] = most === undefined ? limit : Math.min(limit, most);
  }
  return result as Budget;
}

/**
 * Whether an agent can replay a call by its id: an agent of lagent-ts with a durable store somewhere in its
 * tree. An agent of another kind (a client of a remote agent, one of another copy of lagent-ts) is given the
 * id and decides.
 */
export function replaysCalls(agent: object): boolean {
  if (!(agent instanceof AgentBase)) return true;
  for (const [, node] of agent.namedAgents()) {
    if (node instanceof AgentBase && node[DURABLE] !== undefined) return true;
  }
  return false;
}

/** The refusal of a call id given to an agent that cannot replay calls (see {@link replaysCalls}). */
export function callIdNotHonoured(): ValidationError {
  return unprocessable(
    'call_id',
    'this agent cannot replay a call (no agent of its tree is durable), so it cannot honour a call id: a retry would run the call again. Send the call without a call id (Idempotency-Key, call_id)',
  );
}
