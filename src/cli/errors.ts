/**
 * A mistake of the person running `lagent` (a missing file, a bad flag value, an agent module without a default
 * export): the command prints its message, without a stack, and exits non-zero.
 */
export class CliError extends Error {
  override readonly name = 'CliError' as const;
  /** The process exit code. @default 1 */
  readonly exitCode: number;

  constructor(message: string, options: { exitCode?: number | undefined; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = options.exitCode ?? 1;
  }
}

/** The message of anything thrown, for one line on stderr. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
