import { LagentError, type LagentErrorOptions } from '../../schema/errors';

/**
 * Redis could not be reached, or the connection was lost while a call waited for its job. A call that fails
 * this way after its job was queued may still run later (jobs are at-least-once); its turn is then committed
 * whole, never half. Aborts and timeouts are not this error: they reject with the signal's reason and a
 * `TimeoutError`.
 */
export class QueueConnectionError extends LagentError {
  override readonly name: string = 'QueueConnectionError';
  /** The job the call was waiting for, when it had been queued. */
  readonly jobId: string | undefined;

  constructor(options: LagentErrorOptions & { jobId?: string | undefined }) {
    super(options);
    this.jobId = options.jobId;
  }
}

/**
 * The agent on the worker failed the call (or the job failed in the queue, e.g. it stalled more often than
 * `maxStalledCount` allows). The session was left as it was before the call. `remoteName` is the error's
 * `name` on the worker (`'ParseError'`, `'LLMRequestError'`, ...).
 */
export class RemoteAgentError extends LagentError {
  override readonly name: string = 'RemoteAgentError';
  readonly jobId: string;
  readonly remoteName: string;

  constructor(options: LagentErrorOptions & { jobId: string; remoteName: string }) {
    super(options);
    this.jobId = options.jobId;
    this.remoteName = options.remoteName;
  }
}
