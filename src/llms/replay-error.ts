import { LagentError, type LagentErrorOptions } from '../schema/errors';

/**
 * A `ReplayLLM` was asked something its recording does not hold (or holds fewer times than asked). `file` is
 * the recording; `closest` says how the nearest recorded request differs from this one, when there is one.
 */
export class ReplayMissError extends LagentError {
  override readonly name: string = 'ReplayMissError';
  readonly file: string;
  readonly closest: string | undefined;

  constructor(options: LagentErrorOptions & { file: string; closest?: string | undefined }) {
    super(options);
    this.file = options.file;
    this.closest = options.closest;
  }
}
