import { errorMessage } from '../utils/text';
/** Options every lagent-ts error takes: a message and the standard `cause`. */
export interface LagentErrorOptions {
  message: string;
  cause?: unknown | undefined;
}

const MARKER = Symbol.for('lagent-ts.error');

/**
 * Base class of every error lagent-ts throws. `name` doubles as a stable code, so
 * `error.name === 'ParseError'` works across bundles and realms where `instanceof` may not.
 */
export class LagentError extends Error {
  override readonly name: string = 'LagentError';
  readonly [MARKER] = true;

  constructor({ message, cause }: LagentErrorOptions) {
    super(message, cause === undefined ? undefined : { cause });
  }

  /** True for any lagent-ts error, even one from another copy of the package. */
  static isInstance(error: unknown): error is LagentError {
    return typeof error === 'object' && error !== null && MARKER in error;
  }
}

/** The caller configured or called something wrongly (a programming error, never the model's fault). */
export class ConfigurationError extends LagentError {
  override readonly name: string = 'ConfigurationError';
}

/** Input data did not have the expected shape; `field` names the offending field (dotted path). */
export class ValidationError extends LagentError {
  override readonly name: string = 'ValidationError';
  readonly field: string;

  constructor(options: LagentErrorOptions & { field: string }) {
    super(options);
    this.field = options.field;
  }
}

/** The model produced output that could not be used. */
export class ModelOutputError extends LagentError {
  override readonly name: string = 'ModelOutputError';
}

/** An output parser could not parse the model's text; `text` is the raw output, kept for the caller. */
export class ParseError extends ModelOutputError {
  override readonly name: string = 'ParseError';
  readonly text: string;

  constructor(options: LagentErrorOptions & { text: string }) {
    super(options);
    this.text = options.text;
  }
}

/** An LLM request failed for good (not retryable, or retries exhausted). */
export class LLMRequestError extends LagentError {
  override readonly name: string = 'LLMRequestError';
  /** HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** Whether a later attempt might succeed (429, 5xx, connection failures). */
  readonly retryable: boolean;
  /** How many attempts were made. */
  readonly attempts: number;

  constructor(
    options: LagentErrorOptions & {
      status?: number | undefined;
      retryable?: boolean | undefined;
      attempts?: number | undefined;
    },
  ) {
    super(options);
    this.status = options.status;
    this.retryable = options.retryable ?? false;
    this.attempts = options.attempts ?? 1;
  }
}

/** A hook threw (or rejected); `hookName` and `stage` say which and where. The original error is `cause`. */
export class HookError extends LagentError {
  override readonly name: string = 'HookError';
  readonly hookName: string;
  readonly stage: 'beforeAgent' | 'afterAgent' | 'beforeAction' | 'afterAction';

  constructor(options: LagentErrorOptions & { hookName: string; stage: HookError['stage'] }) {
    super(options);
    this.hookName = options.hookName;
    this.stage = options.stage;
  }
}

/** `loadStateDict` was given a dict that does not fit the agent tree; `key` names the problem key. */
export class StateDictError extends LagentError {
  override readonly name: string = 'StateDictError';
  readonly key: string;

  constructor(options: LagentErrorOptions & { key: string }) {
    super(options);
    this.key = options.key;
  }
}

/** Something took longer than its allowed time. */
export class TimeoutError extends LagentError {
  override readonly name: string = 'TimeoutError';
  readonly timeoutMs: number;

  constructor(options: LagentErrorOptions & { timeoutMs: number }) {
    super(options);
    this.timeoutMs = options.timeoutMs;
  }
}

/**
 * The sync bridge (a blocking call into a worker thread) failed: the worker could not start or exited,
 * or the call cannot block on this thread. Errors thrown by the bridged object itself cross the bridge
 * with their own class instead.
 */
export class SyncBridgeError extends LagentError {
  override readonly name: string = 'SyncBridgeError';
}

/**
 * A prompt template (a `PromptTemplate` or a parser's `template`) is malformed, or was formatted with a
 * missing or unknown variable; `variable` names it (empty when the template text itself is at fault).
 */
export class TemplateError extends ConfigurationError {
  override readonly name: string = 'TemplateError';
  readonly variable: string;

  constructor(options: LagentErrorOptions & { variable: string }) {
    super(options);
    this.variable = options.variable;
  }
}

/**
 * The error for an optional peer that could not be loaded: what to install, for which feature, and why the
 * import failed (also kept as `cause`). Every subpath says it the same way.
 *
 * @example missingPeer(['fastify'], 'HTTPAgentServer', error)
 * // install fastify to use HTTPAgentServer (npm install fastify): Cannot find package 'fastify' ...
 */
export function missingPeer(
  packages: readonly string[],
  feature: string,
  cause: unknown,
): ConfigurationError {
  const reason = errorMessage(cause);
  return new ConfigurationError({
    message: `install ${packages.join(' and ')} to use ${feature} (npm install ${packages.join(' ')}): ${reason}`,
    cause,
  });
}

/**
 * A session store failed: it could not be reached, refused an operation, or holds a value it cannot read.
 * `store` describes the store, `operation` names the method, `sessionId` the session when there is one.
 */
export class StoreError extends LagentError {
  override readonly name: string = 'StoreError';
  readonly store: string;
  readonly operation: string;
  readonly sessionId: string | undefined;

  constructor(
    options: LagentErrorOptions & { store: string; operation: string; sessionId?: string | undefined },
  ) {
    super(options);
    this.store = options.store;
    this.operation = options.operation;
    this.sessionId = options.sessionId;
  }
}

/**
 * A turn could not be committed because the session moved on: another owner took its lease (this one's
 * expired) or committed first. Nothing was written; the call that made the turn fails and is taken back.
 */
export class StoreConflictError extends StoreError {
  override readonly name: string = 'StoreConflictError';
}

/**
 * A durable call was replayed and its `forward` made a different call than the journal recorded at that
 * place (another kind, name or input): the journal cannot be trusted for it. Names both steps.
 */
export class NonDeterminismError extends LagentError {
  override readonly name: string = 'NonDeterminismError';
  readonly callId: string;
  /** The step's key in the journal. */
  readonly step: string;

  constructor(options: LagentErrorOptions & { callId: string; step: string }) {
    super(options);
    this.callId = options.callId;
    this.step = options.step;
  }
}

/** The limits a `budget` call option may set. */
export type BudgetKind = 'tokens' | 'usd' | 'modelCalls' | 'toolCalls';

/**
 * A call's `budget` would be passed: the model or tool call that would pass it was not made. `budget` says
 * which limit, `spent` what the budgeted call had spent before it (with what the refused call would add, for
 * `tokens` and `usd`: the prompt alone), `limit` the limit.
 */
export class BudgetExceededError extends LagentError {
  override readonly name: string = 'BudgetExceededError';
  readonly budget: BudgetKind;
  readonly spent: number;
  readonly limit: number;

  constructor(options: LagentErrorOptions & { budget: BudgetKind; spent: number; limit: number }) {
    super(options);
    this.budget = options.budget;
    this.spent = options.spent;
    this.limit = options.limit;
  }
}

/** A guardrail's check returned a reason: the call was stopped and taken back. */
export class GuardrailTripped extends LagentError {
  override readonly name: string = 'GuardrailTripped';
  /** The guardrail's name. */
  readonly guardrail: string;
  readonly reason: string;

  constructor(options: LagentErrorOptions & { guardrail: string; reason: string }) {
    super(options);
    this.guardrail = options.guardrail;
    this.reason = options.reason;
  }
}

/**
 * A run (a call started in the background: `agent.start`) ended without a reply: it failed, or it was cancelled
 * (`status`). `errorName` is the class name of the error it failed with, where that is known (a run another
 * process ran: only its log says what happened).
 */
export class RunFailedError extends LagentError {
  override readonly name: string = 'RunFailedError';
  readonly runId: string;
  readonly status: 'failed' | 'cancelled';
  readonly errorName: string;

  constructor(
    options: LagentErrorOptions & {
      runId: string;
      status: 'failed' | 'cancelled';
      errorName?: string | undefined;
    },
  ) {
    super(options);
    this.runId = options.runId;
    this.status = options.status;
    this.errorName = options.errorName ?? 'Error';
  }
}
