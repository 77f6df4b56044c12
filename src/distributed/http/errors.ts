import { LagentError, type LagentErrorOptions } from '../../schema/errors';

/**
 * A call to a served agent failed: the server answered with an error status (`status`, and the JSON error it
 * sent as `body`), or, with `status` undefined, it could not be reached or cut the connection (after the
 * client's retries). Aborts and timeouts are not this error: they reject with the signal's reason and a
 * `TimeoutError`.
 */
export class HTTPAgentError extends LagentError {
  override readonly name: string = 'HTTPAgentError';
  /** The HTTP status the server answered with; undefined when no answer came. */
  readonly status: number | undefined;
  /** The server's error body (`{ detail, error }` from an `HTTPAgentServer`), when it sent one. */
  readonly body: unknown;
  /** The URL of the failed request. */
  readonly url: string;

  constructor(
    options: LagentErrorOptions & { status?: number | undefined; body?: unknown; url?: string | undefined },
  ) {
    super(options);
    this.status = options.status;
    this.body = options.body;
    this.url = options.url ?? '';
  }
}
